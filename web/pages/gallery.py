"""A job's eval samples: rows are prompts, columns are steps around the one the slider picks."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from PIL import Image
from sqlalchemy.orm import Session

from server.api.deps import JobId, SampleId, get_session, get_settings
from server.config import Settings
from server.models import Job, Sample
from server.services import pages
from server.services.artifact_store import write_atomically
from server.services.auth import Caller
from server.services.errors import NotFound
from server.services.samples import sample_image
from server.services.scoping import get_visible_job
from web.pages.deps import page_caller, page_job
from web.pages.render import render

router = APIRouter()
COLUMNS = 5
THUMB_PX = 192
IMMUTABLE = {"Cache-Control": "private, max-age=31536000, immutable"}


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


def grid(session: Session, job_id: int, steps: Sequence[int], index: int) -> tuple[list[int], list[GalleryRow]]:
    """The columns (steps) and rows (prompts, in first-seen order) around the chosen step."""
    columns = window(steps, index)
    rows: dict[str, GalleryRow] = {}
    for sample in pages.samples_at(session, job_id, columns):
        cell = rows.setdefault(sample.prompt, GalleryRow(sample.prompt)).cells.setdefault(sample.step, [])
        cell[:] = [s for s in cell if s.seed != sample.seed] + [sample]  # a later attempt replaces an earlier one
    return columns, list(rows.values())


def _context(session: Session, job_id: int, i: int | None, step: int | None) -> dict[str, object]:
    steps = pages.sample_steps(session, job_id)
    if not steps:
        return {"steps": [], "index": 0, "columns": [], "rows": [], "current": None}
    index = pick(steps, i, step)
    columns, rows = grid(session, job_id, steps, index)
    return {"steps": steps, "index": index, "columns": columns, "rows": rows, "current": steps[index]}


@router.get("/jobs/{job_id}/gallery", response_class=HTMLResponse)
def gallery_page(
    request: Request,
    i: int | None = None,
    step: int | None = None,
    job: Job = Depends(page_job),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    context = {"job": job, "section": "jobs", **_context(session, job.id, i, step)}
    return render(request, "gallery.html", context)


@router.get("/jobs/{job_id}/gallery/grid", response_class=HTMLResponse)
def gallery_grid(
    request: Request,
    i: int | None = None,
    step: int | None = None,
    job: Job = Depends(page_job),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The grid alone: what the step slider swaps in, one request per move."""
    return render(request, "partials/gallery_grid.html", {"job": job, **_context(session, job.id, i, step)})


def thumbnail(path: Path) -> Path:
    """A small WebP of a sample, cached on disk beside it (`.thumbs/<name>.<px>.webp` in the sample's folder,
    so inside the artifact root) and made again when the sample is newer than it."""
    cached = path.parent / ".thumbs" / f"{path.name}.{THUMB_PX}.webp"
    try:
        if cached.stat().st_mtime >= path.stat().st_mtime:
            return cached
    except FileNotFoundError:
        pass
    with Image.open(path) as image:
        image.thumbnail((THUMB_PX, THUMB_PX))
        out = io.BytesIO()
        image.save(out, format="WEBP", quality=80)
    write_atomically(cached, out.getvalue())
    return cached


@router.get("/jobs/{job_id}/samples/{sample_id}/image")
def sample_file(
    job_id: JobId,
    sample_id: SampleId,
    thumb: bool = False,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    """A sample image for the pages (session cookie), full size or as a WebP thumbnail."""
    try:
        get_visible_job(session, caller, job_id)
        path, media_type = sample_image(session, settings, job_id, sample_id)
    except NotFound:
        return Response("not found", status_code=404, media_type="text/plain")
    if thumb:
        return FileResponse(thumbnail(Path(path)), media_type="image/webp", headers=IMMUTABLE)
    return FileResponse(path, media_type=media_type, headers=IMMUTABLE)
