"""Worker hosts, their devices, and which job holds which device."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.models.base import Base, utcnow
from server.states import AdminState, HostStatus

POOLS = ("rollout", "trainer")


class Host(Base):
    __tablename__ = "hosts"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    queue: Mapped[str] = mapped_column(String(250))
    address: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), default=HostStatus.ONLINE)  # a HostStatus
    admin_state: Mapped[str] = mapped_column(  # an AdminState
        String(20), default=AdminState.ACTIVE, server_default=AdminState.ACTIVE.value
    )
    # The worker's trainers cannot reach the model hub: it runs with the hub off (HF_HUB_OFFLINE), or the hub's
    # endpoint did not answer its probe at registration (worker/hub_probe.py). A hub model cannot load there.
    hub_offline: Mapped[bool] = mapped_column(default=False, server_default=false())
    last_heartbeat_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    registered_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    devices: Mapped[list[Device]] = relationship(back_populates="host", order_by="Device.index")


class Device(Base):
    __tablename__ = "devices"
    __table_args__ = (UniqueConstraint("host_id", "index"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"), index=True)
    index: Mapped[int] = mapped_column(Integer)
    device_type: Mapped[str] = mapped_column(String(10))
    model: Mapped[str] = mapped_column(String(200))
    memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    enabled: Mapped[bool] = mapped_column(default=True)

    host: Mapped[Host] = relationship(back_populates="devices")


class Allocation(Base):
    """One device held by one job attempt, or by one generation of a reward service (`service_id` set,
    `job_id` null; `attempt` is then the service's generation); `released_at` null means held now.

    `pool` names the DigenRL pool the device serves (null for a job without pools); `started_at` is when
    this node's trainer started, `exit_code` how it ended: a multi-node attempt's verdict waits for every
    node, and a node that never started was a lost task.
    """

    __tablename__ = "allocations"
    __table_args__ = (
        Index("ix_allocations_live_device", "device_id", "released_at"),
        # The database's own guard: a device is held by at most one live allocation.
        Index(
            "uq_allocations_live_device",
            "device_id",
            unique=True,
            postgresql_where=text("released_at IS NULL"),
            sqlite_where=text("released_at IS NULL"),
        ),
        CheckConstraint("(job_id IS NULL) <> (service_id IS NULL)", name="job_or_service"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    service_id: Mapped[int | None] = mapped_column(ForeignKey("reward_services.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    device_id: Mapped[int] = mapped_column(ForeignKey("devices.id", ondelete="CASCADE"))
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    node_rank: Mapped[int] = mapped_column(Integer, default=0)
    pool: Mapped[str | None] = mapped_column(String(20))
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    released_at: Mapped[datetime | None] = mapped_column(DateTime)

    device: Mapped[Device] = relationship()
    host: Mapped[Host] = relationship()
