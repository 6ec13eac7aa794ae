"""Evaluations: `evaluations` (a prompt set x rewards on a job's checkpoint or base model, run as an eval task job),
`evaluation_rewards` (each reward's mean, std, n and per-prompt scores, computed by the platform), and
`reward_hacking_alarms` (a training job's alarm, written once when it first fires).

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "evaluations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False, unique=True),
        sa.Column("source_job_id", sa.Integer(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("source_artifact_id", sa.Integer(), sa.ForeignKey("artifacts.id", ondelete="SET NULL")),
        sa.Column("step", sa.Integer()),
        sa.Column("prompt_set", sa.String(200), nullable=False),
        sa.Column("seeds_per_prompt", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("reported_at", sa.DateTime()),
        sa.Column("prompts", sa.JSON()),
    )
    op.create_index("ix_evaluations_source_job_id", "evaluations", ["source_job_id"])
    op.create_table(
        "evaluation_rewards",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("evaluation_id", sa.Integer(), sa.ForeignKey("evaluations.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("mean", sa.Float(), nullable=False),
        sa.Column("std", sa.Float(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("per_prompt", sa.JSON(), nullable=False),
    )
    op.create_index("ix_evaluation_rewards_evaluation_id", "evaluation_rewards", ["evaluation_id"])
    op.create_table(
        "reward_hacking_alarms",
        sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("fired_at", sa.DateTime(), nullable=False),
        sa.Column("series", sa.String(300), nullable=False),
        sa.Column("first_step", sa.Integer(), nullable=False),
        sa.Column("last_step", sa.Integer(), nullable=False),
        sa.Column("training_rise", sa.Float(), nullable=False),
        sa.Column("held_out_drop", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("reward_hacking_alarms")
    op.drop_index("ix_evaluation_rewards_evaluation_id", table_name="evaluation_rewards")
    op.drop_table("evaluation_rewards")
    op.drop_index("ix_evaluations_source_job_id", table_name="evaluations")
    op.drop_table("evaluations")
