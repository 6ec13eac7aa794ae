"""The forward-process family in the spec: each algorithm's upstream defaults, the other family's options
refused naming the field, β and the advantage clip kept in range, and the executors that need trajectory
log-probs refused by their family declaration (the API answers all of these with 422)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from trainer.spec import parse_spec, spec_errors
from trainer.spec.executor import OPTION_MODELS


def problems(spec: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ValidationError) as error:
        parse_spec(spec)
    return {problem["field"]: problem["message"] for problem in spec_errors(error.value)}


def test_each_forward_algorithm_takes_its_upstream_defaults() -> None:
    nft, awm, dgpo = (parse_spec({"algorithm": {"name": n}}).algorithm for n in ("diffusion_nft", "awm", "dgpo"))
    assert (nft.family, nft.nft_beta, nft.train_timesteps, nft.clip_range) == ("forward", 1.0, 9, None)
    assert (awm.awm_weighting, awm.train_timesteps, awm.clip_range) == ("ghuber", 9, 1e-4)
    assert (dgpo.dpo_beta, dgpo.train_timesteps, dgpo.clip_range) == (100.0, 6, 5e-2)


def test_each_forward_algorithm_takes_its_upstream_kl_weights_and_the_grpo_family_none() -> None:
    nft, awm, dgpo, grpo = (
        parse_spec({"algorithm": {"name": n}}).algorithm for n in ("diffusion_nft", "awm", "dgpo", "flow_grpo")
    )
    assert (nft.kl_beta, awm.kl_beta, dgpo.kl_beta, grpo.kl_beta) == (1e-4, 1e-4, 1e-3, 0.0)
    assert (awm.ema_kl_beta, dgpo.switch_ema_ref) == (1.0, 200)
    assert (nft.ema_kl_beta, nft.switch_ema_ref, grpo.ema_kl_beta, grpo.switch_ema_ref) == (None, None, None, None)


def test_a_stored_spec_keeps_the_kl_weight_it_ran_with() -> None:
    """The server stores the resolved spec; an older one stored kl_beta 0 explicitly, and it stays 0."""
    stored = parse_spec({"algorithm": {"name": "dgpo"}}).model_dump(mode="json")
    assert parse_spec(stored).algorithm.kl_beta == 1e-3
    stored["algorithm"].update(kl_beta=0.0, ema_kl_beta=None)
    assert parse_spec(stored).algorithm.kl_beta == 0.0


@pytest.mark.parametrize("switch", [-1, 10_000_001, 2.5, "soon"])
def test_a_dgpo_switch_outside_its_range_is_refused_naming_it(switch: object) -> None:
    found = problems({"algorithm": {"name": "dgpo", "switch_ema_ref": switch}})
    assert list(found) == ["algorithm.switch_ema_ref"]


@pytest.mark.parametrize(("name", "option"), [("diffusion_nft", "switch_ema_ref"), ("dgpo", "ema_kl_beta")])
def test_the_awm_ema_and_the_dgpo_switch_apply_to_their_own_algorithm_only(name: str, option: str) -> None:
    found = problems({"algorithm": {"name": name, option: 1}})
    assert "does not apply" in found[f"algorithm.{option}"]


def test_a_negative_ema_kl_weight_is_refused() -> None:
    assert "algorithm.ema_kl_beta" in problems({"algorithm": {"name": "awm", "ema_kl_beta": -1.0}})


@pytest.mark.parametrize(
    ("name", "option", "field"),
    [
        ("diffusion_nft", {"clip_range": 0.1}, "clip_range"),
        ("awm", {"kl_form": "exact"}, "kl_form"),
        ("dgpo", {"sampler": "cps"}, "sampler"),
        ("diffusion_nft", {"window_size": 2}, "window_size"),
        ("awm", {"noise_level": 0.5}, "noise_level"),
    ],
)
def test_a_grpo_only_option_on_a_forward_algorithm_is_refused_naming_it(
    name: str, option: dict[str, Any], field: str
) -> None:
    assert f"algorithm.{field}" in problems({"algorithm": {"name": name, **option}})


@pytest.mark.parametrize(("name", "option"), [("flow_grpo", "nft_beta"), ("dance_grpo", "dpo_beta")])
def test_a_forward_only_option_on_a_grpo_algorithm_is_refused_naming_it(name: str, option: str) -> None:
    found = problems({"algorithm": {"name": name, option: 0.5}})
    assert "does not apply" in found[f"algorithm.{option}"]


@pytest.mark.parametrize("beta", [0.0, -0.1, 1.5])
def test_an_nft_beta_outside_zero_to_one_is_refused(beta: float) -> None:
    assert "algorithm.nft_beta" in problems({"algorithm": {"name": "diffusion_nft", "nft_beta": beta}})


def test_a_negative_advantage_clip_is_refused() -> None:
    assert "algorithm.adv_clip" in problems({"algorithm": {"name": "awm", "adv_clip": -1.0}})


@pytest.mark.parametrize("executor", [name for name, model in OPTION_MODELS.items() if "forward" not in model.families])
def test_an_executor_that_needs_trajectory_log_probs_is_refused_for_the_forward_family(executor: str) -> None:
    found = problems({"algorithm": {"name": "diffusion_nft"}, "executor": {"name": executor}})
    assert "trajectory log-probs" in found["executor.name"] and "allowed: native" in found["executor.name"]


def test_the_trajectory_executors_are_the_lean_ones_jagg_its_compositions_and_digenrl() -> None:
    refused = {name for name, model in OPTION_MODELS.items() if "forward" not in model.families}
    assert refused == {"lean_retain", "lean_reweight", "jagg", "jagg_retain", "jagg_reweight", "digenrl"}


def test_native_runs_the_forward_family() -> None:
    assert parse_spec({"algorithm": {"name": "dgpo"}, "executor": {"name": "native"}}).executor.name == "native"


def test_a_first_step_audit_is_refused_for_the_forward_family_naming_it() -> None:
    found = problems({"algorithm": {"name": "awm"}, "executor": {"name": "native", "audit_first_step": True}})
    assert "re-noised clean samples under native alone" in found["executor.audit_first_step"]
