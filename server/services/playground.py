"""Playground runs on a job's checkpoint: each one a playground task job (services.task_jobs) whose trainer draws
the prompts x seeds with the base model and with the checkpoint, and registers the grid as its `playground`
artifacts (`grid`, the PNG; `images`, the single images). A run is "saved with" the checkpoint it read: the runs of
a checkpoint (a model version's) are the playground jobs whose `source_artifact_id` is that checkpoint's."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Artifact, Job
from server.schemas.artifacts import ArtifactOut
from server.schemas.jobs import JobDetail
from server.schemas.playground import PlaygroundList, PlaygroundRequest, PlaygroundRun
from server.services.auth import Caller
from server.services.errors import FieldErrors
from server.services.model_registry import version_detail
from server.services.task_jobs import checkpoint_artifact, checkpoint_source, submit_task_job
from server.states import JobKind
from trainer.spec.algorithm import AlgorithmSpec
from trainer.spec.edit_set import text_prompts_problem
from trainer.spec.playground_task import MAX_SAMPLER_STEPS, PlaygroundSettings, PlaygroundTask, SamplerSettings

GRID = "grid"
IMAGES = "images"


def sampler_of(job: Job, body: PlaygroundSettings) -> SamplerSettings:
    """The request's sampler settings, each one left out taken from the job's own algorithm (its sampling steps
    capped at the playground's limit)."""
    algorithm = AlgorithmSpec.model_validate(job.spec.get("algorithm") or {})
    return SamplerSettings(
        steps=min(algorithm.sampling_steps, MAX_SAMPLER_STEPS) if body.steps is None else body.steps,
        guidance_scale=algorithm.cfg_scale if body.guidance_scale is None else body.guidance_scale,
        shift=algorithm.shift if body.shift is None else body.shift,
    )


def request_playground(
    session: Session, caller: Caller, settings: Settings, job: Job, body: PlaygroundRequest
) -> JobDetail:
    """Queue a playground run on the job's checkpoint at `body.step` (422 naming `step` when it has none there).
    Nothing is stored on an error."""
    if job.kind != JobKind.TRAIN:
        raise FieldErrors.one("job_id", f"job {job.id} is a {job.kind} job; only a training job has checkpoints")
    return _queue(session, caller, settings, job, checkpoint_artifact(session, job, body.step), body)


def _queue(
    session: Session, caller: Caller, settings: Settings, job: Job, artifact: Artifact, body: PlaygroundSettings
) -> JobDetail:
    problem = text_prompts_problem(job.model_family, "the playground")
    if problem:
        raise FieldErrors.one("prompts", problem)
    task = PlaygroundTask(
        source=checkpoint_source(artifact), prompts=body.prompts, seeds=body.seeds, sampler=sampler_of(job, body)
    )
    name = f"playground of {job.name} at step {artifact.step}"
    return submit_task_job(session, caller, settings, job, artifact, JobKind.PLAYGROUND, task, name)


@dataclass(frozen=True)
class VersionCheckpoint:
    """A model version's source job and checkpoint artifact, as the registry recorded them."""

    model: str
    version: int
    team: str
    job: Job
    artifact: Artifact


def version_checkpoint(
    session: Session, caller: Caller, name: str, number: int, team: str | None = None
) -> VersionCheckpoint:
    """The version the caller's teams hold (404 otherwise), with its checkpoint; a version whose job or checkpoint
    was deleted since is a 422 naming `version`."""
    version = version_detail(session, caller, name, number, team)
    job = session.get(Job, version.job_id) if version.job_id is not None else None
    artifact = session.get(Artifact, version.artifact_id) if version.artifact_id is not None else None
    if job is None or artifact is None:
        raise FieldErrors.one("version", f"version {number} of model {name!r} no longer has its job's checkpoint")
    return VersionCheckpoint(version.model, version.version, version.team, job, artifact)


def request_version_playground(
    session: Session, caller: Caller, settings: Settings, version: VersionCheckpoint, body: PlaygroundSettings
) -> JobDetail:
    """Queue a playground run on the version's own checkpoint artifact: the run is saved with the version."""
    return _queue(session, caller, settings, version.job, version.artifact, body)


def _download_url(artifact: Artifact | None) -> str | None:
    """Where the artifact's bytes download from, once the platform holds them (ArtifactOut.downloadable)."""
    if artifact is None or not ArtifactOut.model_validate(artifact).downloadable:
        return None
    return f"/api/v1/jobs/{artifact.job_id}/artifacts/{artifact.id}/download"


def _runs(session: Session, which: ColumnElement[bool]) -> PlaygroundList:
    """The playground jobs `which` selects (joined with their source artifact), newest first, each with the grid
    and images it wrote (the latest of each, if retried)."""
    runs = session.execute(
        select(Job, Artifact.job_id)
        .outerjoin(Artifact, Artifact.id == Job.source_artifact_id)
        .where(Job.kind == JobKind.PLAYGROUND, which)
        .order_by(Job.id.desc())
    ).all()
    written = {
        (a.job_id, a.name): a
        for a in session.scalars(
            select(Artifact)
            .where(Artifact.job_id.in_([run.id for run, _ in runs]), Artifact.kind == "playground")
            .order_by(Artifact.id)
        )
    }
    items = []
    for run, source_job_id in runs:
        task = PlaygroundTask.model_validate(run.task)
        grid, images = written.get((run.id, GRID)), written.get((run.id, IMAGES))
        items.append(
            PlaygroundRun(
                job_id=run.id,
                status=run.status,
                source_job_id=source_job_id,
                source_artifact_id=run.source_artifact_id,
                step=task.source.step,
                prompts=task.prompts,
                seeds=task.seeds,
                sampler=task.sampler,
                created_at=run.created_at,
                error=run.error,
                grid_artifact_id=grid.id if grid is not None else None,
                images_artifact_id=images.id if images is not None else None,
                grid_url=_download_url(grid),
                images_url=_download_url(images),
            )
        )
    return PlaygroundList(items=items)


def playground_runs(session: Session, job: Job) -> PlaygroundList:
    """The playground runs on any checkpoint of `job`."""
    return _runs(session, Artifact.job_id == job.id)


def checkpoint_playground_runs(session: Session, artifact_id: int) -> PlaygroundList:
    """The playground runs on one checkpoint: those saved with the model version made from it."""
    return _runs(session, Job.source_artifact_id == artifact_id)
