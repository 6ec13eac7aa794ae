"""`python -m trainer task` with an export task: the checkpoint is read from the source job's folder beside the
task job's, written in the format asked, and nothing else is needed from the platform when the host holds it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.conftest import write_spec
from tests.trainer.test_exports import lora_spec, spec_data, trained
from trainer.spec.task import CheckpointSource, ExportTask


def _task_files(tmp_path: Path, source_path: str) -> tuple[Path, Path, Path]:
    """The artifact root's jobs/9 (the task job) beside jobs/3 (the source job), with spec.json and task.json."""
    out = tmp_path / "jobs" / "9"
    out.mkdir(parents=True)
    spec = write_spec(out / "spec.json", spec_data("sd3"))
    source = CheckpointSource(job_id=3, artifact_id=12, step=3, path=source_path)
    task = out / "task.json"
    task.write_text(ExportTask(source=source, format="diffusers").model_dump_json())
    return spec, task, out


def test_an_export_task_writes_the_source_jobs_checkpoint_as_the_direct_export_does(
    tiny_family_dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainer.__main__ import main
    from trainer.export.write import export

    for name in ("SFUMATO_API_URL", "SFUMATO_JOB_TOKEN", "SFUMATO_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    spec = lora_spec("sd3")
    _, checkpoint = trained(spec, tmp_path / "jobs" / "3")
    spec_path, task_path, out = _task_files(tmp_path, checkpoint.relative_to(tmp_path / "jobs" / "3").as_posix())
    assert main(["task", "--spec", str(spec_path), "--task", str(task_path), "--output-dir", str(out)]) == 0
    written = load_file(out / "exports" / "diffusers-step-3" / "pytorch_lora_weights.safetensors")
    direct = load_file(export(spec, checkpoint, "diffusers", tmp_path / "direct") / "pytorch_lora_weights.safetensors")
    assert written.keys() == direct.keys() and all(torch.equal(written[k], direct[k]) for k in direct)


def test_a_checkpoint_neither_on_this_host_nor_reachable_on_a_platform_fails_naming_the_artifact(
    tiny_family_dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainer.__main__ import main

    for name in ("SFUMATO_API_URL", "SFUMATO_JOB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    spec_path, task_path, out = _task_files(tmp_path, "checkpoints/step-3")
    with pytest.raises(FileNotFoundError, match="no platform is set to fetch artifact 12"):
        main(["task", "--spec", str(spec_path), "--task", str(task_path), "--output-dir", str(out)])
