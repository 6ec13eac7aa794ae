"""Metric rollups: `metric_blocks`, kept by triggers on `metrics`, so charts over a million points stay fast.

A block is one key's current points in 16 consecutive steps: count, sum, first, minimum, maximum and last.
Inserted points are merged by a trigger (statement-level with a transition table on PostgreSQL, row-level on
SQLite; points an ON CONFLICT DO NOTHING skips are not merged). Superseding points (an UPDATE) marks their
blocks dirty; services.metric_blocks recomputes dirty blocks from `metrics` when it reads them. Existing
points are rolled up here: on PostgreSQL in one query, on SQLite as dirty blocks the first read recomputes.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BLOCK = 16  # server.models.METRIC_BLOCK_STEPS
COLUMNS = (
    "job_id, key, block, n, total, first_step, first_wall, min_step, min_value, max_step, max_value, "
    "last_step, last_value, last_wall, dirty"
)
# Merge an incoming block (excluded) into the stored one: ties keep the earlier step.
MERGE = """
    n = metric_blocks.n + excluded.n,
    total = metric_blocks.total + excluded.total,
    first_wall = CASE WHEN excluded.first_step < metric_blocks.first_step
                      THEN excluded.first_wall ELSE metric_blocks.first_wall END,
    first_step = CASE WHEN excluded.first_step < metric_blocks.first_step
                      THEN excluded.first_step ELSE metric_blocks.first_step END,
    min_step = CASE WHEN excluded.min_value < metric_blocks.min_value
                      OR (excluded.min_value = metric_blocks.min_value AND excluded.min_step < metric_blocks.min_step)
                    THEN excluded.min_step ELSE metric_blocks.min_step END,
    min_value = CASE WHEN excluded.min_value < metric_blocks.min_value
                     THEN excluded.min_value ELSE metric_blocks.min_value END,
    max_step = CASE WHEN excluded.max_value > metric_blocks.max_value
                      OR (excluded.max_value = metric_blocks.max_value AND excluded.max_step < metric_blocks.max_step)
                    THEN excluded.max_step ELSE metric_blocks.max_step END,
    max_value = CASE WHEN excluded.max_value > metric_blocks.max_value
                     THEN excluded.max_value ELSE metric_blocks.max_value END,
    last_value = CASE WHEN excluded.last_step > metric_blocks.last_step
                      THEN excluded.last_value ELSE metric_blocks.last_value END,
    last_wall = CASE WHEN excluded.last_step > metric_blocks.last_step
                     THEN excluded.last_wall ELSE metric_blocks.last_wall END,
    last_step = CASE WHEN excluded.last_step > metric_blocks.last_step
                     THEN excluded.last_step ELSE metric_blocks.last_step END
"""
# PostgreSQL: one block row per (job, key, block) of a set of points.
PG_ROLLUP = f"""
    SELECT job_id, key, step / {BLOCK}, count(*), sum(value),
           min(step), (array_agg(wall_time ORDER BY step))[1],
           (array_agg(step ORDER BY value, step))[1], min(value),
           (array_agg(step ORDER BY value DESC, step))[1], max(value),
           max(step), (array_agg(value ORDER BY step DESC))[1], (array_agg(wall_time ORDER BY step DESC))[1], false
    FROM {{source}} WHERE NOT superseded GROUP BY job_id, key, step / {BLOCK}
"""

PG_UP = [
    f"""
    CREATE FUNCTION metric_blocks_merge() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO metric_blocks ({COLUMNS}) {PG_ROLLUP.format(source="added")}
        ON CONFLICT (job_id, key, block) DO UPDATE SET {MERGE};
        RETURN NULL;
    END $$
    """,
    f"""
    CREATE FUNCTION metric_blocks_mark_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE metric_blocks AS b SET dirty = true
        FROM (SELECT DISTINCT job_id, key, step / {BLOCK} AS block FROM changed WHERE superseded) AS c
        WHERE b.job_id = c.job_id AND b.key = c.key AND b.block = c.block AND NOT b.dirty;
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER metric_blocks_on_insert AFTER INSERT ON metrics REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION metric_blocks_merge()",
    "CREATE TRIGGER metric_blocks_on_update AFTER UPDATE ON metrics REFERENCING NEW TABLE AS changed "
    "FOR EACH STATEMENT EXECUTE FUNCTION metric_blocks_mark_dirty()",
    f"INSERT INTO metric_blocks ({COLUMNS}) {PG_ROLLUP.format(source='metrics')}",
]
PG_DOWN = [
    "DROP TRIGGER IF EXISTS metric_blocks_on_update ON metrics",
    "DROP TRIGGER IF EXISTS metric_blocks_on_insert ON metrics",
    "DROP FUNCTION IF EXISTS metric_blocks_mark_dirty()",
    "DROP FUNCTION IF EXISTS metric_blocks_merge()",
]

SQLITE_UP = [
    f"""
    CREATE TRIGGER metric_blocks_on_insert AFTER INSERT ON metrics WHEN NOT NEW.superseded
    BEGIN
        INSERT INTO metric_blocks ({COLUMNS}) VALUES (
            NEW.job_id, NEW.key, NEW.step / {BLOCK}, 1, NEW.value, NEW.step, NEW.wall_time, NEW.step, NEW.value,
            NEW.step, NEW.value, NEW.step, NEW.value, NEW.wall_time, 0)
        ON CONFLICT (job_id, key, block) DO UPDATE SET {MERGE};
    END
    """,
    f"""
    CREATE TRIGGER metric_blocks_on_update AFTER UPDATE OF superseded ON metrics
    WHEN NEW.superseded AND NOT OLD.superseded
    BEGIN
        UPDATE metric_blocks SET dirty = 1
        WHERE job_id = NEW.job_id AND key = NEW.key AND block = NEW.step / {BLOCK} AND NOT dirty;
    END
    """,
    # Existing points: one dirty block each (placeholder figures), recomputed by the first read.
    f"""
    INSERT INTO metric_blocks ({COLUMNS})
    SELECT job_id, key, step / {BLOCK}, count(*), sum(value), min(step), 0, min(step), min(value),
           max(step), max(value), max(step), 0, 0, 1
    FROM metrics WHERE NOT superseded GROUP BY job_id, key, step / {BLOCK}
    """,
]
SQLITE_DOWN = ["DROP TRIGGER IF EXISTS metric_blocks_on_update", "DROP TRIGGER IF EXISTS metric_blocks_on_insert"]


def upgrade() -> None:
    op.create_table(
        "metric_blocks",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("block", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("total", sa.Float(), nullable=False),
        sa.Column("first_step", sa.Integer(), nullable=False),
        sa.Column("first_wall", sa.Float(), nullable=False),
        sa.Column("min_step", sa.Integer(), nullable=False),
        sa.Column("min_value", sa.Float(), nullable=False),
        sa.Column("max_step", sa.Integer(), nullable=False),
        sa.Column("max_value", sa.Float(), nullable=False),
        sa.Column("last_step", sa.Integer(), nullable=False),
        sa.Column("last_value", sa.Float(), nullable=False),
        sa.Column("last_wall", sa.Float(), nullable=False),
        sa.Column("dirty", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_metric_blocks_job_id_jobs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("job_id", "key", "block", name=op.f("pk_metric_blocks")),
    )
    op.create_index(
        "ix_metric_blocks_dirty",
        "metric_blocks",
        ["job_id"],
        unique=False,
        postgresql_where=sa.text("dirty"),
        sqlite_where=sa.text("dirty"),
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in PG_UP if postgres else SQLITE_UP:
        op.execute(statement)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in PG_DOWN if postgres else SQLITE_DOWN:
        op.execute(statement)
    op.drop_index("ix_metric_blocks_dirty", table_name="metric_blocks")
    op.drop_table("metric_blocks")
