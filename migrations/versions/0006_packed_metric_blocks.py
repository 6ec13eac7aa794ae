"""Metric points packed in blocks: one row per (job, key, attempt, 256 steps) instead of one per point.

A row per point cost ~18 µs of server and database CPU per point stored (index entries, tuple headers,
triggers keeping the 16-step rollups) and a million-point chart read thousands of rollup rows plus a
probe per kept step. A block packs its points (step int32, value float64, wall float64) next to the figures
charts need (the block's, and each 16 steps' in `tiles`), so ingestion writes one row per key per batch and
long reads never unpack points.

The `superseded` flag per point becomes `metric_attempts`: the first step each attempt reported, from which
the earlier attempts' points stop counting. Existing points are packed here; the downgrade unpacks them.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29
"""

import importlib.util
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BLOCK = 256  # server.models.METRIC_BLOCK_STEPS
POINT = np.dtype([("step", "<i4"), ("value", "<f8"), ("wall", "<f8")])  # server.services.metric_blocks.POINT
TILE_STEPS = 16  # ... and its TILE: each 16 steps' last point, minimum and maximum
TILE = np.dtype(
    [("tile", "u1"), ("last_step", "<i4"), ("last_value", "<f8"), ("last_wall", "<f8"), ("min", "<f8"), ("max", "<f8")]
)
NEVER = 2**31 - 1


def _rollups_migration() -> ModuleType:
    """Migration 0003 (16-step rollups kept by triggers on `metrics`), whose upgrade and downgrade this undoes
    and redoes."""
    path = Path(__file__).with_name("0003_metric_blocks.py")
    spec = importlib.util.spec_from_file_location("sfumato_migration_0003", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tiles(points: np.ndarray) -> bytes:
    tile = (points["step"] % BLOCK) // TILE_STEPS
    starts = np.flatnonzero(np.r_[True, tile[1:] != tile[:-1]])
    ends = np.r_[starts[1:], len(points)] - 1
    out = np.empty(len(starts), dtype=TILE)
    out["tile"], out["last_step"] = tile[starts], points["step"][ends]
    out["last_value"], out["last_wall"] = points["value"][ends], points["wall"][ends]
    out["min"], out["max"] = np.minimum.reduceat(points["value"], starts), np.maximum.reduceat(points["value"], starts)
    return out.tobytes()


def _figures(job_id: int, key: str, attempt: int, block: int, points: np.ndarray) -> dict[str, object]:
    values = points["value"]
    return {
        "job_id": job_id,
        "key": key,
        "attempt": attempt,
        "block": block,
        "n": len(points),
        "total": float(values.sum()),
        "first_step": int(points["step"][0]),
        "first_wall": float(points["wall"][0]),
        "last_step": int(points["step"][-1]),
        "last_value": float(values[-1]),
        "last_wall": float(points["wall"][-1]),
        "min_value": float(values.min()),
        "max_value": float(values.max()),
        "points": points.tobytes(),
        "tiles": _tiles(points),
    }


def _packed(rows: Iterator[sa.Row]) -> Iterator[dict[str, object]]:
    """Blocks from points ordered by (job, key, attempt, step)."""
    owner: tuple[int, str, int, int] | None = None
    run: list[tuple[int, float, float]] = []
    for job_id, key, attempt, step, value, wall in rows:
        here = (job_id, key, attempt, step // BLOCK)
        if here != owner and run and owner is not None:
            yield _figures(*owner, np.array(run, dtype=POINT))
            run = []
        owner = here
        run.append((step, value, wall))
    if run and owner is not None:
        yield _figures(*owner, np.array(run, dtype=POINT))


def _create_tables() -> None:
    op.create_table(
        "metric_blocks",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("block", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("total", sa.Float(), nullable=False),
        sa.Column("first_step", sa.Integer(), nullable=False),
        sa.Column("first_wall", sa.Float(), nullable=False),
        sa.Column("last_step", sa.Integer(), nullable=False),
        sa.Column("last_value", sa.Float(), nullable=False),
        sa.Column("last_wall", sa.Float(), nullable=False),
        sa.Column("min_value", sa.Float(), nullable=False),
        sa.Column("max_value", sa.Float(), nullable=False),
        sa.Column("points", sa.LargeBinary(), nullable=False),
        sa.Column("tiles", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_metric_blocks_job_id_jobs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("job_id", "key", "attempt", "block", name=op.f("pk_metric_blocks")),
    )
    op.create_table(
        "metric_attempts",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("first_step", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_metric_attempts_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", "attempt", name=op.f("pk_metric_attempts")),
    )
    if op.get_bind().dialect.name == "postgresql":
        # Packed points are incompressible floats: store them out of line without trying to compress.
        op.execute("ALTER TABLE metric_blocks ALTER COLUMN points SET STORAGE EXTERNAL")


def upgrade() -> None:
    _rollups_migration().downgrade()
    _create_tables()
    bind = op.get_bind()
    blocks = sa.table("metric_blocks", *(sa.column(c) for c in _figures(0, "", 0, 0, np.zeros(1, POINT))))
    points = bind.execute(
        sa.text("SELECT job_id, key, attempt, step, value, wall_time FROM metrics ORDER BY job_id, key, attempt, step")
    )
    batch: list[dict[str, object]] = []
    for row in _packed(iter(points)):
        batch.append(row)
        if len(batch) == 1000:
            bind.execute(blocks.insert(), batch)
            batch = []
    if batch:
        bind.execute(blocks.insert(), batch)
    op.execute(
        "INSERT INTO metric_attempts (job_id, attempt, first_step) "
        "SELECT job_id, attempt, min(step) FROM metrics GROUP BY job_id, attempt"
    )
    op.drop_table("metrics")


def downgrade() -> None:
    op.create_table(
        "metrics",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("wall_time", sa.Float(), nullable=False),
        sa.Column("superseded", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("job_id", "key", "step", "attempt", name=op.f("pk_metrics")),
    )
    bind = op.get_bind()
    firsts: dict[int, dict[int, int]] = {}
    for job_id, attempt, first in bind.execute(sa.text("SELECT job_id, attempt, first_step FROM metric_attempts")):
        firsts.setdefault(job_id, {})[attempt] = first
    metrics = sa.table(
        "metrics", *(sa.column(c) for c in ("job_id", "key", "step", "attempt", "value", "wall_time", "superseded"))
    )
    for job_id, key, attempt, data in bind.execute(sa.text("SELECT job_id, key, attempt, points FROM metric_blocks")):
        later = [first for other, first in firsts.get(job_id, {}).items() if other > attempt]
        cutoff = min(later, default=NEVER)
        rows = [
            {"job_id": job_id, "key": key, "step": step, "attempt": attempt, "value": value, "wall_time": wall,
             "superseded": step >= cutoff}
            for step, value, wall in np.frombuffer(data, dtype=POINT).tolist()
        ]  # fmt: skip
        bind.execute(metrics.insert(), rows)
    op.drop_table("metric_attempts")
    op.drop_table("metric_blocks")
    _rollups_migration().upgrade()
