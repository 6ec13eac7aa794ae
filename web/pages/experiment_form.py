"""The "New experiment" form: a base spec (a job's, a preset's or pasted as JSON or YAML), axes of a dotted path
and comma-separated values, the number of cells shown live before submitting, and fair timing.

Experiments are created by services.experiments.create_experiment, the API's own path; a refused cell's 422
(`cells[i].<field>`, `axes.<path>`, `spec.<field>`) is shown next to the axis or the spec it is about.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from server.api.deps import get_session, get_settings
from server.config import Settings
from server.schemas.experiments import ExperimentCreate
from server.services.auth import Caller
from server.services.errors import FieldErrors, NotFound
from server.services.experiment_matrix import Axis, cell_count, check_axes
from server.services.experiments import create_experiment, fair_timing_default
from server.services.job_reads import job_detail
from web.pages.deps import page_caller, require_csrf
from web.pages.page_write import form_write
from web.pages.render import render
from web.pages.submit import DEFAULT_PRESET, presets

router = APIRouter()
# A new experiment from a job: the example matrix, three executors by three seeds.
STARTING_AXES = [("executor.name", "native, lean_retain, jagg"), ("seed", "1, 2, 3")]


@dataclass
class AxisRow:
    """One axis as typed: its path and its comma-separated values, with the errors about it."""

    path: str
    values: str
    errors: list[str] = field(default_factory=list)

    def axis(self) -> Axis:
        return Axis(self.path.strip(), axis_values(self.values))


def axis_values(raw: str) -> list[Any]:
    """`1, 2, 3` → [1, 2, 3]: each value read as YAML, as `sfumato experiment submit --axis` reads it."""
    values: list[Any] = []
    for part in raw.split(","):
        try:
            values.append(yaml.safe_load(part) if part.strip() else "")
        except yaml.YAMLError:
            values.append(part.strip())
    return values


def typed_rows(form: Any) -> list[AxisRow]:
    """The form's axis rows (repeated `axis_path` and `axis_values` fields); empty rows dropped."""
    paths, values = form.getlist("axis_path"), form.getlist("axis_values")
    rows = [AxisRow(str(p), str(v)) for p, v in zip(paths, values, strict=False)]
    return [row for row in rows if row.path.strip() or row.values.strip()]


def parse_spec(text: str) -> dict[str, Any]:
    """The pasted base spec: JSON, or YAML (a superset of JSON), as a mapping; FieldErrors on `spec` otherwise."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise FieldErrors.one("spec", f"{where}not valid JSON or YAML") from None
    if not isinstance(data, dict):
        raise FieldErrors.one("spec", "a spec is a mapping of sections (model, algorithm, ...)")
    return data


def _place(errors: list[dict[str, str]], rows: list[AxisRow]) -> dict[str, list[str]]:
    """Put each error beside what it is about: an axis row (`axes.<path>`, or a cell's field that is an axis
    path), else the spec, the name or the team; what fits none stays under '' for the banner alone."""
    by_path = {row.path.strip(): row for row in rows}
    elsewhere: dict[str, list[str]] = {}
    for error in errors:
        name = error["field"]
        target = name
        if name.startswith("axes."):
            target = name.removeprefix("axes.")
        elif name.startswith("cells["):
            target = name.partition("].")[2]
        row = next((by_path[p] for p in by_path if target == p or target.startswith(p + ".")), None)
        if row is not None:
            row.errors.append(error["message"])
        elif name.startswith(("spec", "cells[")):
            elsewhere.setdefault("spec", []).append(
                error["message"] if name == "spec" else f"{name}: {error['message']}"
            )
        elif name in ("name", "team", "axes"):
            elsewhere.setdefault(name, []).append(error["message"])
    return elsewhere


def _page(
    request: Request,
    caller: Caller,
    values: dict[str, str],
    rows: list[AxisRow],
    errors: list[dict[str, str]] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    errors = errors or []
    context = {
        "section": "experiments",
        "values": values,
        "rows": [*rows, AxisRow("", "")],  # an empty row to add one more axis
        "errors": errors,
        "placed": _place(errors, rows),
        "teams": [t.team_name for t in caller.teams if t.role in ("member", "admin")],
        "presets": list(presets()),
        "preview": preview(rows, request.app.state.settings),
    }
    return render(request, "experiment_new.html", context, status_code=status_code)


def preview(rows: list[AxisRow], settings: Settings) -> dict[str, Any]:
    """The cell count the axes make (services.experiment_matrix), whether they sweep an executor (fair timing's
    default), and the first problem services.experiment_matrix.check_axes finds."""
    axes = [row.axis() for row in rows if row.path.strip()]
    sizes = [len(axis.values) for axis in axes]
    problem = ""
    try:
        check_axes(axes, fair_timing=False, max_cells=settings.max_experiment_cells)
    except FieldErrors as exc:
        problem = "; ".join(f"{e['field'].removeprefix('axes.')}: {e['message']}" for e in exc.detail)
    return {
        "count": cell_count(axes) if axes else 0,
        "sizes": sizes,
        "max": settings.max_experiment_cells,
        "problem": problem,
        "executor_axis": fair_timing_default(axes),
    }


@router.get("/experiments/new", response_class=HTMLResponse)
def new_experiment_page(
    request: Request,
    from_: int | None = Query(None, alias="from"),
    preset: str = "",
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The form from a job's spec (?from=12), a preset (?preset=...; the shapes demo by default), with the
    issue's starting matrix (three executors by three seeds)."""
    errors: list[dict[str, str]] = []
    spec: dict[str, Any] = {}
    if from_ is not None:
        try:
            spec = job_detail(session, caller, from_).spec
        except NotFound:
            errors.append({"field": "", "message": f"job #{from_} not found; starting from a preset"})
    if not spec:
        path = presets().get(preset or DEFAULT_PRESET)
        spec = json.loads(path.read_text()) if path else {}
    rows = [AxisRow(path, values) for path, values in STARTING_AXES]
    values = {
        "name": f"{spec.get('name', 'experiment')} by executor and seed",
        "spec": json.dumps(spec, indent=2),
        "fair_timing": "true",
        "source": f"job #{from_}" if from_ is not None and not errors else "",
    }
    return _page(request, caller, values, rows, errors)


@router.get("/experiments/new/axis-row", response_class=HTMLResponse)
def axis_row(request: Request, caller: Caller = Depends(page_caller)) -> HTMLResponse:
    """One more empty axis row ("Add axis")."""
    return render(request, "partials/experiment_axis_row.html", {"row": AxisRow("", "")})


@router.post("/experiments/new/preview", response_class=HTMLResponse, dependencies=[Depends(require_csrf)])
async def preview_fragment(request: Request, caller: Caller = Depends(page_caller)) -> HTMLResponse:
    """The live cell count: what the axes typed so far make (swapped by htmx as they change)."""
    rows = typed_rows(await request.form())
    return render(request, "partials/experiment_preview.html", {"preview": preview(rows, request.app.state.settings)})


@router.post("/experiments/new", dependencies=[Depends(require_csrf)])
async def submit_experiment(
    request: Request,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    """Create the experiment and go to its page; on any error the form again, its messages by their fields."""
    form = await request.form()
    values = {k: v for k, v in form.items() if isinstance(v, str) and k not in ("axis_path", "axis_values")}
    rows = typed_rows(form)

    def write() -> str:
        body = {
            "name": values.get("name", ""),
            "spec": parse_spec(values.get("spec", "")),
            "axes": [{"path": axis.path, "values": axis.values} for axis in (row.axis() for row in rows)],
            "fair_timing": values.get("fair_timing") == "true",
        }
        try:
            request_body = ExperimentCreate.model_validate(body)
        except ValidationError as exc:
            raise FieldErrors([_field_error(e, rows) for e in exc.errors()]) from None
        experiment = create_experiment(session, caller, request_body, settings, values.get("team") or None)
        return f"/experiments/{experiment.id}"

    target, errors = form_write(caller, write)
    if target:
        return RedirectResponse(target, status_code=303)
    return _page(request, caller, values, rows, errors, status_code=422)


def _field_error(error: Any, rows: list[AxisRow]) -> dict[str, str]:
    """A schema error as the form names it: `axes.<path>` for an axis row (by its typed path), else the field."""
    loc = [str(part) for part in error["loc"]]
    if loc[:1] == ["axes"] and len(loc) > 1 and loc[1].isdigit() and int(loc[1]) < len(rows):
        path = rows[int(loc[1])].path.strip()
        return {"field": f"axes.{path}", "message": f"{'.'.join(loc[2:]) or 'axis'}: {error['msg']}"}
    return {"field": ".".join(loc), "message": error["msg"]}
