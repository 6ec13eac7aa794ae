"""The benchmark's analytical step-time model for digenrl: pools overlapped group by group."""

from __future__ import annotations

import pytest

from tests.trainer.conftest import tiny_spec
from trainer.bench import predicted_seconds
from trainer.spec import parse_spec

# One forward without grad, one with, one backward, at 4 rows (the group, and the replay batch).
COSTS = {4: {"F": 1.0, "F_g": 2.0, "B": 3.0}}


def digenrl_seconds(prompts: int, sync: float = 0.0) -> float:
    spec = parse_spec(
        tiny_spec(
            algorithm={
                "sampling_steps": 10,
                "train_timesteps": 4,
                "group_size": 4,
                "prompts_per_step": prompts,
                "global_std": False,
            },
            executor={"name": "digenrl", "timestep_batch": 4},
            resources={"devices": 2},
        )
    )
    return predicted_seconds("digenrl", spec, COSTS, fixed=0.0, sync=sync, rows=4, world=2)


def test_the_slower_pool_runs_whole_and_the_faster_one_adds_one_group_of_fill() -> None:
    # g = 2 groups x 10 steps x F(4) = 20; h = 8 units x 1 batch x (F_g + B)(4) = 40; one group of g = 10.
    assert digenrl_seconds(prompts=2) == pytest.approx(40.0 + 20.0 / 2)


def test_more_groups_make_a_shorter_fill_and_the_weight_sync_adds_in_full() -> None:
    # g = 4 x 10 = 40, h = 16 x 5 = 80: fill is one group of the generator's four, plus the sync.
    assert digenrl_seconds(prompts=4, sync=3.0) == pytest.approx(80.0 + 40.0 / 4 + 3.0)
