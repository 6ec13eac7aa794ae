"""Packing metric points into `metric_blocks` rows, and merging a batch into the blocks it touches.

A block holds one key's points of one attempt in 256 consecutive steps as a little-endian array of
(step int32, value float64, wall float64) sorted by step, next to its figures (count, sum, first,
minimum, maximum, last). Merging keeps a step already stored, so a re-sent batch stores nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from server.models import METRIC_BLOCK_STEPS as BLOCK
from server.models import MetricBlock

POINT = np.dtype([("step", "<i4"), ("value", "<f8"), ("wall", "<f8")])


def unpack(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=POINT)


def figures(points: np.ndarray) -> dict[str, Any]:
    """A block's figures from its points (sorted by step, at least one)."""
    values = points["value"]
    return {
        "n": len(points),
        "total": float(values.sum()),
        "first_step": int(points["step"][0]),
        "first_wall": float(points["wall"][0]),
        "last_step": int(points["step"][-1]),
        "last_value": float(values[-1]),
        "last_wall": float(points["wall"][-1]),
        "min_value": float(values.min()),
        "max_value": float(values.max()),
    }


def merge(stored: np.ndarray | None, new: np.ndarray) -> np.ndarray:
    """The union by step, sorted; where both hold a step, the stored point (and, within `new`, the first)."""
    both = new if stored is None else np.concatenate([stored, new])
    steps = both["step"]
    if len(steps) > 1 and bool((np.diff(steps) > 0).all()):
        return both
    _unique, first = np.unique(steps, return_index=True)
    return both[first]


@dataclass
class BatchPoints:
    """One attempt's new points per key, as POINT arrays."""

    by_key: dict[str, np.ndarray]

    @classmethod
    def from_columns(cls, columns: dict[str, tuple[list[int], list[float], list[float]]]) -> BatchPoints:
        by_key = {}
        for key, (steps, values, walls) in columns.items():
            points = np.empty(len(steps), dtype=POINT)
            points["step"], points["value"], points["wall"] = steps, values, walls
            by_key[key] = points
        return cls(by_key)

    def blocks(self) -> Iterable[tuple[str, int, np.ndarray]]:
        """(key, block, that block's new points) for every block the batch touches."""
        for key, points in self.by_key.items():
            ids = points["step"] // BLOCK
            if len(ids) and ids[0] == ids[-1] and bool((np.diff(ids) >= 0).all()):
                yield key, int(ids[0]), points
                continue
            for block in np.unique(ids):
                yield key, int(block), points[ids == block]


def store(session: Session, job_id: int, attempt: int, batch: BatchPoints) -> int:
    """Merge the batch into its blocks; returns how many points were new. The caller holds the attempt's
    lock (current_points.record_first_step) and commits."""
    touched = list(batch.blocks())
    if not touched:
        return 0
    stored = {
        (key, block): unpack(points)
        for key, block, points in session.execute(
            select(MetricBlock.key, MetricBlock.block, MetricBlock.points).where(
                MetricBlock.job_id == job_id,
                MetricBlock.attempt == attempt,
                tuple_(MetricBlock.key, MetricBlock.block).in_([(key, block) for key, block, _points in touched]),
            )
        )
    }
    rows = []
    added = 0
    for key, block, new in touched:
        before = stored.get((key, block))
        merged = merge(before, new)
        grew = len(merged) - (0 if before is None else len(before))
        if grew == 0:
            continue
        added += grew
        stored[(key, block)] = merged
        rows.append(
            {"job_id": job_id, "key": key, "attempt": attempt, "block": block, "points": merged.tobytes()}
            | figures(merged)
        )
    if rows:
        _upsert(session, rows)
    return added


def _upsert(session: Session, rows: list[dict[str, Any]]) -> None:
    table = MetricBlock.__table__
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    statement = insert(table)
    keys = [table.c.job_id, table.c.key, table.c.attempt, table.c.block]
    updated = {c.name: statement.excluded[c.name] for c in table.columns if c not in keys}
    session.execute(statement.on_conflict_do_update(index_elements=keys, set_=updated), rows)
