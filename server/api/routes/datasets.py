"""Prompt sets as platform data: upload a version (multipart), list datasets, show one with its versions, preview
a version's first rows and images, and download a version's tar (a user, or a running job of the team with its
job token)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response, status
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from server.api.deps import CallerDep, SessionDep, SettingsDep, UserCredentials, WriterDep, current_caller
from server.models import Job
from server.schemas.common import MAX_INT32, ErrorBody
from server.schemas.datasets import DatasetDetail, DatasetList, DatasetPreview, DatasetVersionList, DatasetVersionOut
from server.services import dataset_reads
from server.services.auth import running_job_of_token
from server.services.dataset_uploads import DatasetUpload, UploadedFile, create_version
from server.services.errors import FieldErrors
from server.services.tokens import JOB_TOKEN_PREFIX

router = APIRouter(
    tags=["datasets"],
    responses={404: {"model": ErrorBody, "description": "no such dataset or version in the caller's teams"}},
)

# Lookups take any name, so that a name no dataset has is not found rather than malformed (uploading checks it).
DatasetNamePath = Annotated[str, Path(min_length=1, max_length=200, description="the dataset's name")]
VersionPath = Annotated[int, Path(ge=1, le=MAX_INT32, description="the version number")]
TeamQuery = Annotated[
    str | None, Query(max_length=100, description="the dataset's team, where the name is in several of yours")
]
MAX_UPLOAD_FILES = 100_000


@router.post(
    "/datasets",
    status_code=status.HTTP_201_CREATED,
    response_model=DatasetVersionOut,
    responses={
        403: {"model": ErrorBody, "description": "a viewer of the team, or a read-only token"},
        413: {"model": ErrorBody, "description": "a body over SFUMATO_MAX_DATASET_BYTES"},
        422: {"model": ErrorBody, "description": "a malformed row (its line and column), a missing or bad image"},
    },
    openapi_extra={
        "requestBody": {
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["name", "format", "train"],
                        "properties": {
                            "name": {"type": "string"},
                            "format": {"type": "string", "enum": ["text", "geneval", "ocr", "edit"]},
                            "train": {"type": "string", "format": "binary"},
                            "test": {"type": "string", "format": "binary"},
                            "images": {"type": "array", "items": {"type": "string", "format": "binary"}},
                        },
                    }
                }
            }
        }
    },
)
async def upload_dataset(
    request: Request, session: SessionDep, settings: SettingsDep, caller: WriterDep, team: TeamQuery = None
) -> DatasetVersionOut:
    """A prompt set as the next version of the named dataset in the caller's team (made on its first version):
    `name`, `format` (text, geneval, ocr, edit), the `train` file, an optional `test` file and, for an edit set,
    the `images` its rows name. Members and admins of the team."""
    async with request.form(max_files=MAX_UPLOAD_FILES, max_fields=20) as form:
        upload = DatasetUpload(
            name=_text(form.get("name"), "name"),
            format=_text(form.get("format"), "format"),
            train=_file(form.get("train"), "train"),
            test=_file(form.get("test"), "test", required=False),
            images=[_file(item, "images") for item in form.getlist("images")],
        )
        uploaded = await run_in_threadpool(create_version, session, settings, caller, team, upload)
    return uploaded  # type: ignore[no-any-return]


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FieldErrors.one(field, f"the form field {field!r} is required")
    return value.strip()


def _file(value: object, field: str, required: bool = True) -> UploadedFile:
    if isinstance(value, UploadFile):
        return UploadedFile(value.filename or field, value.file)
    if value is None and not required:
        return None  # type: ignore[return-value]
    raise FieldErrors.one(field, f"{field!r} is a file of the multipart form")


@router.get("/datasets", response_model=DatasetList)
def list_datasets(session: SessionDep, caller: CallerDep, team: TeamQuery = None) -> DatasetList:
    """The datasets of the caller's teams, with their latest version."""
    return dataset_reads.list_datasets(session, caller, team)


@router.get("/datasets/{dataset_name}", response_model=DatasetDetail)
def show_dataset(
    dataset_name: DatasetNamePath, session: SessionDep, caller: CallerDep, team: TeamQuery = None
) -> DatasetDetail:
    """A dataset with its versions, newest first."""
    return dataset_reads.dataset_detail(session, caller, dataset_name, team)


@router.get("/datasets/{dataset_name}/versions", response_model=DatasetVersionList)
def list_versions(
    dataset_name: DatasetNamePath, session: SessionDep, caller: CallerDep, team: TeamQuery = None
) -> DatasetVersionList:
    return dataset_reads.dataset_versions(session, caller, dataset_name, team)


@router.get("/datasets/{dataset_name}/versions/{version}", response_model=DatasetVersionOut)
def show_version(
    dataset_name: DatasetNamePath, version: VersionPath, session: SessionDep, caller: CallerDep, team: TeamQuery = None
) -> DatasetVersionOut:
    return dataset_reads.version_detail(session, caller, dataset_name, version, team)


@router.get("/datasets/{dataset_name}/versions/{version}/preview", response_model=DatasetPreview)
def preview_version(
    dataset_name: DatasetNamePath, version: VersionPath, session: SessionDep, caller: CallerDep, team: TeamQuery = None
) -> DatasetPreview:
    """The version's first training rows; an edit set's with the URL of each row's image."""
    return dataset_reads.preview(session, caller, dataset_name, version, team)


@router.get(
    "/datasets/{dataset_name}/versions/{version}/image",
    response_class=Response,
    responses={200: {"content": {"image/png": {}, "image/jpeg": {}}, "description": "a preview row's image"}},
)
def preview_image(
    dataset_name: DatasetNamePath,
    version: VersionPath,
    session: SessionDep,
    settings: SettingsDep,
    caller: CallerDep,
    row: Annotated[int, Query(ge=0, le=1000, description="the preview row")] = 0,
    team: TeamQuery = None,
) -> Response:
    """The image of an edit set's preview row."""
    data, kind = dataset_reads.preview_image(session, settings, caller, dataset_name, version, row, team)
    return Response(data, media_type=kind, headers={"Cache-Control": "private, max-age=3600"})


@router.get(
    "/datasets/{dataset_name}/versions/{version}/download",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-tar": {}}, "description": "the version's tar"}},
)
def download_version(
    request: Request,
    dataset_name: DatasetNamePath,
    version: VersionPath,
    session: SessionDep,
    settings: SettingsDep,
    credentials: UserCredentials,
    team: TeamQuery = None,
) -> Response:
    """The version's files as one tar (the split files under flow_grpo's names, an edit set's images at their
    paths); `X-Checksum-Sha256` is its SHA-256. A user of the team, or the job token of a running job of the team
    (the trainer fetching the version its spec pins)."""
    if credentials is not None and credentials.credentials.startswith(JOB_TOKEN_PREFIX):
        job: Job = running_job_of_token(session, credentials.credentials)
        dataset, _ = dataset_reads.job_dataset(session, job, dataset_name)
    else:
        dataset, _ = dataset_reads.visible_dataset(
            session, current_caller(request, session, credentials), dataset_name, team
        )
    answer = dataset_reads.download(settings, dataset, dataset_reads.version_row(session, dataset, version))
    return StreamingResponse(answer.body, headers=answer.headers)
