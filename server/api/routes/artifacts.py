"""Checkpoints and models a job registered."""

from __future__ import annotations

from fastapi import APIRouter

from server.api.deps import SessionDep, VisibleJob
from server.schemas.artifacts import ArtifactList
from server.services.artifacts import list_artifacts

router = APIRouter(tags=["artifacts"])


@router.get("/jobs/{job_id}/artifacts", response_model=ArtifactList)
def get_artifacts(job: VisibleJob, session: SessionDep) -> ArtifactList:
    return list_artifacts(session, job.id)
