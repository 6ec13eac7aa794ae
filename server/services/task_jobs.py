"""Task jobs: a task on one checkpoint of a training job (an export, an evaluation, a playground grid), queued and
placed like any job, run by `python -m trainer task` (trainer.tasks) on one device of the source job's kind.

The task job belongs to the source job's team and carries the source job's spec (the model, the LoRA, the
rewards), on one device of one node, under the native executor: a task neither trains nor needs the pools,
nodes or executor options the training run had.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Artifact, Job
from server.schemas.jobs import JobDetail
from server.services.auth import Caller
from server.services.errors import FieldErrors
from server.services.jobs import submit_job
from server.states import JobKind
from trainer.spec.task import CheckpointSource

CHECKPOINT_KINDS = ("checkpoint", "model")


def checkpoint_artifact(session: Session, job: Job, step: int | None, *, field: str = "step") -> Artifact:
    """The job's checkpoint at `step`; without one, its final model, else its latest checkpoint. 422 naming
    `field` with the steps it has when there is none."""
    artifacts = session.scalars(
        select(Artifact)
        .where(Artifact.job_id == job.id, Artifact.kind.in_(CHECKPOINT_KINDS), Artifact.step.is_not(None))
        .order_by(Artifact.step, Artifact.id)
    ).all()
    if not artifacts:
        raise FieldErrors.one(field, f"job {job.id} has no checkpoint yet")
    if step is None:
        models = [a for a in artifacts if a.kind == "model"]
        return (models or artifacts)[-1]
    at_step = [a for a in artifacts if a.step == step]
    if not at_step:
        steps = ", ".join(str(s) for s in sorted({a.step for a in artifacts if a.step is not None}))
        raise FieldErrors.one(field, f"job {job.id} has no checkpoint at step {step}; its steps: {steps}")
    return at_step[-1]


def checkpoint_source(artifact: Artifact) -> CheckpointSource:
    return CheckpointSource(
        job_id=artifact.job_id, artifact_id=artifact.id, step=artifact.step or 0, path=artifact.path
    )


def task_spec(source: Job, name: str) -> dict[str, Any]:
    """The source job's spec on one device of one node, unsharded, native executor, named for the task."""
    spec = {key: value for key, value in source.spec.items()}
    resources = dict(spec.get("resources") or {})
    for key in ("pools", "memory_budget", "exclusive"):
        resources.pop(key, None)
    resources.update(devices=1, nodes=1)
    model = {key: value for key, value in (spec.get("model") or {}).items() if key != "sharding"}
    spec.update(name=name[:200], resources=resources, model=model, executor={"name": "native"})
    return spec


def submit_task_job(
    session: Session,
    caller: Caller,
    settings: Settings,
    source: Job,
    artifact: Artifact,
    kind: JobKind,
    task: BaseModel,
    name: str,
) -> JobDetail:
    """Queue the task job in the source job's team (a member or admin of it may; 422 naming `team` otherwise)."""
    team = source.team.name if source.team is not None else None
    return submit_job(
        session,
        caller,
        task_spec(source, name),
        settings,
        team,
        kind=kind,
        task=task.model_dump(mode="json"),
        source_artifact_id=artifact.id,
    )
