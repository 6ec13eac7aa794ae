"""Experiments: the team's list (filters, paging, live body), and one experiment's page: its live summary
(services.experiment_summary, the API's numbers), its cells, curves per cell group (drawn from
GET /api/v1/experiments/{id}/curves), the samples of every cell side by side, notes, cancel and retry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import ExperimentId, get_session, get_settings
from server.config import Settings
from server.schemas.experiments import ExperimentDetail, NoteIn
from server.services import pages
from server.services.auth import Caller
from server.services.errors import NotFound
from server.services.experiment_actions import add_note, cancel_experiment, retry_experiment
from server.services.experiment_reads import experiment_detail, list_experiments, parse_filters
from server.states import EXPERIMENT_STATES, TERMINAL_STATES
from web.pages.compare import synced_gallery
from web.pages.deps import PageNotFound, page_caller, require_csrf
from web.pages.page_write import page_write
from web.pages.render import error_page, render, templates

router = APIRouter()
PAGE_SIZE = 50
LIVE_STATES = ("queued", "running")
# The overlaid charts: one metric each, every cell group's mean over its seeds with a min-max band.
CHARTS: list[dict[str, Any]] = [
    {"key": "reward/mean", "title": "Reward (mean)"},
    {"key": "throughput/samples_per_s", "title": "Throughput", "unit": "samples/s"},
    {"key": "memory/peak_bytes", "title": "Peak memory", "unit": "bytes"},
    {"key": "time/step", "title": "Step time", "unit": "s"},
]


def cells_done(status_counts: dict[str, int]) -> int:
    """Cells whose job has ended (succeeded, failed or cancelled), of the experiment's status counts."""
    return sum(n for status, n in status_counts.items() if status in TERMINAL_STATES)


templates.env.globals["cells_done"] = cells_done


def _list_context(
    state: str = "",
    q: str = "",
    created_by: str = "",
    page: int = 1,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    """The filtered page of the list, for the page and for its polled body alike (a dependency of both)."""
    filters = parse_filters(state if state in EXPERIMENT_STATES else None, q.strip(), created_by.strip())
    page = max(page, 1)
    found = list_experiments(session, caller, filters, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    pages_total = max(1, -(-found.total // PAGE_SIZE))
    form = {"state": state, "q": q, "created_by": created_by}
    return {"experiments": found.items, "total": found.total, "page": page, "pages": pages_total, "filters": form}


@router.get("/experiments", response_class=HTMLResponse)
def experiments_page(request: Request, context: dict[str, Any] = Depends(_list_context)) -> HTMLResponse:
    return render(request, "experiments.html", {**context, "section": "experiments", "states": EXPERIMENT_STATES})


@router.get("/experiments/rows", response_class=HTMLResponse)
def experiment_rows(request: Request, context: dict[str, Any] = Depends(_list_context)) -> HTMLResponse:
    """The table body alone, polled by htmx and swapped when a filter changes."""
    return render(request, "partials/experiment_rows.html", context)


def _detail(session: Session, caller: Caller, experiment_id: int) -> ExperimentDetail:
    try:
        return experiment_detail(session, caller, experiment_id)
    except NotFound:
        raise PageNotFound(f"experiment #{experiment_id}") from None


def _live_context(experiment: ExperimentDetail, caller: Caller) -> dict[str, Any]:
    """What the polled part shows: the header with its actions, the summary and the cells."""
    mine = experiment.created_by == caller.username
    admin = caller.is_admin or any(t.team_name == experiment.team and t.role == "admin" for t in caller.teams)
    return {
        "experiment": experiment,
        "summary": experiment.summary,
        "rows": {row.id: row for row in experiment.summary.jobs},
        "live": experiment.state in LIVE_STATES,
        "may_change": caller.can_write and (mine or admin),
    }


def _gallery_context(session: Session, caller: Caller, experiment_id: int, i: int | None) -> dict[str, Any]:
    """The samples side by side: one column per visible cell's job, at the slider's step `i`."""
    experiment = _detail(session, caller, experiment_id)
    jobs = pages.visible_jobs(session, caller, [cell.job_id for cell in experiment.cells])
    cells = {cell.job_id: cell for cell in experiment.cells}
    return {"experiment": experiment, "cells": cells, "jobs": jobs, "gallery": synced_gallery(session, jobs, i)}


@router.get("/experiments/{experiment_id}", response_class=HTMLResponse)
def experiment_page(
    request: Request,
    experiment_id: ExperimentId,
    i: int | None = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    context = _gallery_context(session, caller, experiment_id, i)
    context.update(_live_context(context["experiment"], caller), section="experiments", charts=CHARTS)
    return render(request, "experiment.html", context)


@router.get("/experiments/{experiment_id}/live", response_class=HTMLResponse)
def experiment_live(
    request: Request,
    experiment_id: ExperimentId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The header, summary and cells alone: polled every few seconds while a cell is queued or running."""
    context = _live_context(_detail(session, caller, experiment_id), caller)
    return render(request, "partials/experiment_live.html", context)


@router.get("/experiments/{experiment_id}/gallery", response_class=HTMLResponse)
def experiment_gallery(
    request: Request,
    experiment_id: ExperimentId,
    i: int | None = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The synced gallery's table alone, swapped by its step slider."""
    context = _gallery_context(session, caller, experiment_id, i)
    return render(request, "partials/experiment_gallery.html", context)


def _act(
    request: Request, experiment_id: ExperimentId, caller: Caller, action: str, change: Callable[[], object]
) -> Response:
    def write() -> str:
        change()
        return f"/experiments/{experiment_id}"

    subject = f"experiment #{experiment_id}"
    return page_write(request, caller, subject, f"Cannot {action} {subject}", write)


@router.post("/experiments/{experiment_id}/cancel", dependencies=[Depends(require_csrf)])
def cancel(
    request: Request,
    experiment_id: ExperimentId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    return _act(request, experiment_id, caller, "cancel", lambda: cancel_experiment(session, caller, experiment_id))


@router.post("/experiments/{experiment_id}/retry", dependencies=[Depends(require_csrf)])
def retry(
    request: Request,
    experiment_id: ExperimentId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    return _act(
        request, experiment_id, caller, "retry", lambda: retry_experiment(session, caller, experiment_id, settings)
    )


@router.post("/experiments/{experiment_id}/notes", dependencies=[Depends(require_csrf)])
def note(
    request: Request,
    experiment_id: ExperimentId,
    body: str = Form(""),
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    """Add a note (Markdown, rendered safely by services.markdown_text) and show it at the end of the notes."""
    if not body.strip():
        return error_page(request, 422, "Empty note", "body: write something first")

    def write() -> str:
        added = add_note(session, caller, experiment_id, NoteIn(body=body[:20_000]))
        return f"/experiments/{experiment_id}#note-{added.id}"

    return page_write(request, caller, f"experiment #{experiment_id}", "Cannot add the note", write)
