"""Experiments: one base spec over a matrix of axes, a job per cell, summarised with confidence intervals."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response, status

from server.api.deps import ExperimentId, SessionDep, SettingsDep, UserCredentials, WriterDep, run_as_caller
from server.schemas.common import ErrorBody
from server.schemas.experiments import ExperimentCreate, ExperimentDetail, ExperimentPage, NoteIn, NoteOut
from server.services import experiment_actions, experiment_reads, experiments
from server.services.experiment_report import REPORT_TYPES, experiment_report

router = APIRouter(tags=["experiments"])


@router.post(
    "/experiments",
    status_code=status.HTTP_201_CREATED,
    response_model=ExperimentDetail,
    responses={
        422: {
            "model": ErrorBody,
            "description": "an unknown axis path, too many cells, or a cell that cannot run "
            "(the field is `cells[i].<spec field>`, the message names the cell)",
        },
        429: {
            "model": ErrorBody,
            "description": "the cells do not all fit the queue limits; the message says how many are left",
        },
    },
)
def create_experiment(
    body: ExperimentCreate,
    session: SessionDep,
    settings: SettingsDep,
    caller: WriterDep,
    team: Annotated[str | None, Query(max_length=100, description="one of your teams")] = None,
) -> ExperimentDetail:
    """Expand the axes into cells (every combination), check every cell's spec, then queue one job per cell;
    nothing is stored when any cell is refused."""
    return experiments.create_experiment(session, caller, body, settings, team)


@router.get("/experiments", response_model=ExperimentPage)
async def list_experiments(
    request: Request,
    credentials: UserCredentials,
    state: Annotated[str | None, Query(description="one state or several, comma-separated")] = None,
    name: Annotated[str | None, Query(max_length=200, description="substring, case-insensitive")] = None,
    created_by: Annotated[str | None, Query(max_length=100, description="the creator's username")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> ExperimentPage:
    filters = experiment_reads.parse_filters(state, name, created_by)
    return await run_as_caller(request, credentials, experiment_reads.list_experiments, filters, limit, offset)


@router.get("/experiments/{experiment_id}", response_model=ExperimentDetail, responses={404: {"model": ErrorBody}})
async def get_experiment(
    request: Request, experiment_id: ExperimentId, credentials: UserCredentials
) -> ExperimentDetail:
    """The experiment, its cells, the live summary (intervals, verdicts, flagged cells) and its notes."""
    return await run_as_caller(request, credentials, experiment_reads.experiment_detail, experiment_id)


@router.get(
    "/experiments/{experiment_id}/report",
    response_class=Response,
    responses={200: {"content": {t: {} for t in REPORT_TYPES.values()}}, 404: {"model": ErrorBody}},
)
async def get_report(
    request: Request,
    experiment_id: ExperimentId,
    credentials: UserCredentials,
    format: Annotated[
        Literal["md", "html"],
        Query(description="md: a zip of one folder, report.md beside images/; html: one self-contained page"),
    ] = "html",
) -> Response:
    """The report `sfumato experiment export` writes: the HTML page with its plots and sample images embedded
    (nothing fetched when it is opened), or the Markdown with its images as files beside it (GitHub renders
    those, not embedded ones)."""
    settings = request.app.state.settings
    body = await run_as_caller(request, credentials, experiment_report, experiment_id, format, settings)
    filename = f"experiment-{experiment_id}.{'zip' if format == 'md' else 'html'}"
    return Response(
        body,
        media_type=REPORT_TYPES[format],
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.post(
    "/experiments/{experiment_id}/cancel",
    response_model=ExperimentDetail,
    responses={404: {"model": ErrorBody}, 409: {"model": ErrorBody, "description": "no active cell"}},
)
def cancel_experiment(experiment_id: ExperimentId, session: SessionDep, caller: WriterDep) -> ExperimentDetail:
    """Queued cells are cancelled at once; placed and running ones are asked to stop."""
    return experiment_actions.cancel_experiment(session, caller, experiment_id)


@router.post(
    "/experiments/{experiment_id}/retry",
    response_model=ExperimentDetail,
    responses={
        404: {"model": ErrorBody},
        409: {"model": ErrorBody, "description": "no failed cell"},
        429: {"model": ErrorBody, "description": "the failed cells do not fit the queue limits"},
    },
)
def retry_experiment(
    experiment_id: ExperimentId, session: SessionDep, settings: SettingsDep, caller: WriterDep
) -> ExperimentDetail:
    """The failed cells run again; the others are left as they are."""
    return experiment_actions.retry_experiment(session, caller, experiment_id, settings)


@router.get("/experiments/{experiment_id}/notes", response_model=list[NoteOut], responses={404: {"model": ErrorBody}})
async def list_notes(request: Request, experiment_id: ExperimentId, credentials: UserCredentials) -> list[NoteOut]:
    return await run_as_caller(request, credentials, experiment_actions.list_notes, experiment_id)


@router.post(
    "/experiments/{experiment_id}/notes",
    status_code=status.HTTP_201_CREATED,
    response_model=NoteOut,
    responses={404: {"model": ErrorBody}},
)
def add_note(experiment_id: ExperimentId, body: NoteIn, session: SessionDep, caller: WriterDep) -> NoteOut:
    """Markdown; `html` is the body rendered with raw HTML escaped."""
    return experiment_actions.add_note(session, caller, experiment_id, body)
