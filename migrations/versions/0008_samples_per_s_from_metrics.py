"""Samples/s is computed from the `throughput/samples_per_s` metric (the median after a warm-up step,
services.throughput), not stored from the trainer's last progress report: drop `jobs.samples_per_s`.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("samples_per_s")


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("samples_per_s", sa.Double(), nullable=True))
