"""A job's sample images: the gallery rows and each image file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse

from server.api.deps import SampleId, SessionDep, SettingsDep, VisibleJob
from server.schemas.common import MAX_INT32
from server.schemas.samples import EvalRewards, SamplePage
from server.services import samples
from server.services.eval_rewards import eval_rewards
from server.services.thumbnails import THUMB_PX, thumbnail
from trainer.spec.ingest import SampleKind

router = APIRouter(tags=["samples"])


@router.get("/jobs/{job_id}/samples", response_model=SamplePage)
def list_samples(
    job: VisibleJob,
    session: SessionDep,
    step: Annotated[int | None, Query(ge=0, le=MAX_INT32)] = None,
    kind: SampleKind | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> SamplePage:
    return samples.list_samples(session, job.id, step=step, kind=kind, limit=limit, offset=offset)


@router.get("/jobs/{job_id}/samples/eval-rewards", response_model=EvalRewards)
def get_eval_rewards(job: VisibleJob, session: SessionDep) -> EvalRewards:
    """The mean reward of each eval step's eval samples (what the job page's eval-reward chart draws)."""
    return eval_rewards(session, job.id)


@router.get(
    "/jobs/{job_id}/samples/{sample_id}/image",
    response_class=FileResponse,
    responses={200: {"content": {"image/png": {}, "image/webp": {}}}},
)
def get_sample_image(
    job: VisibleJob,
    session: SessionDep,
    settings: SettingsDep,
    sample_id: SampleId,
    thumb: Annotated[bool, Query(description=f"a WebP of at most {THUMB_PX} px a side, for galleries")] = False,
) -> FileResponse:
    path, media_type = samples.sample_image(session, settings, job.id, sample_id)
    # A stored sample never changes, so the browser may keep it.
    cache = {"Cache-Control": "private, max-age=86400, immutable"}
    if thumb:
        return FileResponse(thumbnail(Path(path)), media_type="image/webp", headers=cache)
    return FileResponse(path, media_type=media_type, headers=cache)
