"""Every executor trains under torchrun with two gloo ranks and reports its ``executor/*``
metrics; lean_retain's memory guard falls back before exceeding its graph budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec, torchrun
from tests.trainer.conftest import read_metrics, write_spec
from trainer.run import run

EXECUTOR_KEYS = {"executor/retained_graphs", "executor/buffer_bytes", "executor/sync_count"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "executor",
    [
        {"name": "lean_retain"},
        {"name": "lean_reweight"},
        {"name": "jagg", "group_width": 2},
    ],
    ids=lambda e: e["name"],
)
def test_executor_trains_two_steps_on_two_gloo_ranks(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, executor: dict[str, Any]
) -> None:
    spec = audit_spec(executor=executor, algorithm={"total_steps": 2}, resources={"devices": 2})
    result = torchrun(tmp_path, sfumato_home, spec, "run", "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    metrics = read_metrics(tmp_path / "out")
    assert [m["step"] for m in metrics] == [1, 2]
    assert metrics[0].keys() >= EXECUTOR_KEYS
    assert metrics[0]["executor/sync_count"] == 1
    assert metrics[0]["ratio/max_abs_dev"] == 0.0
    assert metrics[1]["grad_norm"] > 0


def test_lean_retain_falls_back_before_exceeding_its_graph_budget(tmp_path: Path, sfumato_home: Path) -> None:
    guarded = {"name": "lean_retain", "max_retained_graphs": 4, "on_memory_guard": "native"}
    spec = audit_spec(executor=guarded)
    run(write_spec(tmp_path / "guarded.json", spec), tmp_path / "guarded", resume=False)
    (metrics,) = read_metrics(tmp_path / "guarded")
    assert metrics["executor/memory_guard_fallback"] == 1.0
    assert "executor/retained_graphs" not in metrics  # native's schedule ran, holding no rollout graph

    spec["executor"] = {"name": "lean_retain", "max_retained_graphs": 12}
    run(write_spec(tmp_path / "fits.json", spec), tmp_path / "fits", resume=False)
    (metrics,) = read_metrics(tmp_path / "fits")
    assert metrics["executor/retained_graphs"] == 12  # 4 local samples x K = 3, within the budget
