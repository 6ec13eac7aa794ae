"""What a task job runs (`python -m trainer task --task FILE`): a task on one checkpoint of a training job, where
the job's own run would train. Torch-free: the server builds these and the trainer reads them.

Each task names its checkpoint by the artifact the platform holds (`source`); the trainer reads it from the
source job's folder where the host has it, and fetches it from the platform otherwise.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from trainer.spec.checkpoint_source import CheckpointSource
from trainer.spec.eval_task import EvalTask
from trainer.spec.playground_task import PlaygroundTask

__all__ = ["CheckpointSource", "EvalTask", "ExportTask", "PlaygroundTask", "TaskSpec"]


class ExportTask(BaseModel):
    """Write the checkpoint in one format another tool loads (trainer.export.write)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["export"] = "export"
    source: CheckpointSource
    format: str = Field(min_length=1, max_length=20)


TaskSpec = Annotated[ExportTask | PlaygroundTask | EvalTask, Field(discriminator="kind")]
