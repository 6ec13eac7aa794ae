"""The executor advisor: `advice` rows (the spec, the memory budget, the host class, the probe's report and the
state of the answer), and on `jobs` the job's kind (`train`, or `probe` for the advisor's probe) and the advice a
job was submitted from or probes for (`jobs.advice_id`).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "advice",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("budget_bytes", sa.BigInteger(), nullable=True),
        sa.Column("host_class", sa.String(10), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("probe", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("owner_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
        sa.Column("team_id", sa.Integer(), sa.ForeignKey("teams.id", ondelete="SET NULL"), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("answered_at", sa.DateTime(), nullable=True),
    )
    op.create_index("ix_advice_owner_id", "advice", ["owner_id"])
    op.create_index("ix_advice_team_id", "advice", ["team_id"])
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("kind", sa.String(20), server_default="train", nullable=False))
        batch.add_column(sa.Column("advice_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_jobs_advice_id", "advice", ["advice_id"], ["id"], ondelete="SET NULL")
        batch.create_index("ix_jobs_advice_id", ["advice_id"])


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_advice_id")
        batch.drop_constraint("fk_jobs_advice_id", type_="foreignkey")
        batch.drop_column("advice_id")
        batch.drop_column("kind")
    op.drop_index("ix_advice_team_id", "advice")
    op.drop_index("ix_advice_owner_id", "advice")
    op.drop_table("advice")
