"""A job's metric series, downsampled on the server, and the keys it has."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from server.api.deps import SessionDep, VisibleJob
from server.schemas.metrics import MetricHistory, MetricKeys, MetricSeriesSet
from server.services import metric_history, metric_reads
from server.services.errors import FieldErrors

router = APIRouter(tags=["metrics"])


def _keys(raw: str) -> list[str]:
    keys = list(dict.fromkeys(k.strip() for k in raw.split(",") if k.strip()))
    if not keys:
        raise FieldErrors.one("keys", "name at least one metric key, e.g. keys=reward/mean,loss")
    if len(keys) > metric_reads.MAX_KEYS_PER_READ:
        raise FieldErrors.one("keys", f"at most {metric_reads.MAX_KEYS_PER_READ} keys per request")
    if any(len(k) > 200 for k in keys):
        raise FieldErrors.one("keys", "a metric key has at most 200 characters")
    return keys


@router.get("/jobs/{job_id}/metrics", response_model=MetricSeriesSet)
def get_metrics(
    job: VisibleJob,
    session: SessionDep,
    keys: Annotated[str, Query(description="comma-separated metric keys")],
    max_points: Annotated[int, Query(ge=10, le=100_000, description="most steps returned")] = 1000,
    after_step: Annotated[
        int, Query(ge=-1, description="only steps after this one: a live chart asks from its own last step")
    ] = -1,
) -> MetricSeriesSet:
    """Series on one shared step axis; past `max_points` steps each bucket gives its last value, minimum and
    maximum."""
    return metric_reads.metric_series(session, job.id, _keys(keys), max_points, after_step)


@router.get("/jobs/{job_id}/metrics/keys", response_model=MetricKeys)
def get_metric_keys(job: VisibleJob, session: SessionDep) -> MetricKeys:
    return MetricKeys(keys=metric_reads.metric_keys(session, job.id))


@router.get("/jobs/{job_id}/metrics/history", response_model=MetricHistory)
def get_metric_history(
    job: VisibleJob,
    session: SessionDep,
    key: Annotated[str, Query(min_length=1, max_length=200, description="one metric key")],
    after_step: Annotated[int, Query(ge=-1, description="only steps after this one (page with the last step)")] = -1,
    limit: Annotated[int, Query(ge=1, le=100_000, description="most points returned")] = 10_000,
) -> MetricHistory:
    """Every point of one key that any attempt reported, not downsampled, including the points a retry
    superseded (`current: false`): what each attempt computed, for auditing a retried job. Page through a
    long key with `after_step` set to the last step received."""
    return MetricHistory(key=key, points=metric_history.metric_history(session, job.id, key, after_step, limit))
