"""Security: disabled users, child tokens, and the login throttle.

- `users.disabled_at`: a server admin disables a user (offboarding); their tokens and sessions end.
- `api_tokens.parent_id`: a token made by a token; it expires no later than its parent and is revoked with it.
- `login_throttles`: login attempts per key (username at an address, or an address) in the current window,
  counted up atomically before any password is checked (the audit log's failed-login rows could be raced);
  their index on `audit_events` goes.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("disabled_at", sa.DateTime(), nullable=True))
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("parent_id", sa.Integer(), nullable=True))
        batch.create_index(batch.f("ix_api_tokens_parent_id"), ["parent_id"], unique=False)
        batch.create_foreign_key(
            batch.f("fk_api_tokens_parent_id_api_tokens"), "api_tokens", ["parent_id"], ["id"], ondelete="CASCADE"
        )
    op.create_table(
        "login_throttles",
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("window_start", sa.DateTime(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_login_throttles")),
    )
    op.create_index(op.f("ix_login_throttles_window_start"), "login_throttles", ["window_start"], unique=False)
    op.drop_index("ix_audit_events_recent", table_name="audit_events")


def downgrade() -> None:
    op.create_index(
        "ix_audit_events_recent", "audit_events", ["action", "actor_name", "ip", "created_at"], unique=False
    )
    op.drop_index(op.f("ix_login_throttles_window_start"), table_name="login_throttles")
    op.drop_table("login_throttles")
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_constraint(batch.f("fk_api_tokens_parent_id_api_tokens"), type_="foreignkey")
        batch.drop_index(batch.f("ix_api_tokens_parent_id"))
        batch.drop_column("parent_id")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("disabled_at")
