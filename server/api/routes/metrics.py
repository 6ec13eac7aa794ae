"""A job's metric series, downsampled on the server, and the keys it has."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from server.api.deps import SessionDep, VisibleJob
from server.schemas.metrics import MetricKeys, MetricSeriesSet
from server.services import metrics
from server.services.errors import FieldErrors

router = APIRouter(tags=["metrics"])

MAX_KEYS = 64


def _keys(raw: str) -> list[str]:
    keys = list(dict.fromkeys(k.strip() for k in raw.split(",") if k.strip()))
    if not keys:
        raise FieldErrors.one("keys", "name at least one metric key, e.g. keys=reward/mean,loss")
    if len(keys) > MAX_KEYS:
        raise FieldErrors.one("keys", f"at most {MAX_KEYS} keys per request")
    if any(len(k) > 200 for k in keys):
        raise FieldErrors.one("keys", "a metric key has at most 200 characters")
    return keys


@router.get("/jobs/{job_id}/metrics", response_model=MetricSeriesSet)
def get_metrics(
    job: VisibleJob,
    session: SessionDep,
    keys: Annotated[str, Query(description="comma-separated metric keys")],
    max_points: Annotated[int, Query(ge=10, le=100_000, description="most steps returned")] = 1000,
) -> MetricSeriesSet:
    """Series on one shared step axis; past `max_points` steps each bucket keeps its min, max and last."""
    return MetricSeriesSet(series=metrics.metric_series(session, job.id, _keys(keys), max_points))


@router.get("/jobs/{job_id}/metrics/keys", response_model=MetricKeys)
def get_metric_keys(job: VisibleJob, session: SessionDep) -> MetricKeys:
    return MetricKeys(keys=metrics.metric_keys(session, job.id))
