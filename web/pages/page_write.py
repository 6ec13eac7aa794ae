"""A page's write (cancel, retry, a note, a submit from elsewhere): run the service call and go where it says.
Every such form answers a read-only session, a missing or hidden subject and a refusal the same way."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from server.services.auth import Caller
from server.services.errors import FieldErrors, NotFound, ServiceError
from web.pages.render import error_page, not_found


def page_write(request: Request, caller: Caller, subject: str, refused: str, write: Callable[[], str]) -> Response:
    """`write` changes something and returns the address to show next (a 303 there). Before it runs, a read-only
    session gets a 403 page; after, NotFound is the 404 page of `subject` ("job #3"), FieldErrors a 422 page naming
    each field, any other refusal a page titled `refused` with the service's status and message."""
    if not caller.can_write:
        return error_page(request, 403, "Read-only session", "You logged in with a read-only token.")
    try:
        target = write()
    except NotFound:
        return not_found(request, subject)
    except FieldErrors as exc:
        return error_page(request, 422, refused, "; ".join(f"{e['field']}: {e['message']}" for e in exc.detail))
    except ServiceError as exc:
        return error_page(request, exc.status_code, refused, str(exc.detail))
    return RedirectResponse(target, status_code=303)


def form_write(caller: Caller, write: Callable[[], str]) -> tuple[str | None, list[dict[str, str]]]:
    """A form's write (submit, advise, a new experiment): (the address to go to, no errors), or (None, the errors
    to show beside the form's fields) for a read-only session or a refusal, nothing stored."""
    if not caller.can_write:
        return None, [{"field": "", "message": "this session is read-only (logged in with a read token)"}]
    try:
        return write(), []
    except FieldErrors as exc:
        return None, list(exc.detail)
    except ServiceError as exc:
        return None, [{"field": "", "message": str(exc.detail)}]
