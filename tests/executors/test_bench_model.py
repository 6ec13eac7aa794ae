"""The benchmark's analytical step-time model for digenrl: pools overlapped group by group."""

from __future__ import annotations

import pytest

from tests.trainer.conftest import tiny_spec
from trainer.bench import predicted_seconds
from trainer.spec import parse_spec
from trainer.spec.cost_model import analytical_cost

# One forward without grad, one with, one backward, at 4 rows (the group, and the replay batch); no decode.
COSTS = {4: {"F": 1.0, "F_g": 2.0, "B": 3.0, "D": 0.0}}


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
    return predicted_seconds(spec, spec.executor, COSTS, fixed=0.0, sync=sync, rows=4)


def test_the_slower_pool_runs_whole_and_the_faster_one_adds_one_group_of_fill() -> None:
    # g = 2 groups x 10 steps x F(4) = 20; h = 8 units x 1 batch x (F_g + B)(4) = 40; one group of g = 10.
    assert digenrl_seconds(prompts=2) == pytest.approx(40.0 + 20.0 / 2)


def test_more_groups_make_a_shorter_fill_and_the_weight_sync_adds_in_full() -> None:
    # g = 4 x 10 = 40, h = 16 x 5 = 80: fill is one group of the generator's four, plus the sync.
    assert digenrl_seconds(prompts=4, sync=3.0) == pytest.approx(80.0 + 40.0 / 4 + 3.0)


@pytest.mark.parametrize("executor", ["native", "lean_retain", "lean_reweight", "jagg"])
@pytest.mark.parametrize("algorithm", [{"inner_epochs": 1}, {"kl_beta": 0.04}])
def test_the_bench_prediction_in_forward_units_is_the_spec_s_analytical_cost(
    executor: str, algorithm: dict[str, object]
) -> None:
    """One cost model: at F = F_g = 1 and B = b per row, the bench's step time over n rows is n times the
    analytical cost per sample that the spec's bound and the compare page show."""
    options = {"name": executor, **({"kl": "extra_vjp"} if executor == "lean_reweight" else {})}
    spec = parse_spec(tiny_spec(algorithm={"sampling_steps": 16, "train_timesteps": 8, **algorithm}, executor=options))
    b = 1.0  # LoRA
    forwards = {rows: {"F": float(rows), "F_g": float(rows), "B": b * rows, "D": 0.0} for rows in (1, 8)}
    predicted = predicted_seconds(spec, spec.executor, forwards, fixed=0.0, sync=0.0, rows=8)
    assert predicted == pytest.approx(8 * analytical_cost(spec))  # type: ignore[operator]


@pytest.mark.parametrize(
    ("executor", "decodes"), [("native", 1), ("lean_retain", 1), ("jagg", 1), ("lean_reweight", 4)]
)
def test_lean_reweight_decodes_each_sample_alone_where_the_others_decode_the_batch_once(
    executor: str, decodes: int
) -> None:
    spec = parse_spec(tiny_spec(algorithm={"sampling_steps": 10, "train_timesteps": 4}, executor={"name": executor}))
    decode_only = {rows: {"F": 0.0, "F_g": 0.0, "B": 0.0, "D": 1.0} for rows in (1, 4)}
    assert predicted_seconds(spec, spec.executor, decode_only, fixed=0.0, sync=0.0, rows=4) == decodes
