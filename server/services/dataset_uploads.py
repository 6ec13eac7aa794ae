"""Uploading a prompt set: every row of every split checked (the format's parser, torch-free, names the line and
column), an edit set's images matched to its rows and opened with PIL, then one tar of the version's files put in
the artifact store and its version row committed after it, so a version never exists without its bytes.

Who may upload: the members and admins of the team, as for submitting a job (viewers and read-only tokens are
refused, 403). The first upload of a name makes the dataset; each later one is its next version, of the same
format. The request body is limited by SFUMATO_MAX_DATASET_BYTES (server.api.body_limit counts it as it arrives)."""

from __future__ import annotations

import io
import re
import tarfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from PIL import Image, UnidentifiedImageError
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Dataset, DatasetVersion, Team
from server.schemas.datasets import DATASET_NAME_RULE, DatasetVersionOut
from server.services import audit
from server.services.artifact_store import artifact_store
from server.services.auth import Caller
from server.services.dataset_reads import version_out
from server.services.errors import Conflict, FieldErrors
from server.services.scoping import team_for_submission
from trainer.spec.base import SpecError
from trainer.spec.dataset_format import DATASET_FORMATS, split_file
from trainer.spec.dataset_source import DATASET_NAME_PATTERN
from trainer.spec.edit_rows import edit_rows
from trainer.spec.geneval_metadata import geneval_rows
from trainer.spec.ingest import file_sha256
from trainer.spec.ocr_prompt_file import ocr_prompts
from trainer.spec.prompt_file import text_prompts
from trainer.spec.row_location import decode_text

# The paths whose request bodies SFUMATO_MAX_DATASET_BYTES limits instead of SFUMATO_MAX_BODY_BYTES.
DATASET_UPLOAD_PATHS = ("/api/v1/datasets", "/datasets")
PREVIEW_ROWS = 8
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP", "BMP")


@dataclass(frozen=True)
class UploadedFile:
    """A file of the multipart body: the name the client gave it and its bytes (spooled by the form parser)."""

    filename: str
    file: BinaryIO


@dataclass
class DatasetUpload:
    name: str
    format: str
    train: UploadedFile | None
    test: UploadedFile | None = None
    images: list[UploadedFile] = field(default_factory=list)


@dataclass
class _Split:
    name: str
    data: bytes
    preview: list[dict[str, Any]]
    images: list[tuple[int, str]]  # (line, image path) of each edit row


def create_version(
    session: Session, settings: Settings, caller: Caller, team_name: str | None, upload: DatasetUpload
) -> DatasetVersionOut:
    """The upload as the next version of its dataset in the team (made on its first version); audited as
    dataset.upload. Commits; on any refusal nothing is stored."""
    team = team_for_submission(caller, team_name)
    if not re.fullmatch(DATASET_NAME_PATTERN, upload.name):
        raise FieldErrors.one("name", f"{upload.name!r}: {DATASET_NAME_RULE}")
    if upload.format not in DATASET_FORMATS:
        raise FieldErrors.one("format", f"{upload.format!r}: a format is one of {', '.join(DATASET_FORMATS)}")
    dataset = session.scalar(select(Dataset).where(Dataset.team_id == team.team_id, Dataset.name == upload.name))
    if dataset is not None and dataset.format != upload.format:
        raise FieldErrors.one(
            "format", f"dataset {upload.name!r} is a {dataset.format!r} set; its versions keep that format"
        )
    if upload.train is None:
        raise FieldErrors.one("train", "the train split's file is required")
    splits = [_split("train", upload.format, upload.train)]
    if upload.test is not None:
        splits.append(_split("test", upload.format, upload.test))
    images = _images(splits, upload.images) if upload.format == "edit" else {}
    staging = settings.resolved_artifact_root() / "uploads" / f"dataset-{uuid.uuid4().hex}.tar"
    try:
        offsets = _write_tar(staging, upload.format, splits, images)
        return _commit(session, settings, caller, team.team_id, dataset, upload, splits, staging, offsets)
    finally:
        staging.unlink(missing_ok=True)


def _split(name: str, format: str, uploaded: UploadedFile) -> _Split:
    data = uploaded.file.read()
    try:
        text = decode_text(data, name)
        if format == "geneval":
            rows = geneval_rows(text, name)
            preview = [{"prompt": r["prompt"], "metadata": {k: v for k, v in r.items() if k != "prompt"}} for r in rows]
        elif format == "edit":
            edits = edit_rows(text, name)
            preview = [{"prompt": r.prompt, "image": r.image} for r in edits]
        else:
            prompts = ocr_prompts(text, name) if format == "ocr" else text_prompts(text, name)
            preview = [{"prompt": p} for p in prompts]
    except SpecError as exc:
        raise FieldErrors.one(exc.field, exc.message) from None
    lines = [number for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    for number, row in zip(lines, preview, strict=True):
        row["line"] = number
    edits_at = [(row["line"], row["image"]) for row in preview] if format == "edit" else []
    return _Split(name, data, preview, edits_at)


def _images(splits: list[_Split], uploaded: list[UploadedFile]) -> dict[str, bytes]:
    """The image of every edit row, by its path in the set: the uploaded file of that path, or of that file name
    when one file alone has it (a browser sends file names without folders). 422 naming the row otherwise."""
    by_path: dict[str, UploadedFile] = {}
    by_name: dict[str, list[UploadedFile]] = {}
    for item in uploaded:
        name = PurePosixPath(item.filename.replace("\\", "/"))
        by_path[name.as_posix()] = item
        by_name.setdefault(name.name, []).append(item)
    found: dict[str, bytes] = {}
    for split in splits:
        for line, path in split.images:
            if path in found:
                continue
            match = by_path.get(path)
            if match is None:
                named = by_name.get(PurePosixPath(path).name, [])
                match = named[0] if len(named) == 1 else None
            if match is None:
                raise FieldErrors.one(split.name, f"line {line}: image {path!r} was not uploaded with the set")
            match.file.seek(0)
            found[path] = match.file.read()
            problem = _not_an_image(found[path])
            if problem:
                raise FieldErrors.one(split.name, f"line {line}: image {path!r} is not an image ({problem})")
    return found


def _not_an_image(data: bytes) -> str | None:
    try:
        with Image.open(io.BytesIO(data)) as image:
            kind = image.format
            image.verify()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    if kind not in IMAGE_FORMATS:
        return f"{kind}; allowed: {', '.join(IMAGE_FORMATS)}"
    return None


def _write_tar(path: Path, format: str, splits: list[_Split], images: dict[str, bytes]) -> dict[str, tuple[int, int]]:
    """The version's tar, byte for byte the same for the same files (no times, owners or modes of this host);
    returns where each image's bytes lie in it (offset, size), for the preview to read them by range."""
    path.parent.mkdir(parents=True, exist_ok=True)
    members = [(split_file(format, s.name), s.data) for s in splits] + sorted(images.items())
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            archive.addfile(info, io.BytesIO(data))
    with tarfile.open(path) as archive:
        return {m.name: (m.offset_data, m.size) for m in archive.getmembers() if m.name in images}


def _commit(
    session: Session,
    settings: Settings,
    caller: Caller,
    team_id: int,
    dataset: Dataset | None,
    upload: DatasetUpload,
    splits: list[_Split],
    staging: Path,
    offsets: dict[str, tuple[int, int]],
) -> DatasetVersionOut:
    digest, size = file_sha256(staging), staging.stat().st_size
    if dataset is None:
        dataset = Dataset(team_id=team_id, name=upload.name, format=upload.format, created_by=caller.user_id)
        session.add(dataset)
        try:
            session.flush()
        except IntegrityError:  # the same name's first version uploaded at the same moment
            session.rollback()
            raise Conflict(f"dataset {upload.name!r} was made meanwhile; upload again for its next version") from None
    latest = session.scalar(select(func.max(DatasetVersion.version)).where(DatasetVersion.dataset_id == dataset.id))
    number = (latest or 0) + 1
    preview = splits[0].preview[:PREVIEW_ROWS]
    for row in preview:
        if "image" in row:
            row["offset"], row["size"] = offsets[row["image"]]
    key = f"datasets/{dataset.id}/{number}-{digest}.tar"
    store = artifact_store(settings)
    store.put(key, staging)
    version = DatasetVersion(
        dataset_id=dataset.id,
        version=number,
        store_key=key,
        sha256=digest,
        size_bytes=size,
        rows={s.name: len(s.preview) for s in splits} | {"images": len(offsets)},
        preview=preview,
        created_by=caller.user_id,
    )
    session.add(version)
    detail = f"{dataset.name} version {number} ({dataset.format}): sha256 {digest}, {size} bytes"
    audit.record(session, "dataset.upload", caller, team_id=team_id, detail=detail)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        store.delete(key)
        raise Conflict(f"dataset {upload.name!r} changed meanwhile; upload again") from None
    team = session.get_one(Team, team_id)
    return version_out(dataset, team, version, {caller.user_id: caller.username})
