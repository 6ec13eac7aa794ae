"""The job page's Export form: queue an export of one of the job's checkpoints (services.exports decides what may
be exported and by whom), then back to the job page's exports. Every POST checks CSRF."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from server.api.deps import JobId, get_session
from server.config import Settings
from server.schemas.exports import ExportRequest
from server.services import exports
from server.services.auth import Caller
from server.services.errors import FieldErrors
from trainer.spec import spec_errors
from web.pages.account import form_fields
from web.pages.deps import page_caller, require_csrf
from web.pages.page_write import page_write

router = APIRouter()


@router.post("/jobs/{job_id}/exports", dependencies=[Depends(require_csrf)])
async def request_export(
    request: Request, job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    form = await form_fields(request)
    settings: Settings = request.app.state.settings

    def write() -> str:
        try:
            body = ExportRequest.model_validate({"format": form.get("format", ""), "step": form.get("step") or None})
        except ValidationError as exc:
            raise FieldErrors(spec_errors(exc)) from None
        exports.request_export(session, caller, settings, job_id, body)
        return f"/jobs/{job_id}#exports"

    return page_write(request, caller, f"job #{job_id}", "Export not queued", write)
