"""The one definition of a reward service's figures: request and image rates, latency percentiles, errors,
and the jobs using it. The API, the Services page, the CLI and the client all show what this computes.

The worker scrapes the reward server's /metrics (worker.service_metrics) every few seconds; the service row
keeps the last scrape and the earlier scrapes of the last RATE_WINDOW_S seconds, each as `{"launch",
"scraped_at", "requests", "images", "errors", "latency_buckets"}`, the buckets as cumulative `[upper bound,
count]` pairs with "+Inf" last, as Prometheus exposes a histogram. Rates are over that window, as Prometheus's
`rate(x[1m])`: two scrapes a few seconds apart would show 0/s between a trainer's steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import ACTIVE_STATES, LIVE_SERVICE_STATES, Job, RewardService
from server.schemas.services import ServiceFigures, ServiceJob
from trainer.spec import SERVICE_REWARD

RATE_WINDOW_S = 60.0


def rate_window(
    recent: Sequence[dict[str, Any]] | None, latest: dict[str, Any] | None, new: dict[str, Any]
) -> list[dict[str, Any]]:
    """The scrapes to keep beside `new`: those of its launch within RATE_WINDOW_S before it, oldest first, and
    always the one just before it (a slow scrape still gives a rate)."""
    earlier = [*(recent or []), *([latest] if latest else [])]
    same_launch = [s for s in earlier if s.get("launch") == new.get("launch")]
    within = [s for s in same_launch if (_when(new) - _when(s)).total_seconds() <= RATE_WINDOW_S]
    return within or same_launch[-1:]


def figures(latest: dict[str, Any] | None, recent: Sequence[dict[str, Any]] | None) -> ServiceFigures:
    """Totals from the last scrape (the server's counters since it last started), rates from the oldest scrape
    of the window (same launch) to the last, percentiles from the latency histogram."""
    if not latest:
        return ServiceFigures(
            requests=0,
            images=0,
            errors=0,
            request_rate=None,
            images_per_s=None,
            latency_p50_s=None,
            latency_p99_s=None,
            scraped_at=None,
        )
    buckets = [
        (float(bound), float(count) if isinstance(count, int | float) else math.nan)
        for bound, count in latest.get("latency_buckets", [])
    ]
    known = all(math.isfinite(count) for _, count in buckets)
    request_rate = images_per_s = None
    previous = recent[0] if recent else None
    if previous and previous.get("launch") == latest.get("launch"):
        seconds = (_when(latest) - _when(previous)).total_seconds()
        if seconds > 0:
            request_rate = _rate(latest, previous, "requests", seconds)
            images_per_s = _rate(latest, previous, "images", seconds)
    return ServiceFigures(
        requests=_count(latest, "requests"),
        images=_count(latest, "images"),
        errors=_count(latest, "errors"),
        request_rate=request_rate,
        images_per_s=images_per_s,
        latency_p50_s=histogram_quantile(0.5, buckets) if known else None,
        latency_p99_s=histogram_quantile(0.99, buckets) if known else None,
        scraped_at=_when(latest),
    )


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """The q-quantile of a cumulative histogram, interpolated linearly inside its bucket as Prometheus's
    histogram_quantile does (prometheus/promql/quantile.go): the lowest bucket's lower bound is 0, and a rank
    in the +Inf bucket answers the highest finite bound. None without observations."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound


def jobs_using(session: Session, services: Sequence[RewardService]) -> dict[int, list[ServiceJob]]:
    """Queued, scheduled and running jobs of each live service's team whose spec names it, by service id (a
    stopped service's name may already belong to a new one)."""
    out: dict[int, list[ServiceJob]] = {service.id: [] for service in services}
    by_key = {(s.team_id, s.name): s.id for s in services if s.state in LIVE_SERVICE_STATES}
    teams = {s.team_id for s in services}
    if not services:
        return out
    rows = session.execute(
        select(Job.id, Job.name, Job.status, Job.team_id, Job.spec)
        .where(Job.status.in_(ACTIVE_STATES), Job.team_id.in_([t for t in teams if t is not None]))
        .order_by(Job.id)
    )
    for job_id, name, status, team_id, spec in rows:
        for entry in spec.get("reward") or []:
            service_id = by_key.get((team_id, entry.get("service"))) if entry.get("name") == SERVICE_REWARD else None
            if service_id is not None:
                out[service_id].append(ServiceJob(id=job_id, name=name, status=status))
    return out


def _count(scrape: dict[str, Any], key: str) -> int | None:
    """A counter as a whole number; None where the scrape holds no finite, non-negative count."""
    value = scrape.get(key)
    if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return int(value)


def _rate(latest: dict[str, Any], previous: dict[str, Any], key: str, seconds: float) -> float | None:
    now, then = _count(latest, key), _count(previous, key)
    return None if now is None or then is None else max(0.0, (now - then) / seconds)


def _when(scrape: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(scrape["scraped_at"])
