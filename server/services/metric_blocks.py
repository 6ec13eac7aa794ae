"""Packing metric points into `metric_blocks` rows, and merging a batch into the blocks it touches.

A block holds one key's points of one attempt in 256 consecutive steps as a little-endian array of
(step int32, value float64, wall float64) sorted by step, next to its figures (count, sum, first,
minimum, maximum, last). Merging keeps a step already stored, so a re-sent batch stores nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select, text, tuple_
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session

from server.models import METRIC_BLOCK_STEPS as BLOCK
from server.models import MetricBlock
from trainer.spec.ingest import MetricStep

POINT = np.dtype([("step", "<i4"), ("value", "<f8"), ("wall", "<f8")])
TILE_STEPS = 16
# A tile's figures: which of the block's 16 tiles, and its last point, minimum and maximum.
TILE = np.dtype(
    [("tile", "u1"), ("last_step", "<i4"), ("last_value", "<f8"), ("last_wall", "<f8"), ("min", "<f8"), ("max", "<f8")]
)


FIGURES = ("n", "total", "first_step", "first_wall", "last_step", "last_value", "last_wall", "min_value", "max_value")
FIGURE_TYPES = ("integer", "float8", "integer", "float8", "integer", "float8", "float8", "float8", "float8")


def unpack(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=POINT)


@dataclass
class Packed:
    """Blocks ready to write: every block's points and tiles, each kind in one buffer with its size per
    block, and the blocks' figures as arrays. Computed for the whole batch in one numpy pass."""

    points: bytes
    point_sizes: np.ndarray
    tiles: bytes
    tile_sizes: np.ndarray
    figures: dict[str, np.ndarray]


def pack(blocks: list[np.ndarray]) -> Packed:
    """Each block's figures and its tiles (the figures of each 16 steps that hold points: what a chart whose
    buckets are narrower than a block reads instead of the points). Blocks are sorted by step, non-empty."""
    points = np.concatenate(blocks)
    counts = np.array([len(b) for b in blocks])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ends = starts + counts - 1
    steps, values, walls = points["step"], points["value"], points["wall"]
    figures = {
        "n": counts,
        "total": np.add.reduceat(values, starts),
        "first_step": steps[starts],
        "first_wall": walls[starts],
        "last_step": steps[ends],
        "last_value": values[ends],
        "last_wall": walls[ends],
        "min_value": np.minimum.reduceat(values, starts),
        "max_value": np.maximum.reduceat(values, starts),
    }
    owner = np.repeat(np.arange(len(blocks)), counts)
    group = owner * (BLOCK // TILE_STEPS) + (steps % BLOCK) // TILE_STEPS
    tile_starts = np.flatnonzero(np.diff(group, prepend=-1))
    tile_ends = np.append(tile_starts[1:], len(points)) - 1
    tiles = np.empty(len(tile_starts), dtype=TILE)
    tiles["tile"] = (steps[tile_starts] % BLOCK) // TILE_STEPS
    tiles["last_step"] = steps[tile_ends]
    tiles["last_value"] = values[tile_ends]
    tiles["last_wall"] = walls[tile_ends]
    tiles["min"] = np.minimum.reduceat(values, tile_starts)
    tiles["max"] = np.maximum.reduceat(values, tile_starts)
    tile_counts = np.bincount(owner[tile_starts], minlength=len(blocks))
    return Packed(
        points=points.tobytes(),
        point_sizes=counts * POINT.itemsize,
        tiles=tiles.tobytes(),
        tile_sizes=tile_counts * TILE.itemsize,
        figures=figures,
    )


def merge(stored: np.ndarray | None, new: np.ndarray) -> np.ndarray:
    """The union by step, sorted; where both hold a step, the stored point (and, within `new`, the first)."""
    steps = new["step"]
    if bool((steps[1:] > steps[:-1]).all()) and (stored is None or steps[0] > stored["step"][-1]):
        return new if stored is None else _joined(stored, new)  # the usual batch: later steps, in order
    both = new if stored is None else _joined(stored, new)
    _unique, first = np.unique(both["step"], return_index=True)
    return both[first]


def _joined(first: np.ndarray, then: np.ndarray) -> np.ndarray:
    """Two POINT arrays end to end (np.concatenate promotes structured dtypes field by field: much slower)."""
    both = np.empty(len(first) + len(then), dtype=POINT)
    both[: len(first)] = first
    both[len(first) :] = then
    return both


@dataclass
class BatchPoints:
    """One attempt's new points per key, as POINT arrays."""

    by_key: dict[str, np.ndarray]

    @classmethod
    def of_steps(cls, steps: Sequence[MetricStep]) -> tuple[BatchPoints, int]:
        """The finite points of a trainer's steps, and how many were not finite. Consecutive steps that report
        the same keys in the same order (a trainer's usual batch) become one (steps x keys) matrix."""
        parts: dict[str, list[np.ndarray]] = {}
        skipped = 0
        start = 0
        while start < len(steps):
            keys = tuple(steps[start].values)
            end = start + 1
            while end < len(steps) and tuple(steps[end].values) == keys:
                end += 1
            run = steps[start:end]
            values = np.array([list(s.values.values()) for s in run], dtype=np.float64).reshape(len(run), len(keys))
            step_ids = np.array([s.step for s in run], dtype=np.int64)
            walls = np.array([s.wall_time for s in run], dtype=np.float64)
            finite = np.isfinite(values)
            skipped += int(finite.size - np.count_nonzero(finite))
            for column, key in enumerate(keys):
                kept = finite[:, column]
                points = np.empty(int(np.count_nonzero(kept)), dtype=POINT)
                points["step"], points["value"], points["wall"] = step_ids[kept], values[kept, column], walls[kept]
                parts.setdefault(key, []).append(points)
            start = end
        by_key = {key: arrays[0] if len(arrays) == 1 else np.concatenate(arrays) for key, arrays in parts.items()}
        return cls({key: points for key, points in by_key.items() if len(points)}), skipped

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
    postgres = session.get_bind().dialect.name == "postgresql"
    found = _stored_postgres if postgres else _stored_sqlite
    stored = {(key, block): unpack(points) for key, block, points in found(session, job_id, attempt, touched)}
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
        rows.append((key, block, merged))
    if rows:
        (_upsert_postgres if postgres else _upsert_sqlite)(session, job_id, attempt, rows)
    return added


Touched = list[tuple[str, int, np.ndarray]]

# PostgreSQL: one statement text whatever the batch (the blocks as parallel arrays), so it is parsed and
# planned once per connection. Numbers travel as comma-separated text (a Python list parameter is dumped
# element by element, ~2 µs each) and the packed points and tiles as one bytea each, cut apart by offsets.
_STORED = text(
    "SELECT key, block, points FROM metric_blocks WHERE job_id = :job_id AND key = ANY(CAST(:keys AS varchar[])) "
    "AND attempt = :attempt AND block BETWEEN :low AND :high"
)
NUMBERS = ("blocks", *FIGURES, "starts", "sizes", "tile_starts", "tile_sizes")
NUMBER_TYPES = ("integer", *FIGURE_TYPES, "integer", "integer", "integer", "integer")
_UPSERT = text(
    f"INSERT INTO metric_blocks (job_id, key, attempt, block, {', '.join(FIGURES)}, points, tiles) "
    f"SELECT :job_id, key, :attempt, block, {', '.join(FIGURES)}, substring(CAST(:blob AS bytea) FROM start FOR size), "
    "substring(CAST(:tile_blob AS bytea) FROM tile_start FOR tile_size) "
    "FROM unnest(CAST(:keys AS varchar[]), "
    + ", ".join(f"CAST(string_to_array(:{c}, ',') AS {t}[])" for c, t in zip(NUMBERS, NUMBER_TYPES, strict=True))
    + f") AS b(key, block, {', '.join(FIGURES)}, start, size, tile_start, tile_size) "
    "ON CONFLICT (job_id, key, attempt, block) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in (*FIGURES, "points", "tiles"))
)


def _stored_postgres(session: Session, job_id: int, attempt: int, touched: Touched) -> Iterable[Any]:
    """The touched blocks (and any other block of those keys in the same range, which the caller ignores):
    a primary-key range probe per key."""
    keys = sorted({key for key, _block, _points in touched})
    blocks = [block for _key, block, _points in touched]
    params = {"job_id": job_id, "attempt": attempt, "keys": keys, "low": min(blocks), "high": max(blocks)}
    return session.execute(_STORED, params)


def _stored_sqlite(session: Session, job_id: int, attempt: int, touched: Touched) -> Iterable[Any]:
    return session.execute(
        select(MetricBlock.key, MetricBlock.block, MetricBlock.points).where(
            MetricBlock.job_id == job_id,
            MetricBlock.attempt == attempt,
            tuple_(MetricBlock.key, MetricBlock.block).in_([(key, block) for key, block, _points in touched]),
        )
    )


def _upsert_postgres(session: Session, job_id: int, attempt: int, rows: Touched) -> None:
    packed = pack([points for _key, _block, points in rows])
    offsets = {  # substring() counts from 1
        "starts": 1 + np.cumsum(packed.point_sizes) - packed.point_sizes,
        "sizes": packed.point_sizes,
        "tile_starts": 1 + np.cumsum(packed.tile_sizes) - packed.tile_sizes,
        "tile_sizes": packed.tile_sizes,
        "blocks": np.array([block for _key, block, _points in rows]),
    }
    numbers = {name: ",".join(map(repr, column.tolist())) for name, column in (packed.figures | offsets).items()}
    keys = [key for key, _block, _points in rows]
    params = {"job_id": job_id, "attempt": attempt, "blob": packed.points, "tile_blob": packed.tiles, "keys": keys}
    session.execute(_UPSERT, params | numbers)


def _upsert_sqlite(session: Session, job_id: int, attempt: int, rows: Touched) -> None:
    table = MetricBlock.__table__
    statement = sqlite.insert(table)
    keys = [table.c.job_id, table.c.key, table.c.attempt, table.c.block]
    updated = {c.name: statement.excluded[c.name] for c in table.columns if c not in keys}
    packed = pack([points for _key, _block, points in rows])
    point_ends, tile_ends = np.cumsum(packed.point_sizes).tolist(), np.cumsum(packed.tile_sizes).tolist()
    figures = {name: column.tolist() for name, column in packed.figures.items()}
    values = [
        {
            "job_id": job_id,
            "key": key,
            "attempt": attempt,
            "block": block,
            "points": packed.points[point_ends[i] - int(packed.point_sizes[i]) : point_ends[i]],
            "tiles": packed.tiles[tile_ends[i] - int(packed.tile_sizes[i]) : tile_ends[i]],
        }
        | {name: column[i] for name, column in figures.items()}
        for i, (key, block, _points) in enumerate(rows)
    ]
    session.execute(statement.on_conflict_do_update(index_elements=keys, set_=updated), values)
