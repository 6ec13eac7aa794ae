"""Reward services: `reward_services`, and allocations that a service holds (`allocations.service_id`, with
`job_id` now null for those), so the one-live-allocation-per-device index covers jobs and services alike.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LIVE = sa.text("state IN ('pending', 'starting', 'healthy', 'unhealthy', 'stopping')")


def upgrade() -> None:
    op.create_table(
        "reward_services",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=True),
        sa.Column("reward", sa.String(length=100), nullable=False),
        sa.Column("path", sa.String(length=500), nullable=True),
        sa.Column("device_type", sa.String(length=10), nullable=False),
        sa.Column("devices", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=True),
        sa.Column("url", sa.String(length=300), nullable=True),
        sa.Column("stop_requested", sa.Boolean(), nullable=False),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("failed_starts", sa.Integer(), nullable=False),
        sa.Column("wait_reason", sa.String(length=300), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("last_health_at", sa.DateTime(), nullable=True),
        sa.Column("metrics", sa.JSON(), nullable=True),
        sa.Column("recent_metrics", sa.JSON(), nullable=True),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("stopped_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["team_id"], ["teams.id"], name=op.f("fk_reward_services_team_id_teams"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["host_id"], ["hosts.id"], name=op.f("fk_reward_services_host_id_hosts"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["created_by_id"], ["users.id"], name=op.f("fk_reward_services_created_by_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reward_services")),
    )
    op.create_index(op.f("ix_reward_services_team_id"), "reward_services", ["team_id"])
    op.create_index(op.f("ix_reward_services_state"), "reward_services", ["state"])
    op.create_index(op.f("ix_reward_services_created_at"), "reward_services", ["created_at"])
    op.create_index(
        "uq_reward_services_live_name",
        "reward_services",
        ["team_id", "name"],
        unique=True,
        postgresql_where=LIVE,
        sqlite_where=LIVE,
    )
    with op.batch_alter_table("allocations") as batch:
        batch.add_column(sa.Column("service_id", sa.Integer(), nullable=True))
        batch.alter_column("job_id", existing_type=sa.Integer(), nullable=True)
        batch.create_foreign_key(
            op.f("fk_allocations_service_id_reward_services"),
            "reward_services",
            ["service_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch.create_index(op.f("ix_allocations_service_id"), ["service_id"])
        batch.create_check_constraint("job_or_service", "(job_id IS NULL) <> (service_id IS NULL)")


def downgrade() -> None:
    op.execute("DELETE FROM allocations WHERE service_id IS NOT NULL")
    with op.batch_alter_table("allocations") as batch:
        batch.drop_constraint(op.f("ck_allocations_job_or_service"), type_="check")
        batch.drop_index(op.f("ix_allocations_service_id"))
        batch.drop_constraint(op.f("fk_allocations_service_id_reward_services"), type_="foreignkey")
        batch.drop_column("service_id")
        batch.alter_column("job_id", existing_type=sa.Integer(), nullable=False)
    op.drop_index("uq_reward_services_live_name", table_name="reward_services")
    op.drop_index(op.f("ix_reward_services_created_at"), table_name="reward_services")
    op.drop_index(op.f("ix_reward_services_state"), table_name="reward_services")
    op.drop_index(op.f("ix_reward_services_team_id"), table_name="reward_services")
    op.drop_table("reward_services")
