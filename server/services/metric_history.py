"""A key's points across every attempt, each saying whether it is still current: what a retry replaced."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import METRIC_BLOCK_STEPS as BLOCK
from server.models import MetricBlock
from server.schemas.metrics import HistoryPoint
from server.services.current_points import current_points
from server.services.metric_blocks import unpack


def _after(step: int) -> tuple[object, ...]:
    """Blocks holding a step after `step`: a primary-key range (a block ends before the next block starts)."""
    return MetricBlock.block >= step // BLOCK, MetricBlock.last_step > step


def metric_history(session: Session, job_id: int, key: str, after_step: int, limit: int) -> list[HistoryPoint]:
    """Points of `key` any attempt reported at steps > after_step, by step then attempt (the first `limit`),
    each saying whether it is current."""
    current = current_points(session, job_id)
    rows = session.execute(
        select(MetricBlock.attempt, MetricBlock.points)
        .where(MetricBlock.job_id == job_id, MetricBlock.key == key, *_after(after_step))
        .order_by(MetricBlock.block, MetricBlock.attempt)
    )
    history: list[HistoryPoint] = []
    block_of_last = None
    for attempt, data in rows.yield_per(64):
        points = unpack(data)
        block = int(points["step"][0]) // BLOCK
        if len(history) >= limit and block != block_of_last:
            break
        block_of_last = block
        history += [
            HistoryPoint(
                step=step, attempt=attempt, value=value, wall_time=wall, current=current.is_current(attempt, step)
            )
            for step, value, wall in points[points["step"] > after_step].tolist()
        ]
    history.sort(key=lambda p: (p.step, p.attempt))
    if len(history) > limit:
        split = history[limit].step  # never end a page inside a step that two attempts reported
        whole = [p for p in history[:limit] if p.step != split]
        history = whole or history[:limit]
    return history
