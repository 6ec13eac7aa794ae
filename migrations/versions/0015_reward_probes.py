"""Remote reward probes: `reward_probes` rows (job, reward index, pending/reachable/unreachable), answered by the
scheduler process after the job is stored instead of inside the submit request.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "reward_probes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("reward_index", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(12), nullable=False),
        sa.UniqueConstraint("job_id", "reward_index", name="uq_reward_probes_job_reward"),
    )
    op.create_index("ix_reward_probes_job_id", "reward_probes", ["job_id"])
    op.create_index("ix_reward_probes_state", "reward_probes", ["state"])


def downgrade() -> None:
    op.drop_index("ix_reward_probes_state", "reward_probes")
    op.drop_index("ix_reward_probes_job_id", "reward_probes")
    op.drop_table("reward_probes")
