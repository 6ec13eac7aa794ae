"""`resources.pools`: DigenRL's rollout and trainer pools, each with its own device count and GPU model."""

from __future__ import annotations

from typing import Any

import pytest

from trainer.spec import parse_spec, spec_errors

POOLS = {"rollout": {"devices": 1, "gpu_model": "L40S"}, "trainer": {"devices": 2, "gpu_model": "H100"}}


def digenrl(resources: dict[str, Any], executor: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "executor": {"name": "digenrl", **(executor or {})},
        "algorithm": {"prompts_per_step": 2},
        "resources": {"device_type": "cuda", **resources},
    }


def refused(data: dict[str, Any]) -> list[dict[str, str]]:
    with pytest.raises(ValueError) as info:
        parse_spec(data)
    return spec_errors(info.value)


def test_pools_set_the_world_size_and_the_rollout_ranks():
    spec = parse_spec(digenrl({"pools": POOLS}))

    assert (spec.resources.devices, spec.resources.nodes, spec.world_size) == (3, 1, 3)
    assert spec.executor.rollout_devices == 1


def test_a_stored_pool_spec_validates_again_unchanged():
    stored = parse_spec(digenrl({"pools": POOLS})).model_dump(mode="json")

    assert parse_spec(stored).model_dump(mode="json") == stored


@pytest.mark.parametrize(
    ("resources", "executor", "field"),
    [
        ({"devices": 2}, {}, "resources.devices"),
        ({"nodes": 2}, {}, "resources.nodes"),
        ({"gpu_model": "H100"}, {}, "resources.gpu_model"),
        ({}, {"rollout_devices": 2}, "executor.rollout_devices"),
    ],
)
def test_the_flat_form_must_agree_with_the_pools(resources: dict, executor: dict, field: str):
    errors = refused(digenrl({"pools": POOLS, **resources}, executor))

    assert [e["field"] for e in errors] == [field]


def test_only_digenrl_has_pools():
    data = digenrl({"pools": POOLS})
    data["executor"] = {"name": "native"}

    message = "only executor 'digenrl' has a rollout and a trainer pool, not 'native'"
    assert {"field": "resources.pools", "message": message} in refused(data)


def test_both_pools_are_required_with_at_least_one_device_each():
    assert [e["field"] for e in refused(digenrl({"pools": {"rollout": POOLS["rollout"]}}))] == [
        "resources.pools.trainer"
    ]
    empty = {"rollout": {"devices": 0}, "trainer": POOLS["trainer"]}
    assert [e["field"] for e in refused(digenrl({"pools": empty}))] == ["resources.pools.rollout.devices"]


def test_the_simple_form_still_works_without_pools():
    spec = parse_spec(digenrl({"devices": 3, "gpu_model": "H100"}, {"rollout_devices": 1}))

    assert (spec.resources.pools, spec.resources.gpu_model, spec.world_size) == (None, "H100", 3)
