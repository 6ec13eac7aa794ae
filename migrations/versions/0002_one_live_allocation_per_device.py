"""A partial unique index: at most one live (unreleased) allocation per device.

The scheduler already never allocates a held device; this makes the database refuse it too,
whatever process or bug tries.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LIVE = sa.text("released_at IS NULL")


def upgrade() -> None:
    op.create_index(
        "uq_allocations_live_device",
        "allocations",
        ["device_id"],
        unique=True,
        postgresql_where=LIVE,
        sqlite_where=LIVE,
    )


def downgrade() -> None:
    op.drop_index("uq_allocations_live_device", table_name="allocations")
