"""Teams, their members and audit log; users (server admins). The services decide who may do what
(services.scoping); these pages show their answers. Every POST checks CSRF."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from server.api.deps import get_session, get_settings
from server.config import Settings
from server.schemas.accounts import MemberAdd, MemberRole, TeamCreate, UserChange, UserCreate
from server.schemas.artifacts import RetentionChange
from server.schemas.common import MAX_INT32
from server.schemas.webhooks import WebhookCreate
from server.services import accounts, audit, offboarding, webhooks
from server.services.artifact_retention import set_retention, storage_of
from server.services.audit import AUDIT_ACTIONS
from server.services.auth import Caller
from server.services.errors import Forbidden, NotFound, ServiceError
from server.services.scoping import ensure_server_admin, ensure_team_admin, team_role, visible_team
from web.pages.account import form_fields, messages
from web.pages.deps import PageNotFound, page_caller, require_csrf
from web.pages.page_write import page_write
from web.pages.render import error_page, render

router = APIRouter()
AUDIT_PAGE = 100
PageId = Annotated[int, Path(ge=1, le=MAX_INT32)]


def _teams_page(request: Request, session: Session, caller: Caller, errors: list[str], status_code: int) -> Response:
    context = {"section": "teams", "teams": accounts.list_teams(session, caller).items, "errors": errors}
    return render(request, "teams.html", context, status_code=status_code)


@router.get("/teams", response_class=HTMLResponse)
def teams_page(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    return _teams_page(request, session, caller, [], 200)


@router.post("/teams", dependencies=[Depends(require_csrf)])
async def create_team(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    form = await form_fields(request)
    try:
        team = accounts.create_team(session, caller, TeamCreate.model_validate({"name": form.get("name", "")}))
    except (ServiceError, ValidationError) as exc:
        status_code = exc.status_code if isinstance(exc, ServiceError) else 422
        return _teams_page(request, session, caller, messages(exc), status_code)
    return RedirectResponse(f"/teams/{team.id}", status_code=303)


def _team_page(
    request: Request,
    session: Session,
    caller: Caller,
    team_id: int,
    errors: list[str],
    status_code: int = 200,
    created_secret: str | None = None,
) -> Response:
    try:
        team = visible_team(session, caller, team_id)
    except NotFound:
        raise PageNotFound(f"team #{team_id}") from None
    context: dict[str, Any] = {
        "section": "teams",
        "team": team,
        "members": accounts.list_members(session, caller, team_id).items,
        "manage": caller.can_write and (caller.is_admin or team_role(caller, team_id) == "admin"),
        "webhooks": [
            (w, webhooks.list_deliveries(session, caller, team_id, w.id).items)
            for w in webhooks.list_webhooks(session, caller, team_id).items
        ],
        "created_secret": created_secret,
        "storage": storage_of(session, caller, team_id),
        "errors": errors,
    }
    return render(request, "team.html", context, status_code=status_code)


@router.get("/teams/{team_id}", response_class=HTMLResponse)
def team_page(
    request: Request, team_id: PageId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    return _team_page(request, session, caller, team_id, [])


async def _member_change(
    request: Request, session: Session, caller: Caller, team_id: int, change: str, user_id: int | None = None
) -> Response:
    """Add a member, change a role or remove a member; errors re-show the team page."""
    try:
        visible_team(session, caller, team_id)
    except NotFound:
        raise PageNotFound(f"team #{team_id}") from None
    form = await form_fields(request)
    try:
        if change == "add":
            accounts.add_member(session, caller, team_id, MemberAdd.model_validate(form))
        elif change == "role" and user_id is not None:
            accounts.set_member_role(session, caller, team_id, user_id, MemberRole.model_validate(form).role)
        elif user_id is not None:
            accounts.remove_member(session, caller, team_id, user_id)
    except (ServiceError, ValidationError) as exc:
        status_code = exc.status_code if isinstance(exc, ServiceError) else 422
        return _team_page(request, session, caller, team_id, messages(exc), status_code)
    return RedirectResponse(f"/teams/{team_id}", status_code=303)


@router.post("/teams/{team_id}/members", dependencies=[Depends(require_csrf)])
async def add_member(
    request: Request, team_id: PageId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    return await _member_change(request, session, caller, team_id, "add")


@router.post("/teams/{team_id}/members/{user_id}/role", dependencies=[Depends(require_csrf)])
async def set_role(
    request: Request,
    team_id: PageId,
    user_id: PageId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    return await _member_change(request, session, caller, team_id, "role", user_id)


@router.post("/teams/{team_id}/members/{user_id}/remove", dependencies=[Depends(require_csrf)])
async def remove_member(
    request: Request,
    team_id: PageId,
    user_id: PageId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    return await _member_change(request, session, caller, team_id, "remove", user_id)


@router.post("/teams/{team_id}/webhooks", dependencies=[Depends(require_csrf)])
async def create_webhook(
    request: Request,
    team_id: PageId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    """A webhook for the team; the page shows its signing secret this once."""

    def create(form: dict[str, str]) -> Response:
        created = webhooks.create_webhook(session, caller, settings, team_id, WebhookCreate.model_validate(form))
        return _team_page(request, session, caller, team_id, [], 201, created_secret=created.secret)

    return await _team_form(request, session, caller, team_id, create)


@router.post("/teams/{team_id}/artifact-retention", dependencies=[Depends(require_csrf)])
async def change_retention(
    request: Request,
    team_id: PageId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    """The checkpoints kept per job (an empty field: all), as PATCH /api/v1/teams/{id}/artifact-storage."""

    def change(form: dict[str, str]) -> Response:
        keep = form.get("checkpoint_retention", "").strip() or None
        retention = RetentionChange.model_validate({"checkpoint_retention": keep})
        set_retention(session, settings, caller, team_id, retention)
        return RedirectResponse(f"/teams/{team_id}#artifacts", status_code=303)

    return await _team_form(request, session, caller, team_id, change)


async def _team_form(
    request: Request, session: Session, caller: Caller, team_id: int, write: Callable[[dict[str, str]], Response]
) -> Response:
    """A form of the team page: the 404 page for a team the caller cannot see; else `write` with the form's fields,
    and a refusal shown on the team page beside the rest (422 for a field the schema refuses)."""
    try:
        visible_team(session, caller, team_id)
    except NotFound:
        raise PageNotFound(f"team #{team_id}") from None
    form = await form_fields(request)
    try:
        return write(form)
    except (ServiceError, ValidationError) as exc:
        status_code = exc.status_code if isinstance(exc, ServiceError) else 422
        return _team_page(request, session, caller, team_id, messages(exc), status_code)


def _webhook_change(
    request: Request,
    session: Session,
    caller: Caller,
    team_id: int,
    webhook_id: int,
    change: Callable[[Session, Caller, int, int], object],
    refused: str,
) -> Response:
    """Test or delete a webhook, then back to the team page."""

    def write() -> str:
        change(session, caller, team_id, webhook_id)
        return f"/teams/{team_id}"

    return page_write(request, caller, f"webhook #{webhook_id}", refused, write)


@router.post("/teams/{team_id}/webhooks/{webhook_id}/test", dependencies=[Depends(require_csrf)])
def send_test(
    request: Request,
    team_id: PageId,
    webhook_id: PageId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    """Queue a test delivery; the button's htmx request swaps in the webhook's section of the page it lands on."""
    change = webhooks.queue_test_delivery
    return _webhook_change(request, session, caller, team_id, webhook_id, change, "Test not sent")


@router.post("/teams/{team_id}/webhooks/{webhook_id}/delete", dependencies=[Depends(require_csrf)])
def delete_webhook(
    request: Request,
    team_id: PageId,
    webhook_id: PageId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    change = webhooks.delete_webhook
    return _webhook_change(request, session, caller, team_id, webhook_id, change, "Webhook not deleted")


@router.get("/teams/{team_id}/audit", response_class=HTMLResponse)
def audit_page(
    request: Request,
    team_id: PageId,
    action: str = "",
    offset: int = Query(0, ge=0, le=10_000_000),
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    """The team's audit log, newest first, for its admins."""
    try:
        team = ensure_team_admin(session, caller, team_id)
    except NotFound:
        raise PageNotFound(f"team #{team_id}") from None
    except Forbidden as exc:
        return error_page(request, 403, "Team admins only", str(exc.detail))
    action = action if action in AUDIT_ACTIONS else ""
    page = audit.team_audit(session, team_id, action=action or None, limit=AUDIT_PAGE, offset=offset)
    context = {
        "section": "teams",
        "team": team,
        "events": page.items,
        "total": page.total,
        "offset": offset,
        "page_size": AUDIT_PAGE,
        "action": action,
        "actions": AUDIT_ACTIONS,
    }
    return render(request, "audit.html", context)


def _users_page(request: Request, session: Session, caller: Caller, errors: list[str], status_code: int) -> Response:
    try:
        users = accounts.list_users(session, caller).items
    except Forbidden as exc:
        return error_page(request, 403, "Server admins only", str(exc.detail))
    context = {
        "section": "teams",
        "users": users,
        "teams": accounts.list_teams(session, caller).items,
        "errors": errors,
    }
    return render(request, "users.html", context, status_code=status_code)


@router.get("/admin/users", response_class=HTMLResponse)
def users_page(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    return _users_page(request, session, caller, [], 200)


@router.post("/admin/users", dependencies=[Depends(require_csrf)])
async def create_user(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    form = await form_fields(request)
    body = {
        "username": form.get("username", ""),
        "password": form.get("password") or None,
        "is_admin": form.get("is_admin") == "on",
        "team_id": form.get("team_id") or None,
        "role": form.get("role", "member"),
    }
    try:
        ensure_server_admin(caller)
        accounts.create_user(session, caller, UserCreate.model_validate(body))
    except (ServiceError, ValidationError) as exc:
        status_code = exc.status_code if isinstance(exc, ServiceError) else 422
        return _users_page(request, session, caller, messages(exc), status_code)
    return RedirectResponse("/admin/users", status_code=303)


@router.post("/admin/users/{user_id}/access", dependencies=[Depends(require_csrf)])
async def change_access(
    request: Request,
    user_id: PageId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    """The Users page's Disable / Enable button (offboarding: services.offboarding)."""
    form = await form_fields(request)
    try:
        body = UserChange.model_validate({"disabled": form.get("disabled", "")})
        offboarding.change_user(session, caller, user_id, body)
    except (ServiceError, ValidationError) as exc:
        status_code = exc.status_code if isinstance(exc, ServiceError) else 422
        return _users_page(request, session, caller, messages(exc), status_code)
    return RedirectResponse("/admin/users", status_code=303)
