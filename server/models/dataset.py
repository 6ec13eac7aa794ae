"""Prompt sets a team uploads (issue 31): a named dataset of one format, and its numbered versions, each one object
in the artifact store (a tar of its split files and images) with the SHA-256 a worker checks it against.

A dataset belongs to its team and goes with it, as its registered models do. A version row is written only in the
transaction that follows its object's arrival in the store, so there is never a version without its bytes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("team_id", "name", name="uq_datasets_team_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    format: Mapped[str] = mapped_column(String(20))  # trainer.spec.dataset_format.DATASET_FORMATS
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class DatasetVersion(Base):
    __tablename__ = "dataset_versions"
    __table_args__ = (UniqueConstraint("dataset_id", "version", name="uq_dataset_versions_dataset_version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer)  # 1, 2, ... within the dataset
    store_key: Mapped[str] = mapped_column(String(300))
    sha256: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    # Rows per split ({"train": 1200, "test": 80}), and the preview: the first rows of train as the API shows them,
    # and for an edit set where each of their images lies in the tar ({"path", "offset", "size"}).
    rows: Mapped[dict[str, Any]] = mapped_column(JSON)
    preview: Mapped[list[Any]] = mapped_column(JSON)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
