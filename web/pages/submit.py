"""Submit a job: a form built from the spec schema (or a JSON editor), presets, clone from a job.

Jobs are created by services.jobs.submit_job, the API's own path; its field errors are shown next to the fields.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import get_session, get_settings
from server.config import Settings
from server.services.auth import Caller
from server.services.errors import NotFound
from server.services.job_reads import job_detail
from server.services.jobs import submit_job
from web.pages.deps import page_caller, require_csrf
from web.pages.page_write import form_write
from web.pages.render import render
from web.pages.spec_form import build_sections, default_values, flatten, form_to_spec, spec_from_form

router = APIRouter()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEFAULT_PRESET = "shapes-demo"  # the README's first job: a new job's form starts from it when it is shipped


def presets() -> dict[str, Path]:
    """The example specs shipped in examples/*.json, by file stem."""
    return {p.stem: p for p in sorted(EXAMPLES.glob("*.json"))} if EXAMPLES.is_dir() else {}


def submit_form_page(
    request: Request,
    caller: Caller,
    *,
    mode: str,
    values: dict[str, str],
    spec_json: str,
    errors: list[dict[str, str]] | None = None,
    source: str = "",
    team: str = "",
    status_code: int = 200,
    refused: str = "The job was not submitted",
) -> HTMLResponse:
    keep = "&".join(f"{k}={v}" for k, v in request.query_params.items() if k in ("preset", "from") and v.isascii())
    by_field: dict[str, list[str]] = {}
    for error in errors or []:
        by_field.setdefault(error["field"], []).append(error["message"])
    sections = build_sections(values, by_field) if mode == "form" else []
    field_names = {f.name for s in sections for f in s.fields}
    context = {
        "section": "submit",
        "mode": mode,
        "sections": sections,
        "spec_json": spec_json,
        "errors": errors or [],
        "refused": refused,  # the error banner's heading
        "field_names": field_names,  # the banner links each error to its field
        "presets": list(presets()),
        "source": source,
        "teams": [t.team_name for t in caller.teams if t.role in ("member", "admin")],
        "team": team,
        "memory_budget": values.get("memory_budget", ""),
        "tabs": {"form": f"/submit?{keep}", "json": f"/submit?mode=json&{keep}"},
    }
    return render(request, "submit.html", context, status_code=status_code)


@router.get("/submit", response_class=HTMLResponse)
def submit_page(
    request: Request,
    mode: str = "form",
    preset: str = "",
    from_: int | None = Query(None, alias="from"),
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """A new job's form: a preset (?preset=tiny-native; by default the shapes demo, else the spec defaults),
    or a job's spec (?from=12)."""
    spec: dict[str, Any] | None = None
    source = ""
    errors: list[dict[str, str]] = []
    if from_ is not None:
        try:
            spec = job_detail(session, caller, from_).spec
            source = f"a clone of job #{from_}"
        except NotFound:
            errors.append({"field": "", "message": f"job #{from_} not found; starting from the defaults"})
    elif preset or DEFAULT_PRESET in presets():
        preset = preset or DEFAULT_PRESET
        path = presets().get(preset)
        if path is None:
            errors.append({"field": "", "message": f"no preset {preset!r}; starting from the defaults"})
        else:
            spec = json.loads(path.read_text())
            source = f"the {preset} preset"
    values = default_values()
    if spec is not None:
        values.update(flatten(spec))
    spec_json = json.dumps(spec if spec is not None else form_to_spec(values), indent=2)
    mode = "json" if mode == "json" else "form"
    return submit_form_page(
        request, caller, mode=mode, values=values, spec_json=spec_json, errors=errors, source=source
    )


@router.post("/submit", dependencies=[Depends(require_csrf)])
async def submit(
    request: Request,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    """Create the job and go to its page; on any error show the form again with the messages, storing nothing."""
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    mode = "json" if form.get("mode") == "json" else "form"
    team = form.get("team") or None
    data, spec_json, errors = spec_from_form(form)
    if not errors:
        target, errors = form_write(caller, lambda: f"/jobs/{submit_job(session, caller, data, settings, team).id}")
        if target:
            return RedirectResponse(target, status_code=303)
    return submit_form_page(
        request, caller, mode=mode, values=form, spec_json=spec_json, errors=errors, team=team or "", status_code=422
    )
