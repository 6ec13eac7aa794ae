"""Job attempts: `job_attempts` rows (job, attempt, node 0's token hash, when its trainer started and was last seen,
when and by whom it ended), so restarts of the platform are counted apart from retries after the job's failures,
a job's duration sums the intervals in which it ran, and a reporter of an attempt that is over is told so.

`jobs.max_platform_restarts` (the spec's `retry.max_platform_restarts`) bounds the restarts, as
`max_attempts` bounds the attempts ended by the job's own failures. Jobs that exist already get one row for
their latest attempt, spanning their old start-to-end time.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("max_platform_restarts", sa.Integer(), nullable=False, server_default="10"))
    op.create_table(
        "job_attempts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=True),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("last_seen_at", sa.DateTime(), nullable=True),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.Column("ended_by", sa.String(20), nullable=True),
        sa.UniqueConstraint("job_id", "attempt", name="uq_job_attempts_job_attempt"),
    )
    op.create_index("ix_job_attempts_job_id", "job_attempts", ["job_id"])
    op.create_index("ix_job_attempts_token_hash", "job_attempts", ["token_hash"])
    op.execute(
        "INSERT INTO job_attempts (job_id, attempt, token_hash, started_at, last_seen_at, ended_at, ended_by) "
        "SELECT id, attempt, token_hash, started_at, COALESCE(finished_at, last_progress_at, started_at), "
        "finished_at, CASE WHEN finished_at IS NOT NULL THEN 'finished' END FROM jobs WHERE attempt > 0"
    )


def downgrade() -> None:
    op.drop_index("ix_job_attempts_token_hash", "job_attempts")
    op.drop_index("ix_job_attempts_job_id", "job_attempts")
    op.drop_table("job_attempts")
    op.drop_column("jobs", "max_platform_restarts")
