"""What a running trainer sends back: metric points, sample images, log lines."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow


class Metric(Base):
    """One point, stored once under its natural key (job, key, step, attempt).

    `job_id` has no foreign key (migration 0005): PostgreSQL would check it row by row, which cost more
    than storing the point. Points arrive only through their job's authenticated ingestion endpoint.
    """

    __tablename__ = "metrics"

    job_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    step: Mapped[int] = mapped_column(Integer, primary_key=True)
    attempt: Mapped[int] = mapped_column(Integer, primary_key=True)
    value: Mapped[float] = mapped_column(Float)
    wall_time: Mapped[float] = mapped_column(Float)
    superseded: Mapped[bool] = mapped_column(Boolean, default=False)


class Sample(Base):
    __tablename__ = "samples"
    __table_args__ = (Index("ix_samples_job_step", "job_id", "step"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    step: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(10), default="eval")
    prompt: Mapped[str] = mapped_column(Text)
    seed: Mapped[int] = mapped_column(BigInteger)
    reward: Mapped[float | None] = mapped_column(Float)
    image_path: Mapped[str] = mapped_column(String(500))
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class LogLine(Base):
    __tablename__ = "log_lines"
    __table_args__ = (Index("ix_log_lines_job_seq", "job_id", "id"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    node_rank: Mapped[int] = mapped_column(Integer, default=0)
    stream: Mapped[str] = mapped_column(String(10), default="stdout")
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


METRIC_BLOCK_STEPS = 16


class MetricBlock(Base):
    """A rollup of one key's current points in steps [block·16, block·16 + 16): count, sum, first, minimum,
    maximum and last point. Database triggers keep it (migration 0003): an insert merges the new points, an
    update that supersedes points marks the block dirty, and readers recompute dirty blocks from `metrics`
    (services.metric_blocks). Charts over a million points read these instead of the points."""

    __tablename__ = "metric_blocks"
    __table_args__ = (
        Index("ix_metric_blocks_dirty", "job_id", postgresql_where=text("dirty"), sqlite_where=text("dirty")),
    )

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    block: Mapped[int] = mapped_column(Integer, primary_key=True)
    n: Mapped[int] = mapped_column(Integer)
    total: Mapped[float] = mapped_column(Float)
    first_step: Mapped[int] = mapped_column(Integer)
    first_wall: Mapped[float] = mapped_column(Float)
    min_step: Mapped[int] = mapped_column(Integer)
    min_value: Mapped[float] = mapped_column(Float)
    max_step: Mapped[int] = mapped_column(Integer)
    max_value: Mapped[float] = mapped_column(Float)
    last_step: Mapped[int] = mapped_column(Integer)
    last_value: Mapped[float] = mapped_column(Float)
    last_wall: Mapped[float] = mapped_column(Float)
    dirty: Mapped[bool] = mapped_column(Boolean, default=False)
