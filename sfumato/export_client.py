"""The client's export calls (mixed into `Client`): write a job's checkpoint in a format another tool loads
(diffusers, comfyui, merged), as an export job on a worker, and read the exports back with their artifacts.

    job = client.request_export(run.id, "diffusers", step=200)
    client.wait(job.id)
    [export, *_] = client.exports(run.id)
    client.download_artifact(export.job_id, export.artifact.id, "lora/")
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sfumato.models import Artifact, Job, _Model


class ExportJob(_Model):
    """One export job of a checkpoint; `artifact` once it succeeded and registered what it wrote."""

    job_id: int
    status: str
    format: str
    step: int
    source_artifact_id: int | None = None
    created_at: datetime
    error: str | None = None
    artifact: Artifact | None = None


class ExportCalls:
    """Needs the Client's transport (`_get`, `_post`)."""

    _get: Callable[..., Any]
    _post: Callable[..., Any]

    def request_export(self, job_id: int, fmt: str, *, step: int | None = None) -> Job:
        """Queue an export of the checkpoint at `step` (default: the final model, else the latest checkpoint)."""
        return Job.model_validate(self._post(f"/jobs/{job_id}/exports", json={"format": fmt, "step": step}))

    def exports(self, job_id: int) -> list[ExportJob]:
        """The job's export jobs, newest first."""
        return [ExportJob.model_validate(item) for item in self._get(f"/jobs/{job_id}/exports")["items"]]

    def export_formats(self, job_id: int) -> list[str]:
        """The formats this job's family and fine-tune mode can be exported in."""
        return list(self._get(f"/jobs/{job_id}/exports")["formats"])
