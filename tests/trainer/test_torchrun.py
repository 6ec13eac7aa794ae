"""Real multi-process runs: two gloo ranks under torchrun, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.trainer.conftest import REPO, read_metrics, tiny_spec, torchrun


@pytest.mark.slow
def test_two_gloo_ranks_train_and_print_each_step(tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path) -> None:
    spec = tiny_spec(
        algorithm={"total_steps": 2},
        resources={"devices": 2},
        samples={"every": 2, "count": 1},
        checkpoint={"every": 1},
    )
    out = tmp_path / "out"
    result = torchrun(tmp_path, sfumato_home, spec, "run", "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "2 rank(s)" in result.stdout
    assert "step 1/2" in result.stdout and "step 2/2" in result.stdout
    metrics = read_metrics(out)
    assert [m["step"] for m in metrics] == [1, 2]
    assert metrics[0]["ratio/max_abs_dev"] == 0.0
    assert (out / "model" / "adapter_model.safetensors").exists()


@pytest.mark.slow
@pytest.mark.parametrize("example", ["flash-grpo", "tiny-flux", "tiny-wan"])
def test_each_family_trains_two_steps_on_two_ranks(
    example: str, tmp_path: Path, sfumato_home: Path, tiny_family_dirs: dict[str, Path]
) -> None:
    """One torchrun run per family (sd3 with flash_grpo, flux with flow_grpo_fast, wan with
    dance_grpo; sd3 with flow_grpo above); test_families.py runs every other pair in one process."""
    spec = json.loads((REPO / "examples" / f"{example}.json").read_text())
    spec.update(samples={"every": 2, "count": 1}, checkpoint={"every": 0})
    spec["algorithm"].update(total_steps=2, sampling_steps=4)
    spec["algorithm"].pop("train_timesteps", None)
    spec["algorithm"].pop("window_size", None)
    spec["resources"]["devices"] = 2
    result = torchrun(tmp_path, sfumato_home, spec, "run", "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    metrics = read_metrics(tmp_path / "out")
    assert [m["step"] for m in metrics] == [1, 2]
    assert metrics[0]["ratio/max_abs_dev"] == 0.0
