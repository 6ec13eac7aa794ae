"""`python -m trainer task --spec FILE --task FILE --output-dir DIR`: read the task, run its kind's module on one
process, and report what it wrote. A task is one process's work: under torchrun only rank 0 runs it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import TypeAdapter

from trainer.reporting.reporter import Reporter
from trainer.spec.task import TaskSpec
from trainer.tasks import eval_task, export_task, playground_task

TASKS = {"export": export_task.run, "playground": playground_task.run, "eval": eval_task.run}


def run_task(spec_path: Path, task_path: Path, output_dir: Path) -> None:
    from trainer.run import load_spec

    if int(os.environ.get("RANK", "0")) != 0:
        return
    spec = load_spec(spec_path)
    task = TypeAdapter(TaskSpec).validate_python(json.loads(task_path.read_text()))
    output_dir.mkdir(parents=True, exist_ok=True)
    reporter = Reporter.from_environment(output_dir)
    try:
        TASKS[task.kind](spec, task, output_dir, reporter)
    finally:
        reporter.close()
