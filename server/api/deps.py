"""FastAPI dependencies: settings, a database session, and who is calling (user or trainer); and the one-trip
way of running the calls made most (`in_one_trip`).

A user calls with an API token; a read (GET, HEAD) without one may also come from a logged-in page, by its
session cookie (server.api.page_session): the pages draw their charts and images from the API's own
handlers. Every other method needs the token, so a cookie alone never changes anything (no CSRF)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Annotated, Any, Concatenate, ParamSpec, TypeVar

import orjson
from fastapi import Depends, HTTPException, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from server.api.page_session import session_caller
from server.config import Settings
from server.models import Job
from server.schemas.common import MAX_INT32
from server.services.auth import Caller, authenticate_api_token, authenticate_job_token, running_job_of_token
from server.services.errors import Forbidden, Unauthorized
from server.services.scoping import get_team_job_for_trainer, get_visible_job
from server.services.tokens import JOB_TOKEN_PREFIX

user_bearer = HTTPBearer(scheme_name="UserToken", description="a user API token (sfu_...)", auto_error=False)
job_bearer = HTTPBearer(scheme_name="JobToken", description="the per-job trainer token (sfj_...)", auto_error=False)

JobId = Annotated[int, Path(ge=1, le=MAX_INT32, description="job id")]
SampleId = Annotated[int, Path(ge=1, le=MAX_INT32, description="sample id")]
ExperimentId = Annotated[int, Path(ge=1, le=MAX_INT32, description="experiment id")]
ServiceId = Annotated[int, Path(ge=1, le=MAX_INT32, description="service id")]
Bearer = HTTPAuthorizationCredentials | None
UserCredentials = Annotated[Bearer, Depends(user_bearer)]
JobCredentials = Annotated[Bearer, Depends(job_bearer)]
P = ParamSpec("P")
T = TypeVar("T")
Who = TypeVar("Who")


async def get_settings(request: Request) -> Settings:
    """Async, so FastAPI calls it in the event loop instead of a trip to the thread pool."""
    return request.app.state.settings  # type: ignore[no-any-return]


def get_session(request: Request) -> Iterator[Session]:
    """One session per request; services commit, and anything uncommitted is rolled back on close."""
    session: Session = request.app.state.sessionmaker()
    try:
        yield session
    finally:
        session.close()


SettingsDep = Annotated[Settings, Depends(get_settings)]
# The methods that may authenticate with the page session cookie: reads only.
COOKIE_METHODS = ("GET", "HEAD")
SessionDep = Annotated[Session, Depends(get_session)]


def _token(credentials: Bearer) -> str:
    if credentials is None or not credentials.credentials:
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    return credentials.credentials


def current_caller(request: Request, session: SessionDep, credentials: UserCredentials) -> Caller:
    return _user(request, session, credentials)


def _user(request: Request, session: Session, credentials: Bearer) -> Caller:
    """The API token's caller; without a token, a read may come from a logged-in page's session cookie."""
    if credentials is None and request.method in COOKIE_METHODS:
        caller = session_caller(request, session)
        if caller is not None:
            return caller
    return authenticate_api_token(session, _token(credentials))


async def in_one_trip(
    sessions: sessionmaker[Session],
    identify: Callable[[Session], Who],
    work: Callable[Concatenate[Session, Who, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """`work(session, identify(session), ...)` in one trip to the thread pool: open a session, find who is
    calling, work, close.

    For the calls made most: the reads dashboards and scripts poll and the trainers' metric batches (`async`
    routes). FastAPI runs each sync dependency, the endpoint and the response check in a trip of their own,
    about 0.3 ms of CPU each on a 2-core machine: five for a route declared with SessionDep and CallerDep."""

    def in_session() -> T:
        session = sessions()
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
    """A read in one trip for a route taking UserCredentials, as the API token's (or the page session's)
    caller, in a session that autocommits (app.state.read_sessionmaker)."""
    sessions = request.app.state.read_sessionmaker
    return await in_one_trip(sessions, partial(_user, request, credentials=credentials), work, *args, **kwargs)


async def run_as_trainer(
    request: Request,
    credentials: Bearer,
    job_id: int,
    work: Callable[Concatenate[Session, Job, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Ingestion in one trip for a route taking JobCredentials: `work` gets the job the token writes to."""
    token = _token(credentials)
    sessions = request.app.state.sessionmaker
    return await in_one_trip(
        sessions, lambda session: authenticate_job_token(session, token, job_id), work, *args, **kwargs
    )


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


def artifact_reading_job(request: Request, job_id: JobId, session: SessionDep, credentials: UserCredentials) -> Job:
    """The path's job for reading its artifacts: as for `visible_job`, or with a job token (a trainer fetching a
    checkpoint), any job of the token's job's team; 404 otherwise."""
    if credentials is not None and credentials.credentials.startswith(JOB_TOKEN_PREFIX):
        return get_team_job_for_trainer(session, running_job_of_token(session, credentials.credentials), job_id)
    return get_visible_job(session, _user(request, session, credentials), job_id)


ArtifactReadingJob = Annotated[Job, Depends(artifact_reading_job)]


def ingest_job(job_id: JobId, session: SessionDep, credentials: JobCredentials) -> Job:
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
