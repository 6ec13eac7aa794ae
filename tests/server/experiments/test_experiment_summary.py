"""The summary's aggregation against a hand-computed fixture: per-group intervals, the paired speedup, the
verdict sentence with its test, and the cells flagged for other hardware or a shared host."""

from __future__ import annotations

from typing import Any

import pytest

from server.schemas.compare import CompareRow, SharedHost
from server.services.experiment_summary import CellFigures, summarize

NATIVE = {1: 10.0, 2: 11.0, 3: 12.0}
LEAN = {1: 12.0, 2: 14.3, 3: 16.8}  # 1.2, 1.3 and 1.4 times native's, seed by seed


def _row(job_id: int, executor: str, samples_per_s: float, eval_reward: float, **extra: Any) -> CompareRow:
    return CompareRow(
        id=job_id, name=f"job{job_id}", status="succeeded", executor=executor, algorithm="flow_grpo", steps=6,
        samples_per_s=samples_per_s, speedup=None, bound=None, of_bound=None, peak_memory_bytes=2.0**30,
        final_reward=eval_reward, best_reward=eval_reward, eval_reward=eval_reward, eval_step=6, started_at=None,
        ended_at=None, duration_s=None, shared_with=extra.get("shared_with", []),
    )  # fmt: skip


def _cells() -> list[CellFigures]:
    cells = [
        CellFigures({"executor.name": "native", "seed": s}, s, _row(s, "native", NATIVE[s], 1.0)) for s in (1, 2, 3)
    ]
    rewards = {1: 1.1, 2: 0.9, 3: 1.3}
    cells += [
        CellFigures({"executor.name": "lean_retain", "seed": s}, s, _row(10 + s, "lean_retain", LEAN[s], rewards[s]))
        for s in (1, 2, 3)
    ]
    return cells


def test_each_group_has_the_mean_and_95_interval_over_its_seeds() -> None:
    native = summarize(_cells(), {}).groups[0]
    # samples/s is positive, so its interval is on the log scale: logs of 10, 11, 12 have mean 2.3951290 and
    # s 0.0911923; t(0.975; 2) = 4.302653 → half-width 0.2265341 → exp: 10.96961 [8.74599, 13.75859].
    assert (native.label, native.seeds) == ("native", [1, 2, 3])
    assert native.samples_per_s.mean == pytest.approx(10.96961, abs=1e-5)
    assert native.samples_per_s.low == pytest.approx(8.74599, abs=1e-5)
    assert native.samples_per_s.high == pytest.approx(13.75859, abs=1e-5)
    assert native.peak_memory_bytes.mean == pytest.approx(2.0**30) and native.peak_memory_bytes.low == pytest.approx(
        2.0**30
    )
    assert native.speedup is None


def test_the_speedup_comes_from_the_paired_seeds_and_the_verdict_names_the_test() -> None:
    summary = summarize(_cells(), {})
    lean = summary.groups[1]
    # ratios 1.2, 1.3, 1.4: geometric mean 1.29743 [1.07130, 1.57129] (test_statistics works it out).
    assert lean.speedup is not None
    assert (round(lean.speedup.mean, 5), round(lean.speedup.low, 5), round(lean.speedup.high, 5)) == (
        1.29743,
        1.0713,
        1.57129,
    )
    # eval reward differences 0.1, -0.1, 0.3 → paired t = 0.866025 on 2 df, p = 0.477767.
    (verdict,) = summary.verdicts
    assert verdict.p_value == pytest.approx(0.477767, abs=1e-6)
    assert verdict.text == (
        "lean_retain: 1.30\u00d7 [1.07, 1.57] faster than native, "
        "eval reward indistinguishable (paired t-test, p = 0.48)"
    )


def test_an_interval_straddling_one_says_the_speed_is_indistinguishable() -> None:
    cells = _cells()
    cells[3] = CellFigures(cells[3].values, 1, _row(11, "lean_retain", 8.0, 1.1))
    (verdict,) = summarize(cells, {}).verdicts
    assert "speed indistinguishable from native" in verdict.text


def test_cells_on_other_hardware_or_sharing_a_host_are_flagged() -> None:
    cells = _cells()
    shared = SharedHost(job_id=99, name="other", host="gpu-2")
    cells[4] = CellFigures(cells[4].values, 2, _row(12, "lean_retain", LEAN[2], 0.9, shared_with=[shared]))
    models = {c.row.id: "H100" for c in cells} | {13: "A100"}
    flags = [(f.job_id, f.problem) for f in summarize(cells, models).flags]
    assert flags == [
        (12, "shared host gpu-2 with job 99 while it ran"),
        (13, "ran on A100; most cells ran on H100"),
    ]
