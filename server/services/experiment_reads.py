"""Reading experiments: who sees which (the jobs' rule, by the experiment's team), their derived state, the
list with its filters and paging, and one experiment whole (cells, summary, notes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Select, and_, case, func, or_, select
from sqlalchemy.orm import Session

from server.models import ACTIVE_STATES, PLACED_STATES, Experiment, ExperimentNote, Job, JobStatus, User
from server.schemas.experiments import (
    AxisIn,
    ExperimentCell,
    ExperimentDetail,
    ExperimentOut,
    ExperimentPage,
    NoteOut,
)
from server.services.auth import Caller
from server.services.errors import FieldErrors, NotFound
from server.services.experiment_matrix import SEED_PATH
from server.services.experiment_summary import experiment_summary, verdict_warnings
from server.services.markdown_text import markdown_html
from server.states import EXPERIMENT_STATES, ExperimentState

S = TypeVar("S", bound=Select[Any])


def scope_experiments(stmt: S, caller: Caller) -> S:
    """The jobs' visibility rule (services.scoping) on the experiment's team: its teams' members, the
    creator of a teamless one, and server admins; everyone else is told it does not exist."""
    if caller.is_admin:
        return stmt
    own_teamless = and_(Experiment.team_id.is_(None), Experiment.created_by_id == caller.user_id)
    return stmt.where(or_(Experiment.team_id.in_(caller.team_ids), own_teamless))


def visible_experiment(session: Session, caller: Caller, experiment_id: int) -> Experiment:
    experiment = session.scalar(scope_experiments(select(Experiment).where(Experiment.id == experiment_id), caller))
    if experiment is None:
        raise NotFound(f"experiment {experiment_id} not found")
    return experiment


def experiment_state(statuses: Sequence[str]) -> ExperimentState:
    """Running while any cell is placed or running; queued while the rest of the active cells wait; once every
    cell has ended: succeeded (all), failed (any failed), else cancelled."""
    if any(s in PLACED_STATES for s in statuses):
        return ExperimentState.RUNNING
    if any(s in ACTIVE_STATES for s in statuses):
        return ExperimentState.QUEUED
    if statuses and all(s == JobStatus.SUCCEEDED for s in statuses):
        return ExperimentState.SUCCEEDED
    if any(s == JobStatus.FAILED for s in statuses):
        return ExperimentState.FAILED
    return ExperimentState.CANCELLED


def _counts() -> Any:
    """Per experiment: cells, and cells placed, active, succeeded and failed (the state's inputs)."""

    def count(*statuses: str) -> Any:
        return func.coalesce(func.sum(case((Job.status.in_(statuses), 1), else_=0)), 0)

    return (
        select(
            Job.experiment_id.label("experiment_id"),
            func.count().label("total"),
            count(*PLACED_STATES).label("placed"),
            count(*ACTIVE_STATES).label("active"),
            count(JobStatus.SUCCEEDED).label("succeeded"),
            count(JobStatus.FAILED).label("failed"),
        )
        .where(Job.experiment_id.is_not(None))
        .group_by(Job.experiment_id)
        .subquery()
    )


def _state_condition(counts: Any, state: ExperimentState) -> Any:
    """`experiment_state` as SQL over `_counts`, for the list's state filter."""
    ended = counts.c.active == 0
    return {
        ExperimentState.RUNNING: counts.c.placed > 0,
        ExperimentState.QUEUED: and_(counts.c.placed == 0, counts.c.active > 0),
        ExperimentState.SUCCEEDED: and_(ended, counts.c.succeeded == counts.c.total),
        ExperimentState.FAILED: and_(ended, counts.c.failed > 0),
        ExperimentState.CANCELLED: and_(ended, counts.c.failed == 0, counts.c.succeeded < counts.c.total),
    }[state]


@dataclass(frozen=True)
class ExperimentFilters:
    states: tuple[ExperimentState, ...] = ()
    name: str | None = None
    created_by: str | None = None


def parse_filters(state: str | None, name: str | None, created_by: str | None) -> ExperimentFilters:
    """`state=running,failed` → the states, each a known one (422 naming the allowed ones otherwise)."""
    states = [s.strip() for s in (state or "").split(",") if s.strip()]
    unknown = [s for s in states if s not in EXPERIMENT_STATES]
    if unknown:
        allowed = ", ".join(EXPERIMENT_STATES)
        raise FieldErrors.one("state", f"unknown state {unknown[0]!r}; allowed: {allowed}")
    return ExperimentFilters(tuple(ExperimentState(s) for s in states), name or None, created_by or None)


def _statuses(session: Session, experiment_ids: Sequence[int]) -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = {i: {} for i in experiment_ids}
    for experiment_id, status, n in session.execute(
        select(Job.experiment_id, Job.status, func.count())
        .where(Job.experiment_id.in_(experiment_ids))
        .group_by(Job.experiment_id, Job.status)
    ):
        counts[experiment_id][status] = n
    return counts


def _out(experiment: Experiment, statuses: dict[str, int]) -> dict[str, Any]:
    expanded = [status for status, n in statuses.items() for _ in range(n)]
    return {
        "id": experiment.id,
        "name": experiment.name,
        "team": experiment.team.name if experiment.team else None,
        "created_by": experiment.created_by.username if experiment.created_by else None,
        "state": experiment_state(expanded),
        "cell_count": len(expanded),
        "status_counts": dict(sorted(statuses.items())),
        "axes": [AxisIn(path=a["path"], values=a["values"]) for a in experiment.axes],
        "fair_timing": experiment.fair_timing,
        "created_at": experiment.created_at,
    }


def list_experiments(
    session: Session, caller: Caller, filters: ExperimentFilters, limit: int = 50, offset: int = 0
) -> ExperimentPage:
    """Newest first, the caller's teams' only."""
    stmt = scope_experiments(select(Experiment), caller)
    if filters.states:
        counts = _counts()
        stmt = stmt.join(counts, counts.c.experiment_id == Experiment.id).where(
            or_(*(_state_condition(counts, s) for s in filters.states))
        )
    if filters.name:
        stmt = stmt.where(func.lower(Experiment.name).contains(filters.name.lower(), autoescape=True))
    if filters.created_by:
        stmt = stmt.join(User, User.id == Experiment.created_by_id).where(User.username == filters.created_by)
    total = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = list(session.scalars(stmt.order_by(Experiment.id.desc()).limit(limit).offset(offset)))
    statuses = _statuses(session, [e.id for e in rows])
    items = [ExperimentOut(**_out(e, statuses[e.id])) for e in rows]
    return ExperimentPage(items=items, total=total, limit=limit, offset=offset)


def note_out(note: ExperimentNote) -> NoteOut:
    return NoteOut(
        id=note.id, author=note.author_name, body=note.body, html=markdown_html(note.body), created_at=note.created_at
    )


def cell_jobs(session: Session, experiment_id: int) -> list[Job]:
    """The experiment's jobs in queue order (their ids follow it)."""
    return list(session.scalars(select(Job).where(Job.experiment_id == experiment_id).order_by(Job.id)))


def cells_of(experiment: Experiment, jobs: Sequence[Job]) -> list[ExperimentCell]:
    """The cells in matrix order, each with its place in the queue order and its block."""
    paths = [axis["path"] for axis in experiment.axes]
    values = [axis["values"] for axis in experiment.axes]
    seeds = dict(zip(paths, values, strict=True)).get(SEED_PATH, [])

    def matrix_index(cell: dict[str, Any]) -> int:
        index = 0
        for path, options in zip(paths, values, strict=True):
            index = index * len(options) + options.index(cell[path])
        return index

    cells = [
        ExperimentCell(
            index=matrix_index(job.experiment_cell or {}),
            position=position,
            block=seeds.index(job.experiment_cell[SEED_PATH]) if job.experiment_cell and seeds else 0,
            job_id=job.id,
            name=job.name,
            values=job.experiment_cell or {},
            status=job.status,
            step=job.step,
            total_steps=job.total_steps,
        )
        for position, job in enumerate(jobs)
    ]
    return sorted(cells, key=lambda c: c.index)


def experiment_detail(session: Session, caller: Caller, experiment_id: int) -> ExperimentDetail:
    """The experiment with its cells, its live summary (services.experiment_summary) and its notes."""
    experiment = visible_experiment(session, caller, experiment_id)
    jobs = cell_jobs(session, experiment.id)
    statuses: dict[str, int] = {}
    for job in jobs:
        statuses[job.status] = statuses.get(job.status, 0) + 1
    cells = cells_of(experiment, jobs)
    return ExperimentDetail(
        **_out(experiment, statuses),
        base_spec=experiment.base_spec,
        order_seed=experiment.order_seed,
        gpu_model=experiment.gpu_model,
        cells=cells,
        warnings=verdict_warnings([(axis["path"], len(axis["values"])) for axis in experiment.axes]),
        summary=experiment_summary(session, caller, experiment, cells),
        notes=[note_out(note) for note in experiment.notes],
    )
