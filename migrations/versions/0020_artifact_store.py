"""Artifacts held by the platform: each artifact's uploaded bytes (`sha256`, `packing` file or tar, `store_key` in
the artifact store, `uploaded_at`, `pruned_at` when retention deleted them), and each team's
`checkpoint_retention` (the last N checkpoints of a job kept; null: all).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("artifacts") as batch:
        batch.add_column(sa.Column("sha256", sa.String(64), nullable=True))
        batch.add_column(sa.Column("packing", sa.String(10), nullable=True))
        batch.add_column(sa.Column("store_key", sa.String(300), nullable=True))
        batch.add_column(sa.Column("uploaded_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("pruned_at", sa.DateTime(), nullable=True))
    with op.batch_alter_table("teams") as batch:
        batch.add_column(sa.Column("checkpoint_retention", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("teams") as batch:
        batch.drop_column("checkpoint_retention")
    with op.batch_alter_table("artifacts") as batch:
        for column in ("pruned_at", "uploaded_at", "store_key", "packing", "sha256"):
            batch.drop_column(column)
