"""The model registry as the client returns it (GET /api/v1/models...). Unknown fields from a newer server are
kept, not refused, as for jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sfumato.models import _Model


class CodeVersion(_Model):
    package: str
    commit: str | None = None


class BaseModelRef(_Model):
    family: str
    path: str


class LineageJob(_Model):
    id: int
    name: str


class Lineage(_Model):
    """Where a version came from, as it was when the version was registered."""

    job: LineageJob
    spec: dict[str, Any]
    code_version: CodeVersion
    base_model: BaseModelRef
    algorithm: str
    executor: str
    training_reward: float | None = None
    eval_reward: float | None = None


class ModelVersion(_Model):
    model: str
    team: str
    version: int
    job_id: int | None = None
    artifact_id: int | None = None
    step: int
    aliases: list[str] = []
    export_formats: list[str] = []
    created_by: str | None = None
    created_at: datetime
    lineage: Lineage


class ModelAlias(_Model):
    name: str
    version: int
    updated_by: str | None = None
    updated_at: datetime


class RegisteredModel(_Model):
    """A model as listed; `versions` (newest first) is filled by `Client.model`."""

    name: str
    team: str
    description: str | None = None
    created_by: str | None = None
    created_at: datetime
    latest_version: int | None = None
    aliases: list[ModelAlias] = []
    versions: list[ModelVersion] = []


class ModelDownload(_Model):
    """The artifact a version's download resolves to, and the URL that serves its bytes."""

    job_id: int
    artifact_id: int
    kind: str
    name: str
    step: int | None = None
    url: str
