"""Scheduling: the admin's choice for a host apart from its liveness; per allocation the DigenRL pool it
serves, when its node's trainer started and how it exited.

- `hosts.admin_state` (active, draining, disabled): `hosts.status` turns `lost` when the heartbeat stops and
  used to overwrite a drain; the admin's choice now survives it. Existing drained or disabled hosts keep theirs.
- `allocations.pool`: which devices of a DigenRL job are its rollout pool and which its trainer pool.
- `allocations.started_at`, `allocations.exit_code`: a multi-node attempt is decided when every node has
  ended, and a node whose trainer never started is a lost task even when another node is running.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("hosts") as batch:
        batch.add_column(sa.Column("admin_state", sa.String(length=20), server_default="active", nullable=False))
    op.execute("UPDATE hosts SET admin_state = status WHERE status IN ('draining', 'disabled')")
    with op.batch_alter_table("allocations") as batch:
        batch.add_column(sa.Column("pool", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("started_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("exit_code", sa.Integer(), nullable=True))
    # Nodes of jobs running now did start: without this the scheduler would take them for lost tasks.
    op.execute(
        "UPDATE allocations SET started_at = created_at WHERE released_at IS NULL "
        "AND job_id IN (SELECT id FROM jobs WHERE status = 'running')"
    )


def downgrade() -> None:
    with op.batch_alter_table("allocations") as batch:
        batch.drop_column("exit_code")
        batch.drop_column("started_at")
        batch.drop_column("pool")
    op.execute("UPDATE hosts SET status = admin_state WHERE admin_state IN ('draining', 'disabled')")
    with op.batch_alter_table("hosts") as batch:
        batch.drop_column("admin_state")
