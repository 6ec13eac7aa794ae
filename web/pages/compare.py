"""Compare jobs: the compare answer (services.compare) as a table with its warnings, overlaid curves coloured by
executor, and the samples side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from server.api.deps import get_session
from server.services import compare, pages
from server.services.auth import Caller
from server.services.current_points import current_points_of_jobs
from server.services.errors import FieldErrors
from server.services.job_reads import JobFilters, list_jobs
from server.services.time_to_reward import parse_reward_target
from web.pages.deps import page_caller
from web.pages.gallery import pick
from web.pages.render import render

if TYPE_CHECKING:
    from server.services.pages import Job, Sample

router = APIRouter()
# Overlaid charts: one per metric key.
CHARTS: list[dict[str, Any]] = [
    {"key": "reward/mean", "title": "Reward (mean)"},
    {"key": "throughput/samples_per_s", "title": "Throughput", "unit": "samples/s"},
    {"key": "memory/peak_bytes", "title": "Peak memory", "unit": "bytes"},
    {"key": "time/step", "title": "Step time", "unit": "s"},
    {"key": "loss", "title": "Loss"},
    {"key": "kl", "title": "KL"},
]


def synced_gallery(session: Session, jobs: list[Job], index: int | None) -> dict[str, Any]:
    """One eval prompt per row, one job per column, all at the chosen step (each job's latest sample at or
    before it), with the lowest seed so that the images are comparable; three statements for all the jobs."""
    ids = [job.id for job in jobs]
    currents = current_points_of_jobs(session, ids)
    own = pages.sample_steps_of_jobs(session, ids, currents)
    steps = sorted(set().union(*own.values()))
    if not steps:
        return {"steps": []}
    index = pick(steps, index, None)
    at = {job_id: [s for s in job_steps if s <= steps[index]][-1:] for job_id, job_steps in own.items()}
    found = pages.samples_at_of_jobs(session, at, currents)
    cells: dict[tuple[str, int], Sample] = {}
    for job in jobs:
        for sample in found[job.id]:
            current = cells.get((sample.prompt, job.id))
            if current is None or current.seed == sample.seed:  # lowest seed; a later attempt replaces
                cells[(sample.prompt, job.id)] = sample
    prompts = list(dict.fromkeys(prompt for prompt, _ in cells))
    return {"steps": steps, "index": index, "current": steps[index], "prompts": prompts, "cells": cells}


@router.get("/compare/gallery", response_class=HTMLResponse)
def compare_gallery(
    request: Request,
    job: list[int] = Query([]),
    i: int | None = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The synced gallery's grid alone, swapped by its step slider."""
    jobs = pages.visible_jobs(session, caller, job[: compare.MAX_JOBS])
    return render(request, "partials/compare_gallery.html", {"jobs": jobs, **synced_gallery(session, jobs, i)})


@router.get("/compare", response_class=HTMLResponse)
def compare_page(
    request: Request,
    job: list[int] = Query([]),
    axis: str = "step",
    i: int | None = None,
    reward_target: str | None = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The compare answer for the picked jobs; `reward_target` is R of the time-to-reward column (a value that is
    not a number is refused beside the control, 422, and the default R is shown)."""
    jobs = pages.visible_jobs(session, caller, job[: compare.MAX_JOBS])
    context: dict[str, Any] = {"section": "compare", "jobs": jobs, "axis": "time" if axis == "time" else "step"}
    status = 200
    try:
        target = parse_reward_target(reward_target)
    except FieldErrors as exc:
        target, status = None, exc.status_code
        context["target_error"] = f"{exc.args[0][0]['field']}: {exc.args[0][0]['message']}"
    context["reward_target_input"] = reward_target or ""
    if len(jobs) < 2:
        context["recent"] = list_jobs(session, caller, JobFilters(), limit=50).items
        context["picked"] = {j.id for j in jobs}
    else:
        context.update(
            comparison=compare.compare(session, caller, [j.id for j in jobs], reward_target=target),
            charts=CHARTS,
            jobs_json=[{"id": j.id, "name": j.name, "executor": j.executor} for j in jobs],
            gallery=synced_gallery(session, jobs, i),
        )
    return render(request, "compare.html", context, status_code=status)
