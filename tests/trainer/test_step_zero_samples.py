"""The trainer logs the base model's eval samples at step 0, before its first step: the gallery's "before" column.
A resumed run, which has them already, does not draw them again."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.trainer.conftest import tiny_spec, write_spec
from trainer.run import run

SECTIONS = {
    "algorithm": {"total_steps": 2, "sampling_steps": 4},
    "samples": {"every": 2, "count": 1},
    "checkpoint": {"every": 1},
}


def sample_names(out: Path, step: int) -> list[str]:
    return sorted(p.name for p in (out / "samples" / f"step-{step}").glob("*.png"))


def test_a_fresh_run_logs_eval_samples_of_the_base_model_at_step_0(tmp_path: Path, sfumato_home: Path) -> None:
    out = tmp_path / "out"
    run(write_spec(tmp_path / "spec.json", tiny_spec(**SECTIONS)), out, resume=False)
    assert sample_names(out, 0) == sample_names(out, 2)  # every eval prompt with the same seeds as later steps
    assert len(sample_names(out, 0)) == 2


def test_a_resumed_run_does_not_log_step_0_again(tmp_path: Path, sfumato_home: Path) -> None:
    spec_path = write_spec(tmp_path / "spec.json", tiny_spec(**SECTIONS))
    first = tmp_path / "first"
    run(spec_path, first, resume=False)
    resumed = tmp_path / "resumed"
    (resumed / "checkpoints").mkdir(parents=True)
    shutil.copytree(first / "checkpoints" / "step-1", resumed / "checkpoints" / "step-1")
    run(spec_path, resumed, resume=True)
    assert sample_names(resumed, 0) == [] and len(sample_names(resumed, 2)) == 2
