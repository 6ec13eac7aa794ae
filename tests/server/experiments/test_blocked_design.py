"""Experiments that cancel out a host's drift: the blocked queue order, the speedup paired within blocks on a
simulated drifting host, and the flags and withheld verdicts of a summary whose timing cannot be trusted."""

from __future__ import annotations

import random
from typing import Any

from server.schemas.compare import CompareRow
from server.services.experiment_blocks import blocked_order
from server.services.experiment_matrix import Axis, Cell, expand
from server.services.experiment_summary import CellFigures, summarize

TRUE_RATIO = 1.3  # lean_retain's samples/s over native's on a host that does not drift
NATIVE_SPEED = 10.0


def _row(job_id: int, executor: str, samples_per_s: float, bound: float | None = None) -> CompareRow:
    return CompareRow(
        id=job_id, name=f"job{job_id}", status="succeeded", executor=executor, algorithm="flow_grpo", steps=6,
        samples_per_s=samples_per_s, speedup=None, bound=bound, of_bound=None, peak_memory_bytes=2.0**30,
        final_reward=0.5, best_reward=0.5, eval_reward=0.5, eval_step=6, started_at=None, ended_at=None,
        duration_s=None, shared_with=[],
    )  # fmt: skip


def _matrix(seeds: int) -> list[Cell]:
    return expand([Axis("executor.name", ["native", "lean_retain"]), Axis("seed", list(range(1, seeds + 1)))])


def _run_on_drifting_host(cells: list[Cell], order: list[int], slowdown: float) -> list[CellFigures]:
    """Each cell's samples/s as a host that loses `slowdown` of its speed from the first cell to the last
    measures it: the executor's true speed times the host's factor at the cell's place in the queue."""
    figures = []
    for position, index in enumerate(order):
        cell = cells[index]
        host = 1.0 - slowdown * position / (len(order) - 1)
        executor = str(cell.values["executor.name"])
        speed = NATIVE_SPEED * (TRUE_RATIO if executor == "lean_retain" else 1.0) * host
        row = _row(100 + index, executor, speed)
        figures.append(CellFigures(cell.values, int(cell.values["seed"]), row, position=position))
    return figures


def _speedup(figures: list[CellFigures]) -> float:
    (verdict,) = summarize(figures, {}).verdicts
    assert verdict.speedup.mean is not None
    return verdict.speedup.mean


def _shuffled(count: int, seed: int) -> list[int]:
    """The queue order this design replaced: every cell shuffled with the experiment's seed."""
    order = list(range(count))
    random.Random(seed).shuffle(order)
    return order


def test_a_block_holds_one_seed_s_cells_for_every_setting_and_every_second_block_runs_them_in_reverse() -> None:
    cells = _matrix(3)
    queued = [cells[i].values for i in blocked_order(cells, order_seed=5)]
    assert [v["seed"] for v in queued] == [1, 1, 2, 2, 3, 3]
    executors = [v["executor.name"] for v in queued]
    assert executors[2:4] == executors[1::-1] and executors[4:6] == executors[0:2]
    assert sorted(executors[0:2]) == ["lean_retain", "native"]


def test_on_a_drifting_host_the_blocked_speedup_stays_within_5_percent_where_the_shuffle_is_off_by_more() -> None:
    cells = _matrix(2)
    seeds = range(40)
    blocked = [_speedup(_run_on_drifting_host(cells, blocked_order(cells, s), 0.3)) for s in seeds]
    shuffled = [_speedup(_run_on_drifting_host(cells, _shuffled(len(cells), s), 0.3)) for s in seeds]
    assert max(abs(s / TRUE_RATIO - 1) for s in blocked) < 0.05
    assert max(abs(s / TRUE_RATIO - 1) for s in shuffled) > 0.05


def _three_seeds(**changes: Any) -> list[CellFigures]:
    """native at 10 samples/s and lean_retain at 13, 12.5 and 13.5 over seeds 1-3, run in blocks."""
    lean = {1: 13.0, 2: 12.5, 3: 13.5}
    figures = []
    for position, (executor, seed) in enumerate(
        [("native", 1), ("lean_retain", 1), ("lean_retain", 2), ("native", 2), ("native", 3), ("lean_retain", 3)]
    ):
        speed = changes.get("native", {}).get(seed, 10.0) if executor == "native" else lean[seed]
        row = _row(position + 1, executor, speed, bound=changes.get("bound"))
        load = changes.get("loads", {}).get(position + 1)
        figures.append(
            CellFigures({"executor.name": executor, "seed": seed}, seed, row, position=position, host_load=load)
        )
    return figures


def test_a_speedup_above_its_bound_by_more_than_its_interval_gets_no_verdict() -> None:
    (verdict,) = summarize(_three_seeds(bound=1.1), {}).verdicts
    assert verdict.speedup.low is not None and verdict.speedup.low > 1.1
    assert not verdict.given
    assert verdict.withheld is not None and verdict.withheld.startswith("above bound: timing suspect")
    assert "faster" not in verdict.text and "above bound: timing suspect (bound 1.10\u00d7)" in verdict.text


def test_a_speedup_within_its_bound_gets_its_verdict() -> None:
    (verdict,) = summarize(_three_seeds(bound=1.4), {}).verdicts
    assert verdict.given and verdict.withheld is None and "faster than native" in verdict.text


def test_with_fewer_than_three_seeds_the_values_are_given_without_a_verdict() -> None:
    two_seeds = [c for c in _three_seeds() if c.seed != 3]
    (verdict,) = summarize(two_seeds, {}).verdicts
    assert verdict.speedup.n == 2 and verdict.speedup.mean is not None
    assert not verdict.given
    assert "no verdict: 2 paired seeds, a verdict needs 3" in verdict.text
    assert "faster" not in verdict.text and "indistinguishable" not in verdict.text


def test_a_cell_run_on_a_loaded_host_is_flagged_with_its_load() -> None:
    summary = summarize(_three_seeds(loads={2: 1.8, 3: 0.4}), {})
    assert [(f.job_id, f.problem) for f in summary.flags] == [(2, "host load 1.80 per core while it ran (above 1)")]
    assert summary.host_loads == {2: 1.8, 3: 0.4}


def test_native_drifting_between_the_first_and_the_last_block_is_flagged() -> None:
    drifted = summarize(_three_seeds(native={3: 8.5}), {})
    steady = summarize(_three_seeds(native={3: 9.5}), {})
    assert [(f.job_id, f.problem.split(":")[0]) for f in drifted.flags] == [
        (5, "native samples/s -15% from the first block (job 1) to the last")
    ]
    assert steady.flags == []
