"""A job's reward token: `jobs.reward_token_hash`, the SHA-256 of the token node 0's trainer sends reward servers
(never the job token, which writes the job's metrics). Cleared, like the job token's, when the attempt ends.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("reward_token_hash", sa.String(64), nullable=True))
    op.create_index("ix_jobs_reward_token_hash", "jobs", ["reward_token_hash"])


def downgrade() -> None:
    op.drop_index("ix_jobs_reward_token_hash", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("reward_token_hash")
