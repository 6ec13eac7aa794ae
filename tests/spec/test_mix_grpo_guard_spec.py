"""MixGRPO's window options and GRPO-Guard in the algorithm section: upstream's defaults, and bad input refused
with an error naming the field and what is allowed (the API answers these with 422)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from trainer.spec import parse_spec, spec_errors


def problems(algorithm: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ValidationError) as error:
        parse_spec({"algorithm": algorithm})
    return {problem["field"]: problem["message"] for problem in spec_errors(error.value)}


def test_mix_grpo_takes_the_window_and_advantages_of_its_released_script() -> None:
    algorithm = parse_spec({"algorithm": {"name": "mix_grpo"}}).algorithm
    window = (algorithm.window_size, algorithm.window_shift_interval, algorithm.window_stride)
    assert (window, algorithm.window_schedule, algorithm.train_timesteps) == ((4, 25, 1), "progressive", 4)
    advantages = (algorithm.global_std, algorithm.unbiased_std, algorithm.advantage_eps)
    assert advantages == (False, True, 1e-8)
    assert (algorithm.noise_level, algorithm.clip_range, algorithm.init_same_noise) == (0.7, 1e-4, True)


def test_a_window_larger_than_the_trainable_steps_is_refused_with_the_allowed_range() -> None:
    found = problems({"name": "mix_grpo", "sampling_steps": 8, "window_size": 7})
    assert "allowed 1..6" in found["algorithm.window_size"]


def test_a_stride_of_zero_is_refused_with_the_allowed_range() -> None:
    found = problems({"name": "mix_grpo", "sampling_steps": 10, "window_stride": 0})
    assert "must be in 1..4" in found["algorithm.window_stride"]


@pytest.mark.parametrize("option", [{"window_shift_interval": 5}, {"window_stride": 2}, {"window_schedule": "random"}])
def test_a_mix_grpo_window_option_on_another_algorithm_is_refused(option: dict[str, Any]) -> None:
    (field,) = option
    found = problems({"name": "flow_grpo_fast", **option})
    assert "it applies to mix_grpo" in found[f"algorithm.{field}"]


def test_mix_grpo_trains_its_window_and_nothing_else() -> None:
    found = problems({"name": "mix_grpo", "window_size": 3, "train_timesteps": 2})
    assert "leave it unset or 3" in found["algorithm.train_timesteps"]


@pytest.mark.parametrize("name", ["dance_grpo", "flash_grpo"])
def test_guard_is_refused_where_the_step_is_not_flow_grpo_s(name: str) -> None:
    assert (
        "allowed with flow_grpo, flow_grpo_fast, mix_grpo" in problems({"name": name, "guard": True})["algorithm.guard"]
    )


def test_guard_is_refused_with_the_cps_step() -> None:
    assert "sampler 'sde'" in problems({"name": "flow_grpo", "sampler": "cps", "guard": True})["algorithm.guard"]


def test_guard_is_refused_with_more_than_one_update_per_rollout() -> None:
    assert "inner_epochs 1" in problems({"name": "mix_grpo", "inner_epochs": 2, "guard": True})["algorithm.guard"]


def test_mix_grpo_flash_takes_its_script_s_interval_and_compression() -> None:
    algorithm = parse_spec({"algorithm": {"name": "mix_grpo_flash"}}).algorithm
    window = (algorithm.window_size, algorithm.window_shift_interval, algorithm.window_stride)
    assert (window, algorithm.ode_compression, algorithm.window_schedule) == ((4, 20, 1), 0.4, "progressive")


def test_mix_grpo_flash_refuses_a_random_window() -> None:
    found = problems({"name": "mix_grpo_flash", "window_schedule": "random"})
    assert "allowed: progressive" in found["algorithm.window_schedule"]


def test_a_compression_outside_0_to_1_is_refused() -> None:
    assert "algorithm.ode_compression" in problems({"name": "mix_grpo_flash", "ode_compression": 1.5})


def test_the_solver_s_compression_is_refused_for_mix_grpo() -> None:
    found = problems({"name": "mix_grpo", "ode_compression": 0.4})
    assert "it applies to mix_grpo_flash" in found["algorithm.ode_compression"]


def test_mix_grpo_takes_every_window_option_it_is_given() -> None:
    given = {"window_size": 3, "window_shift_interval": 5, "window_stride": 2, "window_schedule": "random"}
    algorithm = parse_spec({"algorithm": {"name": "mix_grpo", **given}}).algorithm
    assert {key: getattr(algorithm, key) for key in given} == given
