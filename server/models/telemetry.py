"""What a running trainer sends back: metric points, sample images, log lines."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Float, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow


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


METRIC_BLOCK_STEPS = 256


class MetricBlock(Base):
    """One key's points of one attempt in steps [block·256, block·256 + 256), packed in `points`, with the
    figures charts need beside them: count, sum, first, minimum, maximum and last.

    A point is stored once under its natural key (job, attempt, key, step): ingestion merges a batch into its
    blocks and keeps what was already there. A chart over a million points reads ~4,000 rows of figures,
    never the points; buckets narrower than a block read `tiles` (the figures of each 16 steps); a live
    append or a short range unpacks a few blocks. Which attempt's points are
    current is `MetricAttempt`'s business, not a flag on every point.
    """

    __tablename__ = "metric_blocks"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    attempt: Mapped[int] = mapped_column(Integer, primary_key=True)
    block: Mapped[int] = mapped_column(Integer, primary_key=True)
    n: Mapped[int] = mapped_column(Integer)
    total: Mapped[float] = mapped_column(Float)
    first_step: Mapped[int] = mapped_column(Integer)
    first_wall: Mapped[float] = mapped_column(Float)
    last_step: Mapped[int] = mapped_column(Integer)
    last_value: Mapped[float] = mapped_column(Float)
    last_wall: Mapped[float] = mapped_column(Float)
    min_value: Mapped[float] = mapped_column(Float)
    max_value: Mapped[float] = mapped_column(Float)
    points: Mapped[bytes] = mapped_column(LargeBinary)
    tiles: Mapped[bytes] = mapped_column(LargeBinary)


class MetricAttempt(Base):
    """The first step an attempt reported. An attempt's points and samples stop being current at the first
    step of any later attempt (it resumed from a checkpoint there), so curves never double back."""

    __tablename__ = "metric_attempts"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    attempt: Mapped[int] = mapped_column(Integer, primary_key=True)
    first_step: Mapped[int] = mapped_column(Integer)
