"""Jinja2 environment, display filters, and the helpers every page renders through."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from server.api.page_session import PageSession, write_cookie
from server.services.samples import image_url
from server.services.side_by_side import SIDE_BY_SIDE_EXECUTORS

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
templates = Jinja2Templates(directory=TEMPLATES)


def _utc(value: datetime) -> datetime:
    """The database stores naive UTC; API schemas return aware UTC. Compare them as aware."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def ago(value: datetime | None) -> str:
    """'12 s ago', '5 min ago', '3 h ago', or a date for older times."""
    if value is None:
        return "—"
    seconds = (datetime.now(UTC) - _utc(value)).total_seconds()
    if seconds < 60:
        return f"{max(0, int(seconds))} s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return value.strftime("%Y-%m-%d %H:%M")


def duration(seconds: float | None) -> str:
    """'45 s', '12 min 03 s', '2 h 05 min'; '—' when unknown or not finite (a wall time stored as NaN or inf)."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def num(value: float | None, digits: int = 3) -> str:
    """A number with `digits` significant digits, '—' when missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}g}"


def times(value: float | None) -> str:
    """A speedup or bound: '1.60x' (with a multiplication sign), '—' when missing."""
    return "—" if value is None or not math.isfinite(value) else f"{value:.2f}\u00d7"


def size(value: float | None) -> str:
    """Bytes in the unit that fits, as the CLI shows them: '512 B', '7.6 GiB'."""
    if value is None:
        return "—"
    units, exponent = ("B", "KiB", "MiB", "GiB", "TiB"), 0
    while abs(value) >= 1024 and exponent < len(units) - 1:
        value, exponent = value / 1024, exponent + 1
    return f"{value:.0f} B" if exponent == 0 else f"{value:.1f} {units[exponent]}"


def gib(value: float | None) -> str:
    return "—" if value is None else f"{value / 2**30:.2f} GiB"


def stamp(value: datetime | None) -> str:
    return "—" if value is None else _utc(value).strftime("%Y-%m-%d %H:%M:%S UTC")


templates.env.filters.update(ago=ago, duration=duration, num=num, gib=gib, stamp=stamp, times=times, size=size)
templates.env.filters["json_pretty"] = lambda value: orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
# `tojson` through orjson (Jinja still makes the result safe inside HTML): the standard library's encoder was
# a third of a job page's rendering time.
templates.env.policies["json.dumps_function"] = lambda value: orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
templates.env.policies["json.dumps_kwargs"] = {}
# Sample images (and their thumbnails) come from the API's image route, reached with the page session cookie.
templates.env.globals["sample_image_url"] = image_url
templates.env.globals["side_by_side_executors"] = SIDE_BY_SIDE_EXECUTORS


def render(
    request: Request, name: str, context: dict[str, Any] | None = None, *, status_code: int = 200
) -> HTMLResponse:
    """Render a template with the page session (user, CSRF token) in its context."""
    ps: PageSession = request.state.page_session
    ctx = {"session": ps, "user": getattr(request.state, "user", None), "csrf_token": ps.csrf, **(context or {})}
    response = templates.TemplateResponse(request, name, ctx, status_code=status_code)
    write_cookie(request, response, ps)
    return response


def error_page(request: Request, status_code: int, title: str, message: str) -> HTMLResponse:
    context = {"code": status_code, "title": title, "message": message}
    return render(request, "error.html", context, status_code=status_code)


def not_found(request: Request, what: str) -> HTMLResponse:
    message = f"There is no {what}, or it belongs to a team you are not in."
    return error_page(request, 404, "Not found", message)
