"""A job's eval samples: rows are prompts, columns are steps around the one the slider picks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from server.api.deps import JobId, get_session
from server.services import pages
from server.services.auth import Caller
from web.pages.deps import page_caller, visible_page_job
from web.pages.render import render

if TYPE_CHECKING:
    from server.services.pages import Sample

router = APIRouter()
COLUMNS = 5
BEFORE_STEP = 0  # the trainer's eval samples of the base model, before its first step


@dataclass
class GalleryRow:
    prompt: str
    cells: dict[int, list[Sample]] = field(default_factory=dict)


def pick(steps: Sequence[int], index: int | None, step: int | None) -> int:
    """The slider index: given directly, or the last sampled step at or before `step`; else the last one."""
    if index is not None:
        return min(max(index, 0), len(steps) - 1)
    if step is not None:
        before = [i for i, s in enumerate(steps) if s <= step]
        return before[-1] if before else 0
    return len(steps) - 1


def window(steps: Sequence[int], index: int, size: int = COLUMNS) -> list[int]:
    """`size` neighbouring steps with the chosen one as central as the ends allow."""
    start = min(max(0, index - size // 2), max(0, len(steps) - size))
    return list(steps[start : start + size])


def with_before(steps: Sequence[int], columns: list[int]) -> list[int]:
    """The columns with the base model's samples (step BEFORE_STEP, logged before training) pinned first, so every
    window of the slider shows where the job started from."""
    return columns if BEFORE_STEP not in steps or BEFORE_STEP in columns else [BEFORE_STEP, *columns]


def grid(session: Session, job_id: int, steps: Sequence[int], index: int) -> tuple[list[int], list[GalleryRow]]:
    """The columns (the "before" step, then steps around the chosen one) and rows (prompts, in first-seen order)."""
    columns = with_before(steps, window(steps, index))
    rows: dict[str, GalleryRow] = {}
    for sample in pages.samples_at(session, job_id, columns):
        cell = rows.setdefault(sample.prompt, GalleryRow(sample.prompt)).cells.setdefault(sample.step, [])
        cell[:] = [s for s in cell if s.seed != sample.seed] + [sample]  # a later attempt replaces an earlier one
    return columns, list(rows.values())


def _context(session: Session, job_id: int, i: int | None, step: int | None) -> dict[str, object]:
    steps = pages.sample_steps(session, job_id)
    if not steps:
        return {"steps": [], "index": 0, "columns": [], "rows": [], "current": None, "before_step": BEFORE_STEP}
    index = pick(steps, i, step)
    columns, rows = grid(session, job_id, steps, index)
    return {
        "steps": steps,
        "index": index,
        "columns": columns,
        "rows": rows,
        "current": steps[index],
        "before_step": BEFORE_STEP,
    }


@router.get("/jobs/{job_id}/gallery", response_class=HTMLResponse)
def gallery_page(
    request: Request,
    job_id: JobId,
    i: int | None = None,
    step: int | None = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    job = visible_page_job(session, caller, job_id)
    context = {"job": job, "section": "jobs", **_context(session, job.id, i, step)}
    return render(request, "gallery.html", context)


@router.get("/jobs/{job_id}/gallery/grid", response_class=HTMLResponse)
def gallery_grid(
    request: Request,
    job_id: JobId,
    i: int | None = None,
    step: int | None = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The grid alone: what the step slider swaps in, one request per move."""
    job = visible_page_job(session, caller, job_id)
    return render(request, "partials/gallery_grid.html", {"job": job, **_context(session, job.id, i, step)})
