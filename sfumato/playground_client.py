"""The client's playground calls (mixed into `Client`): draw prompts x seeds with a job's checkpoint and with its
base model, side by side, and read the runs back with their grid.

    run = client.playground(job.id, ["a red apple"], seeds=[0, 1], guidance_scale=4.5)
    client.wait(run.id)
    [latest, *_] = client.playground_runs(job.id)
    client.download_artifact(latest.job_id, latest.grid_artifact_id, "out/")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sfumato.models import Job, _Model


class SamplerSettings(_Model):
    steps: int
    guidance_scale: float
    shift: float | None = None


class PlaygroundRun(_Model):
    """One playground job on a checkpoint: rows prompt x seed, columns base | trained."""

    job_id: int
    status: str
    source_job_id: int | None = None
    source_artifact_id: int | None = None
    step: int
    prompts: list[str]
    seeds: list[int]
    sampler: SamplerSettings
    created_at: datetime
    error: str | None = None
    grid_artifact_id: int | None = None
    images_artifact_id: int | None = None
    grid_url: str | None = None
    images_url: str | None = None


class PlaygroundCalls:
    """Needs the Client's transport (`_get`, `_post`)."""

    _get: Callable[..., Any]
    _post: Callable[..., Any]

    def playground(
        self,
        job_id: int,
        prompts: Sequence[str],
        *,
        seeds: Sequence[int] = (0,),
        step: int | None = None,
        steps: int | None = None,
        guidance_scale: float | None = None,
        shift: float | None = None,
    ) -> Job:
        """Queue a playground job on the checkpoint at `step` (default: the final model, else the latest); a sampler
        setting left out is the job's own."""
        body = {
            "prompts": list(prompts),
            "seeds": list(seeds),
            "step": step,
            "steps": steps,
            "guidance_scale": guidance_scale,
            "shift": shift,
        }
        return Job.model_validate(self._post(f"/jobs/{job_id}/playground", json=body))

    def playground_runs(self, job_id: int) -> list[PlaygroundRun]:
        """The job's playground runs, newest first."""
        return [PlaygroundRun.model_validate(item) for item in self._get(f"/jobs/{job_id}/playground")["items"]]
