"""Reading a team's prompt sets: the list, a dataset with its versions, a version's preview and its bytes.

Every member of a dataset's team reads it (a read-only token too); a dataset of a team the caller is not in is
not found, as a job is. A running job reads the datasets of its own team with its job token (the trainer fetching
the version its spec pins). A name is unique in its team: a caller in two teams that both have it picks one with
`team` (the API's `?team=`)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Dataset, DatasetVersion, Job, Team
from server.schemas.datasets import (
    DatasetDetail,
    DatasetList,
    DatasetOut,
    DatasetPreview,
    DatasetVersionList,
    DatasetVersionOut,
    PreviewRow,
)
from server.services.artifact_store import artifact_store
from server.services.auth import Caller
from server.services.errors import NotFound
from server.services.latest_versions import with_latest_versions
from server.services.named_in_team import visible_by_name
from server.services.usernames import usernames
from trainer.spec.dataset_source import DATASET_PREFIX

IMAGE_TYPES = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"RIFF": "image/webp", b"BM": "image/bmp"}


def dataset_url(name: str, number: int) -> str:
    return f"/api/v1/datasets/{name}/versions/{number}"


def visible_dataset(session: Session, caller: Caller, name: str, team: str | None = None) -> tuple[Dataset, Team]:
    """The dataset called `name` in the caller's teams (server admins: any team), in `team` when given."""
    return visible_by_name(session, caller, Dataset, "dataset", name, team)


def job_dataset(session: Session, job: Job, name: str) -> tuple[Dataset, Team]:
    """The dataset called `name` in a running job's team (the job token's reading); 404 otherwise."""
    row = session.execute(
        select(Dataset, Team)
        .join(Team, Team.id == Dataset.team_id)
        .where(Dataset.name == name, Dataset.team_id == job.team_id)
    ).first()
    if row is None:
        raise NotFound(f"dataset {name!r} not found")
    return row[0], row[1]


def team_version(session: Session, team_id: int, name: str, number: int | None) -> tuple[Dataset, DatasetVersion]:
    """Version `number` (None: the latest) of the team's dataset `name`; NotFound saying which is missing."""
    dataset = session.scalar(select(Dataset).where(Dataset.team_id == team_id, Dataset.name == name))
    if dataset is None:
        raise NotFound(f"the team has no dataset {name!r}")
    statement = select(DatasetVersion).where(DatasetVersion.dataset_id == dataset.id)
    if number is None:
        statement = statement.order_by(DatasetVersion.version.desc()).limit(1)
    else:
        statement = statement.where(DatasetVersion.version == number)
    version = session.scalar(statement)
    if version is None:
        raise NotFound(f"dataset {name!r} has no version {number}" if number else f"dataset {name!r} has no version")
    return dataset, version


def version_row(session: Session, dataset: Dataset, number: int) -> DatasetVersion:
    version = session.scalar(
        select(DatasetVersion).where(DatasetVersion.dataset_id == dataset.id, DatasetVersion.version == number)
    )
    if version is None:
        raise NotFound(f"version {number} of dataset {dataset.name!r} not found")
    return version


def version_out(dataset: Dataset, team: Team, version: DatasetVersion, names: dict[int, str]) -> DatasetVersionOut:
    rows = dict(version.rows)
    images = int(rows.pop("images", 0))
    return DatasetVersionOut(
        dataset=dataset.name,
        team=team.name,
        format=dataset.format,
        version=version.version,
        sha256=version.sha256,
        size_bytes=version.size_bytes,
        rows=rows,
        images=images,
        source=f"{DATASET_PREFIX}{dataset.name}@{version.version}",
        created_by=names.get(version.created_by or 0),
        created_at=version.created_at,
    )


def _dataset_out(dataset: Dataset, team: Team, latest: int | None, names: dict[int, str]) -> DatasetOut:
    return DatasetOut(
        name=dataset.name,
        team=team.name,
        format=dataset.format,
        latest_version=latest,
        created_by=names.get(dataset.created_by or 0),
        created_at=dataset.created_at,
    )


def list_datasets(session: Session, caller: Caller, team: str | None = None) -> DatasetList:
    """The datasets of the caller's teams (of `team` when given), by team then name."""
    rows = with_latest_versions(session, caller, Dataset, DatasetVersion.dataset_id, DatasetVersion.version, team)
    names = usernames(session, (d.created_by for d, _, _ in rows))
    return DatasetList(items=[_dataset_out(d, t, v, names) for d, t, v in rows])


def _versions(session: Session, dataset: Dataset, team: Team) -> list[DatasetVersionOut]:
    versions = list(
        session.scalars(
            select(DatasetVersion)
            .where(DatasetVersion.dataset_id == dataset.id)
            .order_by(DatasetVersion.version.desc())
        )
    )
    names = usernames(session, (v.created_by for v in versions))
    return [version_out(dataset, team, v, names) for v in versions]


def dataset_detail(session: Session, caller: Caller, name: str, team: str | None = None) -> DatasetDetail:
    dataset, owner = visible_dataset(session, caller, name, team)
    versions = _versions(session, dataset, owner)
    summary = _dataset_out(
        dataset, owner, versions[0].version if versions else None, usernames(session, [dataset.created_by])
    )
    return DatasetDetail(**summary.model_dump(), versions=versions)


def dataset_versions(session: Session, caller: Caller, name: str, team: str | None = None) -> DatasetVersionList:
    dataset, owner = visible_dataset(session, caller, name, team)
    return DatasetVersionList(items=_versions(session, dataset, owner))


def version_detail(
    session: Session, caller: Caller, name: str, number: int, team: str | None = None
) -> DatasetVersionOut:
    dataset, owner = visible_dataset(session, caller, name, team)
    version = version_row(session, dataset, number)
    return version_out(dataset, owner, version, usernames(session, [version.created_by]))


def preview(session: Session, caller: Caller, name: str, number: int, team: str | None = None) -> DatasetPreview:
    """The version's first training rows; an edit row with the URL its image is served at."""
    dataset, _ = visible_dataset(session, caller, name, team)
    version = version_row(session, dataset, number)
    rows = [
        PreviewRow(
            line=row["line"],
            prompt=row["prompt"],
            metadata=row.get("metadata"),
            image=row.get("image"),
            image_url=f"{dataset_url(name, number)}/image?row={index}" if "image" in row else None,
        )
        for index, row in enumerate(version.preview)
    ]
    return DatasetPreview(dataset=dataset.name, version=number, format=dataset.format, rows=rows)


def preview_image(
    session: Session, settings: Settings, caller: Caller, name: str, number: int, row: int, team: str | None = None
) -> tuple[bytes, str]:
    """The image of preview row `row` of an edit set, read from the version's tar by its byte range, and its
    media type."""
    dataset, _ = visible_dataset(session, caller, name, team)
    version = version_row(session, dataset, number)
    rows = version.preview
    if not 0 <= row < len(rows) or "offset" not in rows[row]:
        raise NotFound(f"version {number} of dataset {name!r} has no preview image {row}")
    start = int(rows[row]["offset"])
    data = b"".join(artifact_store(settings).read(version.store_key, start, start + int(rows[row]["size"])))
    kind = next((t for magic, t in IMAGE_TYPES.items() if data.startswith(magic)), "application/octet-stream")
    return data, kind


@dataclass
class VersionDownload:
    headers: dict[str, str]
    body: Iterator[bytes]


def download(settings: Settings, dataset: Dataset, version: DatasetVersion) -> VersionDownload:
    """The version's tar whole, with the checksum headers the trainer's fetch checks (as an artifact's download:
    server.services.artifact_downloads)."""
    name = f"{dataset.name}@{version.version}.tar"
    headers = {
        "Content-Length": str(version.size_bytes),
        "Content-Type": "application/x-tar",
        "Content-Disposition": f"attachment; filename=\"{name}\"; filename*=UTF-8''{name}",
        "ETag": f'"{version.sha256}"',
        "Repr-Digest": f"sha-256=:{base64.b64encode(bytes.fromhex(version.sha256)).decode()}:",
        "X-Checksum-Sha256": version.sha256,
        "X-Sfumato-Packing": "tar",
    }
    return VersionDownload(headers, artifact_store(settings).read(version.store_key, 0, version.size_bytes))
