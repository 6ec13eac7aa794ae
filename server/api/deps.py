"""FastAPI dependencies: settings, a database session, and who is calling (user or trainer); and the one-trip
way of running a read as the caller (`run_as_caller`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any, Concatenate, ParamSpec, TypeVar

import orjson
from fastapi import Depends, HTTPException, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from server.config import Settings
from server.models import Job
from server.schemas.common import MAX_INT32
from server.services.auth import Caller, authenticate_api_token, authenticate_job_token
from server.services.errors import Forbidden, Unauthorized
from server.services.scoping import get_visible_job

user_bearer = HTTPBearer(scheme_name="UserToken", description="a user API token (sfu_...)", auto_error=False)
job_bearer = HTTPBearer(scheme_name="JobToken", description="the per-job trainer token (sfj_...)", auto_error=False)

JobId = Annotated[int, Path(ge=1, le=MAX_INT32, description="job id")]
SampleId = Annotated[int, Path(ge=1, le=MAX_INT32, description="sample id")]
Bearer = HTTPAuthorizationCredentials | None
UserCredentials = Annotated[Bearer, Depends(user_bearer)]
P = ParamSpec("P")
T = TypeVar("T")


def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def get_session(request: Request) -> Iterator[Session]:
    """One session per request; services commit, and anything uncommitted is rolled back on close."""
    session: Session = request.app.state.sessionmaker()
    try:
        yield session
    finally:
        session.close()


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]


def _token(credentials: Bearer) -> str:
    if credentials is None or not credentials.credentials:
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    return credentials.credentials


def current_caller(session: SessionDep, credentials: UserCredentials) -> Caller:
    return authenticate_api_token(session, _token(credentials))


async def run_identified(
    request: Request,
    identify: Callable[[Session], Caller],
    work: Callable[Concatenate[Session, Caller, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """`work(session, identify(session), ...)` in one trip to the thread pool: open a session, find the caller,
    work, close. The session autocommits (app.state.read_sessionmaker): for reads, and writes of one statement.

    For the reads dashboards and scripts poll most (`async` routes). FastAPI runs each sync dependency, the
    endpoint and the response check in a trip of their own, about 0.3 ms of CPU each on a 2-core machine:
    five for a read declared with SessionDep and CallerDep."""

    def in_session() -> T:
        session: Session = request.app.state.read_sessionmaker()
        try:
            return work(session, identify(session), *args, **kwargs)
        finally:
            session.close()

    return await run_in_threadpool(in_session)


async def run_as_caller(
    request: Request,
    credentials: Bearer,
    work: Callable[Concatenate[Session, Caller, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """run_identified for a route taking UserCredentials: the caller of the API token."""
    token = _token(credentials)
    return await run_identified(request, lambda session: authenticate_api_token(session, token), work, *args, **kwargs)


CallerDep = Annotated[Caller, Depends(current_caller)]


def writing_caller(caller: CallerDep) -> Caller:
    """Mutating calls refuse read-only tokens."""
    if not caller.can_write:
        raise Forbidden("this token is read-only")
    return caller


WriterDep = Annotated[Caller, Depends(writing_caller)]


def visible_job(job_id: JobId, session: SessionDep, caller: CallerDep) -> Job:
    """The path's job if the caller's teams may see it; 404 otherwise (see services.scoping)."""
    return get_visible_job(session, caller, job_id)


VisibleJob = Annotated[Job, Depends(visible_job)]


def ingest_job(job_id: JobId, session: SessionDep, credentials: Annotated[Bearer, Depends(job_bearer)]) -> Job:
    return authenticate_job_token(session, _token(credentials), job_id)


IngestJob = Annotated[Job, Depends(ingest_job)]


async def json_body(request: Request) -> Any:
    """The body parsed as JSON whatever its Content-Type, so `curl -d @spec.json` works as documented."""
    raw = await request.body()
    if not raw.strip():
        raise HTTPException(400, "empty body: send the job spec as JSON")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise HTTPException(400, f"malformed JSON body: {exc}") from exc
