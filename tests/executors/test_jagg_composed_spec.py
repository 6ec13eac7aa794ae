"""What the spec and the first step refuse for jagg_retain and jagg_reweight (issue 29, bad input): JAGG's rules
(no group to aggregate under Flash-GRPO's one step, a group wider than K), Lean's (samples shared over the ranks),
and jagg_retain's graph bound, K_b = K - n_J·(W - 2) graphs per local sample, at submit and under
``resources.memory_budget`` on the first measured step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.executors.conftest import audit_spec
from tests.trainer.conftest import tiny_spec
from trainer.executors.jagg_retain import JaggRetainExecutor
from trainer.job import TrainingJob
from trainer.layout import step_batch
from trainer.spec import SpecError, parse_spec, spec_errors
from trainer.spec.executor_choice import options_for
from trainer.step_memory import measure_step

COMPOSED = ["jagg_retain", "jagg_reweight"]


def refusals(**sections: Any) -> dict[str, str]:
    with pytest.raises(ValidationError) as caught:
        parse_spec(tiny_spec(**sections))
    return {error["field"]: error["message"] for error in spec_errors(caught.value)}


@pytest.mark.parametrize("name", COMPOSED)
def test_flash_grpo_s_single_step_is_refused_naming_executor_name(name: str) -> None:
    found = refusals(executor={"name": name}, algorithm={"name": "flash_grpo"})
    assert f"{name} aggregates groups of trained steps" in found["executor.name"]


@pytest.mark.parametrize("name", COMPOSED)
def test_a_group_wider_than_the_trained_steps_is_refused_naming_group_width(name: str) -> None:
    assert "no full group" in refusals(executor={"name": name, "group_width": 8})["executor.group_width"]


@pytest.mark.parametrize("name", COMPOSED)
def test_samples_that_do_not_share_over_the_ranks_are_refused_as_under_lean(name: str) -> None:
    assert "algorithm.group_size" in refusals(executor={"name": name}, resources={"devices": 3})


def test_jagg_retain_s_graph_bound_counts_k_b_graphs_per_local_sample() -> None:
    """T = 8, K = 7, W = 4: one routed group, K_b = 5; 8 local samples keep 40 graphs (lean_retain's would be 56)."""
    assert parse_spec(tiny_spec(executor={"name": "jagg_retain", "max_retained_graphs": 40})).executor.name
    message = refusals(executor={"name": "jagg_retain", "max_retained_graphs": 39})["executor.max_retained_graphs"]
    assert "jagg_retain would keep up to 40" in message and "'jagg' or 'jagg_reweight'" in message


def test_jagg_retain_s_memory_guard_falls_back_to_jagg_with_the_same_routing(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    spec = parse_spec(
        tiny_spec(executor={"name": "jagg_retain", "max_retained_graphs": 1, "on_memory_guard": "jagg", "jagg_frac": 1})
    )
    job = TrainingJob.build(spec, "shared")
    fallback = JaggRetainExecutor(job, spec.executor).fallback  # type: ignore[arg-type]
    assert fallback is not None and fallback.name == "jagg" and fallback.options.jagg_frac == 1  # type: ignore[attr-defined]


def test_jagg_retain_s_memory_guard_falls_back_to_jagg_reweight_paying_the_kl_s_extra_vjp(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """jagg_reweight's own default (kl: require_zero) would refuse the KL jagg_retain computes as it goes."""
    executor = {"name": "jagg_retain", "max_retained_graphs": 1, "on_memory_guard": "jagg_reweight", "jagg_frac": 1}
    spec = parse_spec(tiny_spec(executor=executor))
    job = TrainingJob.build(spec, "shared")
    fallback = JaggRetainExecutor(job, spec.executor).fallback  # type: ignore[arg-type]
    assert fallback is not None and fallback.name == "jagg_reweight"
    assert fallback.options.kl == "extra_vjp" and fallback.options.jagg_frac == 1  # type: ignore[attr-defined]


def test_a_memory_budget_too_small_for_jagg_retain_s_graphs_fails_the_first_step_with_the_estimate(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    spec = parse_spec(
        audit_spec(algorithm={"sampling_steps": 6}, executor={"name": "jagg_retain"}, resources={"memory_budget": 1})
    )
    job = TrainingJob.build(spec, "shared")
    executor = JaggRetainExecutor(job, spec.executor)  # type: ignore[arg-type]
    algo = spec.algorithm
    batches = [
        step_batch(job.prompts, s, spec.seed, algo.prompts_per_step, algo.group_size, 0, 1, "shared") for s in (1, 2)
    ]
    first, _ = measure_step(job, lambda: executor.train_step(batches[0]))
    assert first.metrics["executor/retained_graphs"] == 4 * 3  # 4 samples, K_b = 5 - 2
    with pytest.raises(SpecError) as refused:
        executor.train_step(batches[1])
    assert refused.value.field == "resources.memory_budget"
    assert "jagg_retain keeps 12 sample-step graphs" in refused.value.message and "room for 0" in refused.value.message


@pytest.mark.parametrize("name", COMPOSED)
def test_probes_are_refused_naming_probe_every_for_the_interior_graphs_are_not_kept(name: str) -> None:
    assert "audit_first_step" in refusals(executor={"name": name, "probe_every": 10})["executor.probe_every"]


def test_jagg_and_its_compositions_swapped_onto_a_spec_keep_its_routing() -> None:
    """The audit, the bench and the advisor compare them on one spec: each routes its groups alike."""
    routing = {"group_width": 2, "jagg_frac": 1.0, "cosine_warn": 0.9}
    spec = parse_spec(tiny_spec(executor={"name": "jagg_reweight", "probe_every": None, **routing}))
    for name in ("jagg", "jagg_retain"):
        options = options_for(spec, name)
        assert {key: getattr(options, key) for key in routing} == routing, name


def test_a_kl_spec_s_reweight_executor_shares_its_kl_option_with_the_other_reweight_executor() -> None:
    """The audit and the bench run jagg_reweight on a lean_reweight spec (make gpu-check's KL step): with its default
    'require_zero' the KL spec was refused for it."""
    spec = parse_spec(tiny_spec(algorithm={"kl_beta": 0.04}, executor={"name": "lean_reweight", "kl": "extra_vjp"}))
    assert options_for(spec, "jagg_reweight").kl == "extra_vjp"
