"""Task jobs: a job that runs a task on a checkpoint instead of training (an export, an evaluation, a playground
grid). `jobs.task` holds the task (trainer.spec.task), `jobs.source_artifact_id` the checkpoint it reads, so a
checkpoint's exports and evaluations are one query away.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("task", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("source_artifact_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_jobs_source_artifact_id", "artifacts", ["source_artifact_id"], ["id"], ondelete="SET NULL"
        )
        batch.create_index("ix_jobs_source_artifact_id", ["source_artifact_id"])


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_source_artifact_id")
        batch.drop_constraint("fk_jobs_source_artifact_id", type_="foreignkey")
        batch.drop_column("source_artifact_id")
        batch.drop_column("task")
