"""An experiment: one base spec run over a matrix of axes (one job per cell), and the notes its team adds."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.models.base import Base, utcnow


class Experiment(Base):
    """The cells are jobs (`jobs.experiment_id`, each with its axis values in `jobs.experiment_cell`); the
    experiment's state is derived from theirs, never stored. With fair timing, every cell is an exclusive job
    on `gpu_model`, queued in an order shuffled with `order_seed` (the cells' job ids follow that order)."""

    __tablename__ = "experiments"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="SET NULL"), index=True)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    base_spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    # [{"path": "executor.name", "values": ["native", "jagg"]}, ...] in the order given.
    axes: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    fair_timing: Mapped[bool] = mapped_column(default=False)
    order_seed: Mapped[int] = mapped_column(Integer)
    gpu_model: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)

    created_by = relationship("User")
    team = relationship("Team")
    notes: Mapped[list[ExperimentNote]] = relationship(
        back_populates="experiment", order_by="ExperimentNote.id", cascade="all, delete-orphan"
    )


class ExperimentNote(Base):
    """Markdown a team member wrote on the experiment; rendered safely (services.markdown_text)."""

    __tablename__ = "experiment_notes"

    id: Mapped[int] = mapped_column(primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"), index=True)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    author_name: Mapped[str] = mapped_column(String(100))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    experiment: Mapped[Experiment] = relationship(back_populates="notes")
