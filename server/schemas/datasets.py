"""Prompt sets as the API shows them: a dataset of a team, its versions (checksum, size, rows per split) and a
version's preview (its first training rows; an edit set's rows with the URL of their image)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from server.schemas.common import UtcDatetime

DATASET_NAME_RULE = "a letter, then letters, digits, '.', '_' or '-', at most 100 characters; unique in the team"


class DatasetVersionOut(BaseModel):
    dataset: str
    team: str
    format: str
    version: int
    sha256: str = Field(description="of the version's tar (its split files and images), as the download sends it")
    size_bytes: int
    rows: dict[str, int] = Field(description="rows per split: train, and test when uploaded")
    images: int = Field(description="an edit set's image files; 0 for other formats")
    source: str = Field(description="how a spec names this version: dataset:<name>@<version>")
    created_by: str | None
    created_at: UtcDatetime


class DatasetOut(BaseModel):
    name: str
    team: str
    format: str
    latest_version: int | None
    created_by: str | None
    created_at: UtcDatetime


class DatasetList(BaseModel):
    items: list[DatasetOut]


class DatasetDetail(DatasetOut):
    versions: list[DatasetVersionOut] = Field(description="newest first")


class DatasetVersionList(BaseModel):
    items: list[DatasetVersionOut] = Field(description="newest first")


class PreviewRow(BaseModel):
    line: int = Field(description="the row's line in the train file")
    prompt: str
    metadata: dict[str, Any] | None = Field(None, description="a GenEval row's tag, include and exclude")
    image: str | None = Field(None, description="an edit row's image path, relative to the set")
    image_url: str | None = Field(None, description="where the API serves that image")


class DatasetPreview(BaseModel):
    dataset: str
    version: int
    format: str
    rows: list[PreviewRow] = Field(description="the first rows of the train split")
