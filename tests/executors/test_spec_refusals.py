"""Executor/algorithm/resources pairs that are not exact or cannot run are refused by the spec,
with the field named."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tests.trainer.conftest import tiny_spec
from trainer.spec import (
    EXECUTORS,
    OPTION_MODELS,
    JaggOptions,
    LeanReweightOptions,
    parse_spec,
    retained_graph_bound,
    spec_errors,
)


def refused_fields(**sections: Any) -> list[str]:
    """The fields a refused spec's errors name (every cross-field problem is reported at once)."""
    with pytest.raises(ValidationError) as caught:
        parse_spec(tiny_spec(**sections))
    return [error["field"] for error in spec_errors(caught.value)]


@pytest.mark.parametrize(
    ("sections", "field"),
    [
        ({"executor": {"name": "lean_retain"}, "algorithm": {"inner_epochs": 2}}, "algorithm.inner_epochs"),
        ({"executor": {"name": "lean_reweight"}, "algorithm": {"inner_epochs": 2}}, "algorithm.inner_epochs"),
        ({"executor": {"name": "lean_reweight"}, "algorithm": {"kl_beta": 0.04}}, "algorithm.kl_beta"),
        ({"executor": {"name": "lean_reweight", "buffer_regime": "per_rank"}}, "executor.buffer_regime"),
        ({"executor": {"name": "lean_retain"}, "resources": {"devices": 3}}, "algorithm.group_size"),
        ({"executor": {"name": "lean_retain", "max_retained_graphs": 8}}, "executor.max_retained_graphs"),
        ({"executor": {"name": "jagg"}, "algorithm": {"name": "flash_grpo"}}, "executor.name"),
        ({"executor": {"name": "jagg", "group_width": 8}}, "executor.group_width"),
        ({"executor": {"name": "digenrl"}}, "resources.devices"),
        (
            {"executor": {"name": "digenrl", "rollout_devices": 2}, "resources": {"devices": 2}},
            "executor.rollout_devices",
        ),
        ({"executor": {"name": "native", "buffer_regime": "affine"}}, "executor.buffer_regime"),
        ({"executor": {"name": "jagg", "after_first_update": "native"}}, "executor.after_first_update"),
        ({"executor": {"name": ["jagg"]}}, "executor.name"),
    ],
)
def test_unsupported_pair_is_refused_naming_the_field(sections: dict[str, Any], field: str) -> None:
    assert field in refused_fields(**sections)


def test_reweight_with_kl_is_accepted_with_the_extra_vjp() -> None:
    spec = parse_spec(tiny_spec(executor={"name": "lean_reweight", "kl": "extra_vjp"}, algorithm={"kl_beta": 0.04}))
    assert spec.executor.kl == "extra_vjp"


def test_memory_guard_accepts_a_declared_fallback_and_counts_local_graphs() -> None:
    guarded = {"name": "lean_retain", "max_retained_graphs": 8, "on_memory_guard": "native"}
    spec = parse_spec(tiny_spec(executor=guarded))
    assert retained_graph_bound(spec) == 8 * 7  # 2 prompts x 4 samples, K = T - 1 = 7


def test_an_option_of_another_executor_is_refused_naming_the_field_and_both_executors() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_spec(tiny_spec(executor={"name": "lean_retain", "group_width": 4}))
    (error,) = spec_errors(caught.value)
    assert error["field"] == "executor.group_width"
    assert "'lean_retain'" in error["message"] and "jagg" in error["message"]


def test_an_out_of_range_option_is_named_without_the_executor_tag() -> None:
    assert refused_fields(executor={"name": "jagg", "jagg_frac": 1.5}) == ["executor.jagg_frac"]


def test_an_unknown_executor_is_refused_listing_every_executor() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_spec(tiny_spec(executor={"name": "warp"}))
    (error,) = spec_errors(caught.value)
    assert error["field"] == "executor.name"
    assert all(name in error["message"] for name in EXECUTORS)


def test_each_option_has_its_default_when_only_the_executor_is_named() -> None:
    spec = parse_spec(tiny_spec(executor={"name": "jagg"}))
    assert isinstance(spec.executor, JaggOptions)
    assert (spec.executor.group_width, spec.executor.jagg_frac) == (4, 0.6)


def test_a_spec_stored_with_every_executor_option_as_null_still_validates() -> None:
    legacy = {
        "name": "lean_reweight",
        **dict.fromkeys(("max_retained_graphs", "on_memory_guard", "after_first_update", "on_adv_clip", "kl")),
        **dict.fromkeys(("buffer_regime", "group_width", "jagg_frac", "cosine_warn", "probe_every")),
        **dict.fromkeys(("rollout_devices", "max_staleness", "timestep_batch", "trainer_assisted")),
    }
    spec = parse_spec(tiny_spec(executor=legacy))
    assert isinstance(spec.executor, LeanReweightOptions) and spec.executor.on_adv_clip == "fail"


def test_the_trainer_registry_has_a_class_for_each_executor_the_spec_names() -> None:
    from trainer.executors.registry import EXECUTOR_CLASSES

    assert tuple(EXECUTOR_CLASSES) == EXECUTORS
    assert all(cls.options_model is OPTION_MODELS[name] for name, cls in EXECUTOR_CLASSES.items())
