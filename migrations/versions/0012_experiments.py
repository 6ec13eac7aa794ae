"""Experiments: `experiments` (a base spec and a matrix of axes), `experiment_notes`, and on each job the
experiment it is a cell of (`jobs.experiment_id`) with the cell's axis values (`jobs.experiment_cell`).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "experiments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=True),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.Column("base_spec", sa.JSON(), nullable=False),
        sa.Column("axes", sa.JSON(), nullable=False),
        sa.Column("fair_timing", sa.Boolean(), nullable=False),
        sa.Column("order_seed", sa.Integer(), nullable=False),
        sa.Column("gpu_model", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by_id"], ["users.id"], name=op.f("fk_experiments_created_by_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["team_id"], ["teams.id"], name=op.f("fk_experiments_team_id_teams"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_experiments")),
    )
    op.create_index(op.f("ix_experiments_created_at"), "experiments", ["created_at"])
    op.create_index(op.f("ix_experiments_created_by_id"), "experiments", ["created_by_id"])
    op.create_index(op.f("ix_experiments_team_id"), "experiments", ["team_id"])
    op.create_table(
        "experiment_notes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=True),
        sa.Column("author_name", sa.String(length=100), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"], ["users.id"], name=op.f("fk_experiment_notes_author_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name=op.f("fk_experiment_notes_experiment_id_experiments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_experiment_notes")),
    )
    op.create_index(op.f("ix_experiment_notes_experiment_id"), "experiment_notes", ["experiment_id"])
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("experiment_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("experiment_cell", sa.JSON(), nullable=True))
        batch.create_foreign_key(
            batch.f("fk_jobs_experiment_id_experiments"), "experiments", ["experiment_id"], ["id"], ondelete="SET NULL"
        )
        batch.create_index(batch.f("ix_jobs_experiment_id"), ["experiment_id"])


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index(batch.f("ix_jobs_experiment_id"))
        batch.drop_constraint(batch.f("fk_jobs_experiment_id_experiments"), type_="foreignkey")
        batch.drop_column("experiment_cell")
        batch.drop_column("experiment_id")
    op.drop_index(op.f("ix_experiment_notes_experiment_id"), table_name="experiment_notes")
    op.drop_table("experiment_notes")
    op.drop_index(op.f("ix_experiments_team_id"), table_name="experiments")
    op.drop_index(op.f("ix_experiments_created_by_id"), table_name="experiments")
    op.drop_index(op.f("ix_experiments_created_at"), table_name="experiments")
    op.drop_table("experiments")
