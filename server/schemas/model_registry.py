"""The model registry as the API takes and shows it: registering a job's checkpoint as a version of a named model,
a model with its versions and aliases, each version's lineage, and where a version's bytes download from."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from server.schemas.common import MAX_INT32, FiniteOrNone, Step, UtcDatetime

# No ':' or '@': the CLI names a version NAME:VERSION and an alias NAME@ALIAS.
MODEL_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9._-]*$"
ALIAS_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"
ModelName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=MODEL_NAME_PATTERN,
        description="a letter, then letters, digits, '.', '_' or '-'; unique in the team",
    ),
]
ALIAS_MAX_LENGTH = 40
ALIAS_RULE = f"an alias is a letter, then letters, digits, '_' or '-', at most {ALIAS_MAX_LENGTH} characters"
VersionNumber = Annotated[int, Field(ge=1, le=MAX_INT32, description="a version of the model: 1, 2, ...")]


class ModelRegister(BaseModel):
    """A checkpoint of a job as the next version of `name` in the job's team (the model is made on its first
    version). The checkpoint: `artifact_id`, or the job's checkpoint at `step`, or without either its latest."""

    model_config = ConfigDict(extra="forbid")

    name: ModelName
    job_id: int = Field(ge=1, le=MAX_INT32, description="a job the caller can see, of a team they submit in")
    step: Step | None = Field(None, description="the step of one of the job's checkpoints")
    artifact_id: int | None = Field(None, ge=1, le=MAX_INT32, description="one of the job's checkpoint artifacts")
    description: str | None = Field(None, max_length=2000, description="the model's; replaces an earlier one")


class AliasSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: VersionNumber


class CodeVersion(BaseModel):
    package: str = Field(description="the sfumato package's version the server ran")
    commit: str | None = Field(description="the git commit of the server's checkout; None when not run from one")


class BaseModelRef(BaseModel):
    family: str
    path: str = Field(description="the pretrained weights the job started from (spec model.path)")


class LineageJob(BaseModel):
    id: int
    name: str


class Lineage(BaseModel):
    """Where a version came from, taken when it was registered: the job and its spec, the code, the base model,
    the algorithm and executor, and the job's figures at the checkpoint's step."""

    job: LineageJob
    spec: dict[str, Any]
    code_version: CodeVersion
    base_model: BaseModelRef
    algorithm: str
    executor: str
    training_reward: FiniteOrNone = Field(description="the job's reward/mean at the step (its current point)")
    eval_reward: FiniteOrNone = Field(description="the mean reward of the step's eval samples, where it logged some")


class VersionExport(BaseModel):
    format: str
    job_id: int = Field(description="the job that wrote it: an export job of the checkpoint, or the source job")
    artifact_id: int
    url: str = Field(description="where its bytes download from")


class ModelVersionOut(BaseModel):
    model: str
    team: str
    version: int
    job_id: int | None
    artifact_id: int | None = Field(description="the checkpoint artifact")
    step: int
    aliases: list[str]
    export_formats: list[str] = Field(description="formats exported from the checkpoint, read from the artifacts now")
    exports: list[VersionExport] = Field(description="the newest export artifact of each of export_formats")
    created_by: str | None
    created_at: UtcDatetime
    lineage: Lineage


class ModelAliasOut(BaseModel):
    name: str
    version: int
    updated_by: str | None
    updated_at: UtcDatetime


class ModelOut(BaseModel):
    name: str
    team: str
    description: str | None
    created_by: str | None
    created_at: UtcDatetime
    latest_version: int | None
    aliases: list[ModelAliasOut]


class ModelList(BaseModel):
    items: list[ModelOut]


class ModelDetail(ModelOut):
    versions: list[ModelVersionOut] = Field(description="newest first")


class ModelDownload(BaseModel):
    """The artifact a version's download resolves to, and the URL its bytes come from."""

    job_id: int
    artifact_id: int
    kind: str
    name: str
    step: int | None
    url: str
