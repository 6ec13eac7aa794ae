"""Reading a job's metrics: keys, downsampled step-aligned series, latest values (per-key figures:
metric_figures; a key's history across attempts: metric_history).

Everything reads `metric_blocks`. Long ranges use only the blocks' figures (a 1,000,000-point series is
~4,000 rows, none unpacked); short ranges unpack the few blocks they cover. Points an
attempt reported after a later attempt resumed are left out (services.current_points).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import numpy as np
from sqlalchemy import Float, Integer, LargeBinary, String, case, func, literal, select, text, union_all
from sqlalchemy.orm import Session

from server.models import METRIC_BLOCK_STEPS as BLOCK
from server.models import MetricBlock
from server.schemas.metrics import MetricSeries, MetricSeriesSet
from server.services.binary_rows import binary_rows
from server.services.current_points import CurrentPoints, current_points
from server.services.downsampling import Bucketed, Pieces, bucket
from server.services.metric_blocks import TILE, TILE_STEPS, unpack
from server.services.sql_text import select_text

# The most keys one read of aligned series asks for (GET /api/v1/jobs/{id}/metrics; the job page's charts).
MAX_KEYS_PER_READ = 64


def metric_keys(session: Session, job_id: int) -> list[str]:
    """The job's keys, sorted: a loose index scan (one primary-key probe per key)."""
    keys = session.execute(text(_KEYS_CTE + " SELECT key FROM k"), {"job_id": job_id}).scalars()
    return [key for key in keys if key is not None]


def _current(job_id: int, keys: Sequence[str], current: CurrentPoints) -> tuple[object, ...]:
    """Blocks of these keys holding at least one current point."""
    return (
        MetricBlock.job_id == job_id,
        MetricBlock.key.in_(keys),
        MetricBlock.first_step < current.bound(MetricBlock.attempt),
    )


def current_points_of_block(data: bytes, attempt: int, current: CurrentPoints) -> np.ndarray:
    """A block's points that are current (before the step a later attempt resumed at)."""
    points = unpack(data)
    cutoff = current.cutoff(attempt)
    return points if points["step"][-1] < cutoff else points[points["step"] < cutoff]


def metric_series(
    session: Session, job_id: int, keys: list[str], max_points: int, after_step: int = -1
) -> MetricSeriesSet:
    """Series for `keys` on one shared step axis of at most `max_points` steps (only steps > `after_step`: what
    a live chart lacks since its last step).

    Past `max_points` steps the range is cut into equal buckets (the same edges for every key) and each
    bucket gives, per key, its last value, minimum and maximum. Buckets of whole blocks are aggregated by the
    database from the blocks' figures, buckets of whole 16-step tiles from the tiles, narrower ones from the
    points; blocks a later attempt cut short are unpacked and only their current points count.
    """
    current = current_points(session, job_id)
    where = _current(job_id, keys, current)
    if after_step >= 0:
        where = (*where, MetricBlock.block >= after_step // BLOCK, MetricBlock.last_step > after_step)
    bound = current.bound(MetricBlock.attempt)
    lo, hi = session.execute(
        select(
            func.min(MetricBlock.first_step),
            func.max(case((MetricBlock.last_step < bound, MetricBlock.last_step), else_=bound - 1)),
        ).where(*where)
    ).one()
    if after_step >= 0 and lo is not None:
        lo = max(lo, after_step + 1)
    if lo is None or lo > hi:
        return MetricSeriesSet(series=[MetricSeries(key=key, steps=[], values=[], wall_times=[]) for key in keys])
    index = {key: i for i, key in enumerate(keys)}
    width = -(-(hi - lo + 1) // max_points)
    if after_step >= 0:
        # The blocks holding the steps after `after_step` also hold earlier ones: count points, not figures.
        points = _pieces_of_points(session, where, index, current, lo, width, after_step)
        return _series_set(keys, bucket(points, len(keys)), width)
    grain = BLOCK if width >= BLOCK else TILE_STEPS if width >= TILE_STEPS else 1
    width = -(-width // grain) * grain
    base = lo // grain * grain
    whole = (*where, MetricBlock.last_step < bound)
    if grain == BLOCK:
        parts = [_pieces_of_blocks(session, whole, index, base, width)]
    elif grain == TILE_STEPS:
        parts = [_pieces_of_tiles(session, whole, index, base, width)]
    else:
        parts = [_pieces_of_points(session, whole, index, current, base, width)]
    if current.cutoffs:
        parts.append(_pieces_of_points(session, (*where, MetricBlock.last_step >= bound), index, current, base, width))
    return _series_set(keys, bucket(_concat(parts), len(keys)), width)


INT, FLOAT = np.dtype(">i4"), np.dtype(">f8")  # how PostgreSQL's int4send and float8send write a number
_FIGURE_COLUMNS = (
    (MetricBlock.block, INT),
    (MetricBlock.last_step, INT),
    (MetricBlock.last_value, FLOAT),
    (MetricBlock.last_wall, FLOAT),
    (MetricBlock.min_value, FLOAT),
    (MetricBlock.max_value, FLOAT),
)
_TILE_COLUMNS = ((MetricBlock.block, INT), (func.length(MetricBlock.tiles), INT), (MetricBlock.tiles, TILE))


_NO_BYTES = literal(b"", LargeBinary)


def _sent(column: Any, dtype: np.dtype) -> Any:
    """`column` as bytes of `dtype`: a number through PostgreSQL's binary send function; bytea as it is."""
    return func.int4send(column) if dtype == INT else func.float8send(column) if dtype == FLOAT else column


def _values(raw: list[Any], dtype: np.dtype) -> np.ndarray:
    """SQLite's values of one column as an array: records packed in blobs, or numbers in native byte order."""
    if dtype.fields:
        return np.frombuffer(b"".join(raw), dtype)
    return np.array(raw, dtype=dtype.newbyteorder("="))


def _per_key(
    session: Session, where: tuple[object, ...], columns: Sequence[tuple[Any, np.dtype]]
) -> tuple[list[str], np.ndarray, list[np.ndarray]]:
    """The blocks `where` selects: their keys (each once), how many blocks each key has, and each of `columns`
    over all those blocks, key after key. A column comes with its dtype: a number, or records packed in bytea.

    On PostgreSQL the database packs a key's values of each column into one bytea (numbers as their binary
    send functions write them) read in binary format: one row per key (a 1,000,000-point key is ~4,000
    blocks), and no number printed as text and parsed back."""
    if session.get_bind().dialect.name == "postgresql":
        packed = [func.string_agg(_sent(column, dtype), _NO_BYTES) for column, dtype in columns]
        query = select(MetricBlock.key, func.count(), *packed).where(*where).group_by(MetricBlock.key)
        rows = binary_rows(session, query)
        values = [np.frombuffer(b"".join(row[i + 2] for row in rows), dtype) for i, (_, dtype) in enumerate(columns)]
        return [row[0] for row in rows], np.array([row[1] for row in rows], dtype=np.int64), values
    query = select(MetricBlock.key, *(column for column, _ in columns)).where(*where).order_by(MetricBlock.key)
    rows = session.connection().execute(query).all()
    runs = [(key, len(list(same))) for key, same in groupby(row[0] for row in rows)]
    values = [_values([row[i + 1] for row in rows], dtype) for i, (_, dtype) in enumerate(columns)]
    return [key for key, _ in runs], np.array([count for _, count in runs], dtype=np.int64), values


def _pieces_of_blocks(
    session: Session, where: tuple[object, ...], index: dict[str, int], base: int, width: int
) -> Pieces:
    """Each block's figures, a piece in its bucket of whole blocks."""
    keys, blocks, (block, last_step, last_value, last_wall, low, high) = _per_key(session, where, _FIGURE_COLUMNS)
    return Pieces(
        key=np.repeat(np.array([index[key] for key in keys], dtype=np.int64), blocks),
        bucket=(block.astype(np.int64) * BLOCK - base) // width,
        last_step=last_step.astype(np.int64),
        last_value=last_value.astype(np.float64),
        last_wall=last_wall.astype(np.float64),
        min_value=low.astype(np.float64),
        max_value=high.astype(np.float64),
    )


def _pieces_of_tiles(
    session: Session, where: tuple[object, ...], index: dict[str, int], base: int, width: int
) -> Pieces:
    """Per 16-step tile of the blocks `where` selects, its figures, in buckets of whole tiles."""
    keys, blocks, (block, size, tiles) = _per_key(session, where, _TILE_COLUMNS)
    per_block = size.astype(np.int64) // TILE.itemsize
    owner = np.repeat(np.repeat(np.array([index[key] for key in keys], dtype=np.int64), blocks), per_block)
    first_step = np.repeat(block.astype(np.int64) * BLOCK, per_block) + tiles["tile"] * TILE_STEPS
    return Pieces(
        key=owner,
        bucket=(first_step - base) // width,
        last_step=tiles["last_step"].astype(np.int64),
        last_value=tiles["last_value"],
        last_wall=tiles["last_wall"],
        min_value=tiles["min"],
        max_value=tiles["max"],
    )


def _pieces_of_points(
    session: Session,
    where: tuple[object, ...],
    index: dict[str, int],
    current: CurrentPoints,
    base: int,
    width: int,
    after_step: int = -1,
) -> Pieces:
    """The current points (at steps > `after_step`) of the blocks `where` selects, each a piece."""
    columns = (MetricBlock.key, MetricBlock.attempt, MetricBlock.points)
    arrays, owners = [], []
    for key, attempt, data in session.connection().execute(select(*columns).where(*where)):
        points = current_points_of_block(data, attempt, current)
        points = points[points["step"] > after_step]
        arrays.append(points)
        owners.append(np.full(len(points), index[key]))
    if not arrays:
        return _no_pieces()
    points = np.concatenate(arrays)
    key = np.concatenate(owners)
    return Pieces.of_points(key, (points["step"] - base) // width, points["step"], points["value"], points["wall"])


def _no_pieces() -> Pieces:
    empty = np.empty(0, dtype=np.float64)
    return Pieces.of_points(np.empty(0, dtype=int), np.empty(0, dtype=int), np.empty(0, dtype=int), empty, empty)


def _concat(parts: list[Pieces]) -> Pieces:
    if len(parts) == 1:
        return parts[0]
    fields = Pieces.__dataclass_fields__
    return Pieces(**{name: np.concatenate([getattr(p, name) for p in parts]) for name in fields})


def _listed(values: np.ndarray) -> list[float | None]:
    return np.where(np.isnan(values), None, values).tolist()


def _series_set(keys: list[str], b: Bucketed, width: int) -> MetricSeriesSet:
    steps = b.steps.tolist()
    series = []
    for i, key in enumerate(keys):
        series.append(
            MetricSeries(
                key=key,
                steps=steps,
                values=_listed(b.last[i]),
                wall_times=_listed(b.wall[i]),
                minimum=_listed(b.low[i]) if width > 1 else None,
                maximum=_listed(b.high[i]) if width > 1 else None,
            )
        )
    return MetricSeriesSet(series=series, bucket_steps=width)


@dataclass
class Point:
    step: int
    value: float
    wall_time: float


_KEYS_CTE = (
    "WITH RECURSIVE k(key) AS ("
    " SELECT min(key) FROM metric_blocks WHERE job_id = :job_id"
    " UNION ALL"
    " SELECT (SELECT min(key) FROM metric_blocks WHERE job_id = :job_id AND key > k.key) FROM k WHERE k.key IS NOT NULL"
    ")"
)
# PostgreSQL: per (job, key) pair, a backward primary-key probe for its last block holding a current point (the
# cutoffs come as three arrays: job, attempt and cut), all in one fixed statement whatever the number of pairs.
# Attempt before block, as in the key: a later attempt's current points lie above an earlier one's.
_LATEST = (
    " SELECT p.job_id, p.key, b.attempt, b.last_step, b.last_value, b.last_wall FROM {pairs} CROSS JOIN LATERAL ("
    "  SELECT attempt, last_step, last_value, last_wall FROM metric_blocks m"
    "  WHERE m.job_id = p.job_id AND m.key = p.key AND m.first_step < COALESCE((SELECT c.cut FROM"
    "   unnest(CAST(:cut_jobs AS integer[]), CAST(:attempts AS integer[]), CAST(:cuts AS integer[]))"
    "   AS c(job_id, attempt, cut) WHERE c.job_id = m.job_id AND c.attempt = m.attempt), 2147483647)"
    "  ORDER BY m.attempt DESC, m.block DESC LIMIT 1) b"
)
_LATEST_COLUMNS = {
    "job_id": Integer,
    "key": String,
    "attempt": Integer,
    "last_step": Integer,
    "last_value": Float,
    "last_wall": Float,
}
_ALL_KEYS = "(SELECT CAST(:job_id AS integer) AS job_id, key FROM k WHERE key IS NOT NULL) AS p"
_LATEST_OF_ALL_KEYS = select_text(_KEYS_CTE + _LATEST.format(pairs=_ALL_KEYS), **_LATEST_COLUMNS)
_PAIRS = "unnest(CAST(:jobs AS integer[]), CAST(:keys AS varchar[])) AS p(job_id, key)"
_LATEST_OF_PAIRS = select_text(_LATEST.format(pairs=_PAIRS), **_LATEST_COLUMNS)
SQLITE_PROBES_PER_STATEMENT = 250  # SQLite allows 500 terms in one compound SELECT


def latest_points(
    session: Session, job_id: int, keys: Sequence[str] | None = None, current: CurrentPoints | None = None
) -> dict[str, Point]:
    """The last current point of each of `keys` (every key of the job when None), in key order: a backward
    primary-key probe per key, in one statement. `current`: the job's current_points, when already read."""
    if keys is not None and not keys:
        return {}
    currents = {job_id: current if current is not None else current_points(session, job_id)}
    if keys is None and session.get_bind().dialect.name == "postgresql":
        rows = session.connection().execute(_LATEST_OF_ALL_KEYS, {"job_id": job_id} | _cutoff_arrays(currents))
        return {key: point for (_, key), point in sorted(_points(session, rows, currents).items())}
    wanted = metric_keys(session, job_id) if keys is None else keys
    found = latest_points_of_pairs(session, [(job_id, key) for key in wanted], currents)
    return {key: found[(job_id, key)] for key in wanted if (job_id, key) in found}


def latest_points_of_pairs(
    session: Session, pairs: Sequence[tuple[int, str]], currents: dict[int, CurrentPoints]
) -> dict[tuple[int, str], Point]:
    """The last current point of each (job, key) pair that has one, as `latest_points` reads it, for many jobs
    at once: one statement (on SQLite, one per SQLITE_PROBES_PER_STATEMENT pairs). `currents`: every job's."""
    if not pairs:
        return {}
    if session.get_bind().dialect.name == "postgresql":
        params = {"jobs": [job_id for job_id, _ in pairs], "keys": [key for _, key in pairs]}
        return _points(
            session, session.connection().execute(_LATEST_OF_PAIRS, params | _cutoff_arrays(currents)), currents
        )
    columns = (MetricBlock.job_id, MetricBlock.key, MetricBlock.attempt, MetricBlock.last_step, MetricBlock.last_value)
    found: dict[tuple[int, str], Point] = {}
    for start in range(0, len(pairs), SQLITE_PROBES_PER_STATEMENT):
        probes = [
            select(*columns, MetricBlock.last_wall)
            .where(*_current(job_id, [key], currents[job_id]))
            .order_by(MetricBlock.attempt.desc(), MetricBlock.block.desc())
            .limit(1)
            .subquery()
            for job_id, key in pairs[start : start + SQLITE_PROBES_PER_STATEMENT]
        ]
        rows = session.connection().execute(union_all(*(select(p) for p in probes)))
        found |= _points(session, rows, currents)
    return found


def _cutoff_arrays(currents: dict[int, CurrentPoints]) -> dict[str, list[int]]:
    """The jobs' cutoffs as the PostgreSQL statements take them: three arrays, job, attempt and cut."""
    cuts = [(job_id, attempt, cut) for job_id, current in currents.items() for attempt, cut in current.cutoffs.items()]
    return {"cut_jobs": [c[0] for c in cuts], "attempts": [c[1] for c in cuts], "cuts": [c[2] for c in cuts]}


def _points(session: Session, rows: Any, currents: dict[int, CurrentPoints]) -> dict[tuple[int, str], Point]:
    """Each probed block's last point; when a later attempt cut the block short, its last current point."""
    found: dict[tuple[int, str], Point] = {}
    for job_id, key, attempt, step, value, wall in rows:
        current = currents[job_id]
        if step < current.cutoff(attempt):
            found[(job_id, key)] = Point(step, value, wall)
            continue
        data = session.scalar(
            select(MetricBlock.points).where(
                MetricBlock.job_id == job_id,
                MetricBlock.key == key,
                MetricBlock.attempt == attempt,
                MetricBlock.block == step // BLOCK,
            )
        )
        last = current_points_of_block(data, attempt, current)[-1]
        found[(job_id, key)] = Point(int(last["step"]), float(last["value"]), float(last["wall"]))
    return found
