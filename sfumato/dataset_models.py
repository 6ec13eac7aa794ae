"""Prompt sets as the client returns them (GET /api/v1/datasets...). Unknown fields from a newer server are kept,
not refused, as for jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sfumato.models import _Model


class DatasetVersion(_Model):
    dataset: str
    team: str
    format: str
    version: int
    sha256: str
    size_bytes: int
    rows: dict[str, int]
    images: int = 0
    source: str
    created_by: str | None = None
    created_at: datetime


class Dataset(_Model):
    name: str
    team: str
    format: str
    latest_version: int | None = None
    created_by: str | None = None
    created_at: datetime
    versions: list[DatasetVersion] = []


class PreviewRow(_Model):
    line: int
    prompt: str
    metadata: dict[str, Any] | None = None
    image: str | None = None
    image_url: str | None = None


class DatasetPreview(_Model):
    dataset: str
    version: int
    format: str
    rows: list[PreviewRow]
