"""Hosts say whether their worker runs with the model hub off (HF_HUB_OFFLINE): `hosts.hub_offline`, so a spec
naming a hub model gets a warning at submit time when no worker could download it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("hosts") as batch:
        batch.add_column(sa.Column("hub_offline", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("hosts") as batch:
        batch.drop_column("hub_offline")
