"""An export job: the source checkpoint written in one format, registered as the export job's `export` artifact
(its name the format, its step the checkpoint's), which the platform then holds for download."""

from __future__ import annotations

from pathlib import Path

from trainer.export.write import export
from trainer.reporting.reporter import Reporter
from trainer.spec import JobSpec
from trainer.spec.task import ExportTask
from trainer.tasks.source_checkpoint import checkpoint_folder

EXPORTS_DIR = "exports"


def run(spec: JobSpec, task: ExportTask, output_dir: Path, reporter: Reporter | None) -> None:
    checkpoint = checkpoint_folder(task.source, output_dir)
    step = task.source.step
    out = output_dir / EXPORTS_DIR / f"{task.format}-step-{step}"
    written = export(spec, checkpoint, task.format, out)
    print(f"{task.format} export of {checkpoint} written to {written}")
    if reporter is not None:
        reporter.artifact("export", task.format, step, out.relative_to(output_dir).as_posix())
