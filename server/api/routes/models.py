"""The model registry: register a job's checkpoint as a model version, list and show models with their versions
and lineage, set, move and delete aliases, and resolve a version's download to its artifact."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response, status

from server.api.deps import CallerDep, SessionDep, WriterDep
from server.schemas.common import MAX_INT32, ErrorBody
from server.schemas.model_registry import (
    AliasSet,
    ModelAliasOut,
    ModelDetail,
    ModelDownload,
    ModelList,
    ModelRegister,
    ModelVersionOut,
)
from server.services import model_registry

router = APIRouter(
    tags=["models"],
    responses={
        403: {"model": ErrorBody, "description": "a viewer of the model's team, or a read-only token"},
        404: {"model": ErrorBody, "description": "no such model, version or alias in the caller's teams"},
    },
)

# Lookups take any name, so that a name no model has is not found rather than malformed (registering checks it).
ModelNamePath = Annotated[str, Path(min_length=1, max_length=200, description="the model's name")]
AliasPath = Annotated[str, Path(min_length=1, max_length=200, description="an alias: candidate, production")]
VersionPath = Annotated[int, Path(ge=1, le=MAX_INT32, description="the version number")]
TeamQuery = Annotated[
    str | None, Query(max_length=100, description="the model's team, where the name is in several of yours")
]


@router.post(
    "/models",
    status_code=status.HTTP_201_CREATED,
    response_model=ModelVersionOut,
    responses={422: {"model": ErrorBody, "description": "a job not found, or no such checkpoint, naming the field"}},
)
def register(body: ModelRegister, session: SessionDep, caller: WriterDep) -> ModelVersionOut:
    """A checkpoint of a job as the next version of the named model in the job's team (members and admins)."""
    return model_registry.register_version(session, caller, body)


@router.get("/models", response_model=ModelList)
def list_models(session: SessionDep, caller: CallerDep, team: TeamQuery = None) -> ModelList:
    """The models of the caller's teams, with their latest version and aliases."""
    return model_registry.list_models(session, caller, team)


@router.get("/models/{model_name}", response_model=ModelDetail)
def show_model(
    model_name: ModelNamePath, session: SessionDep, caller: CallerDep, team: TeamQuery = None
) -> ModelDetail:
    """A model with its aliases and every version (newest first), each with its lineage and export formats."""
    return model_registry.model_detail(session, caller, model_name, team)


@router.get("/models/{model_name}/versions/{version}", response_model=ModelVersionOut)
def show_version(
    model_name: ModelNamePath, version: VersionPath, session: SessionDep, caller: CallerDep, team: TeamQuery = None
) -> ModelVersionOut:
    return model_registry.version_detail(session, caller, model_name, version, team)


@router.get(
    "/models/{model_name}/versions/{version}/download",
    response_model=ModelDownload,
    responses={422: {"model": ErrorBody, "description": "no export in that format, naming `format`"}},
)
def version_download(
    model_name: ModelNamePath,
    version: VersionPath,
    session: SessionDep,
    caller: CallerDep,
    team: TeamQuery = None,
    format: Annotated[str | None, Query(max_length=40, description="an export format: diffusers, comfyui")] = None,
) -> ModelDownload:
    """The artifact the version's download is: its checkpoint, or with `format` its export in that format; `url`
    serves the bytes."""
    return model_registry.version_download(session, caller, model_name, version, format, team)


@router.put(
    "/models/{model_name}/aliases/{alias}",
    response_model=ModelAliasOut,
    responses={422: {"model": ErrorBody, "description": "a malformed alias, or no such version, naming the field"}},
)
def set_alias(
    model_name: ModelNamePath,
    alias: AliasPath,
    body: AliasSet,
    session: SessionDep,
    caller: WriterDep,
    team: TeamQuery = None,
) -> ModelAliasOut:
    """Point the alias at a version, making it or moving it (members and admins); the move is audited."""
    return model_registry.set_alias(session, caller, model_name, alias, body.version, team)


@router.delete("/models/{model_name}/aliases/{alias}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response)
def delete_alias(
    model_name: ModelNamePath, alias: AliasPath, session: SessionDep, caller: WriterDep, team: TeamQuery = None
) -> Response:
    model_registry.delete_alias(session, caller, model_name, alias, team)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
