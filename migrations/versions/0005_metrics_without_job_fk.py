"""`metrics` keeps no foreign key to `jobs`: the per-row check cost more than the insert itself.

PostgreSQL checks a foreign key row by row (a lookup and a KEY SHARE lock on the job for every point): on a
5,000-point batch that was about 60% of the server's time in COPY. A point only ever arrives through its
job's ingestion endpoint, which authenticated that job, and jobs are never deleted, so nothing is lost.
On SQLite the table is copied (batch mode), which drops its triggers (migration 0003); they are put back
as they were.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FK = "fk_metrics_job_id_jobs"


def _sqlite_triggers() -> list[str]:
    """The CREATE TRIGGER statements on `metrics`, which copying the table would lose."""
    rows = op.get_bind().execute(
        sa.text("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = :t"), {"t": "metrics"}
    )
    return [sql for (sql,) in rows]


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.drop_constraint(FK, "metrics", type_="foreignkey")
        return
    triggers = _sqlite_triggers()
    with op.batch_alter_table("metrics", recreate="always") as batch:
        batch.drop_constraint(FK, type_="foreignkey")
    for sql in triggers:
        op.execute(sql)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.create_foreign_key(FK, "metrics", "jobs", ["job_id"], ["id"], ondelete="CASCADE")
        return
    triggers = _sqlite_triggers()
    with op.batch_alter_table("metrics", recreate="always") as batch:
        batch.create_foreign_key(FK, "jobs", ["job_id"], ["id"], ondelete="CASCADE")
    for sql in triggers:
        op.execute(sql)
