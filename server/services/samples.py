"""Sample images a trainer uploads, stored under the job's folder, listed for the gallery."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Job, Sample
from server.schemas.samples import SampleOut, SamplePage
from server.services.artifact_store import job_folder, stored_file, write_atomically
from server.services.current_points import current_points
from server.services.errors import Conflict, NotFound
from server.services.images import check_image
from server.services.reward_hacking import check_reward_hacking
from trainer.spec.ingest import SampleForm


def store_sample(session: Session, settings: Settings, job: Job, form: SampleForm, data: bytes) -> tuple[int, bool]:
    """Check and store one image; returns (sample id, newly created). A re-sent sample is not stored twice."""
    if form.attempt > job.attempt:  # an earlier attempt's samples may arrive late, from its spool
        raise Conflict(f"attempt {form.attempt} is newer than job {job.id}'s current attempt ({job.attempt})")
    info = check_image(data, max_bytes=settings.max_image_bytes, max_pixels=settings.max_image_pixels)
    existing = session.scalar(
        select(Sample.id).where(
            Sample.job_id == job.id,
            Sample.attempt == form.attempt,
            Sample.step == form.step,
            Sample.kind == form.kind,
            Sample.seed == form.seed,
            Sample.prompt == form.prompt,
        )
    )
    if existing is not None:
        return existing, False
    name = f"{form.kind}-{uuid.uuid4().hex}.{info.extension}"
    relative = f"attempt-{form.attempt}/step-{form.step:08d}/{name}"
    write_atomically(job_folder(settings, job.id) / "samples" / relative, data)
    sample = Sample(
        job_id=job.id,
        attempt=form.attempt,
        step=form.step,
        kind=form.kind,
        prompt=form.prompt,
        seed=form.seed,
        reward=form.reward,
        image_path=f"jobs/{job.id}/samples/{relative}",
        width=info.width,
        height=info.height,
    )
    session.add(sample)
    session.commit()
    if form.kind == "eval" and _first_eval_sample_of_step(session, job.id, form.step):
        # The eval steps before this one are complete: the reward-hacking alarm is checked on them.
        check_reward_hacking(session, settings, job, complete_before=form.step)
        session.commit()
    return sample.id, True


def _first_eval_sample_of_step(session: Session, job_id: int, step: int) -> bool:
    of_step = (Sample.job_id == job_id, Sample.kind == "eval", Sample.step == step)
    return session.scalar(select(func.count()).select_from(Sample).where(*of_step)) == 1


def image_url(job_id: int, sample_id: int) -> str:
    return f"/api/v1/jobs/{job_id}/samples/{sample_id}/image"


def list_samples(
    session: Session,
    job_id: int,
    *,
    step: int | None = None,
    kind: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> SamplePage:
    """Newest step first; within a step in upload order."""
    conditions = [Sample.job_id == job_id]
    if step is not None:
        conditions.append(Sample.step == step)
    if kind is not None:
        conditions.append(Sample.kind == kind)
    total = session.scalar(select(func.count()).select_from(Sample).where(*conditions)) or 0
    rows = session.scalars(
        select(Sample).where(*conditions).order_by(Sample.step.desc(), Sample.id).limit(limit).offset(offset)
    ).all()
    current = current_points(session, job_id)
    items = [
        SampleOut.model_validate(
            _columns(sample)
            | {"image_url": image_url(job_id, sample.id), "current": current.is_current(sample.attempt, sample.step)}
        )
        for sample in rows
    ]
    return SamplePage(items=items, total=total)


def _columns(sample: Sample) -> dict[str, object]:
    return {name: getattr(sample, name) for name in SampleOut.model_fields if name not in ("image_url", "current")}


def sample_image(session: Session, settings: Settings, job_id: int, sample_id: int) -> tuple[str, str]:
    """(absolute file path, media type) of one sample of a job the caller already may see."""
    path = session.scalar(select(Sample.image_path).where(Sample.id == sample_id, Sample.job_id == job_id))
    if path is None:
        raise NotFound(f"sample {sample_id} not found")
    media_type = "image/webp" if path.endswith(".webp") else "image/png"
    return str(stored_file(settings, path)), media_type
