"""Each step reports how busy its host was (`host/load_per_core`), so an experiment can flag a cell timed on a
loaded host."""

from __future__ import annotations

import math
from pathlib import Path

from tests.trainer.conftest import read_metrics, tiny_spec, write_spec
from trainer.run import run


def test_every_step_reports_the_host_s_load_average_per_core(tmp_path: Path, sfumato_home: Path) -> None:
    spec = tiny_spec(algorithm={"total_steps": 2, "sampling_steps": 4}, samples={"count": 0}, checkpoint={"every": 0})
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    loads = [step["host/load_per_core"] for step in read_metrics(tmp_path / "out")]
    assert len(loads) == 2 and all(math.isfinite(load) and load >= 0 for load in loads)
