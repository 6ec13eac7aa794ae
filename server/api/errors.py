"""Every error leaves as JSON `{"detail": ...}`: HTTP errors, validation errors, service errors, crashes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException

from server.api.responses import OrjsonResponse
from server.services.errors import ServiceError, Unauthorized

log = logging.getLogger(__name__)

_LOCATIONS = {"body", "query", "path", "header", "cookie"}


def field_name(loc: Sequence[Any]) -> str:
    """("body", "steps", 0, "values") → "steps.0.values"; the request part is noise to a caller."""
    parts = [str(p) for p in loc]
    if len(parts) > 1 and parts[0] in _LOCATIONS:
        parts = parts[1:]
    return ".".join(parts)


async def _http_error(_request: Request, exc: Exception) -> OrjsonResponse:
    assert isinstance(exc, StarletteHTTPException)
    return OrjsonResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)


async def _validation_error(_request: Request, exc: Exception) -> OrjsonResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    malformed = [e for e in errors if e.get("type") == "json_invalid"]
    if malformed:
        reason = (malformed[0].get("ctx") or {}).get("error", "not valid JSON")
        return OrjsonResponse({"detail": f"malformed JSON body: {reason}"}, status_code=400)
    detail = [{"field": field_name(e["loc"]), "message": str(e["msg"]).removeprefix("Value error, ")} for e in errors]
    return OrjsonResponse({"detail": detail}, status_code=422)


async def _service_error(_request: Request, exc: Exception) -> OrjsonResponse:
    assert isinstance(exc, ServiceError)
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
    body = {"detail": exc.detail} if exc.code is None else {"detail": exc.detail, "code": exc.code}
    return OrjsonResponse(body, status_code=exc.status_code, headers=headers)


async def _unstorable(_request: Request, exc: Exception) -> OrjsonResponse:
    """A value the database refuses (a NUL character in text on PostgreSQL, a number out of range) came from
    the request: a 422, not a crash."""
    log.info("database refused a value of the request: %s", exc)
    return OrjsonResponse({"detail": "a value in the request cannot be stored (a NUL character, or out of range)"}, 422)


async def _crash(request: Request, exc: Exception) -> OrjsonResponse:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return OrjsonResponse({"detail": "internal server error"}, status_code=500)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(DataError, _unstorable)
    app.add_exception_handler(psycopg.DataError, _unstorable)  # raised bare by the COPY path of metric ingestion
    app.add_exception_handler(Exception, _crash)
