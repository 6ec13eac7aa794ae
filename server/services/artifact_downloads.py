"""Serving an artifact's bytes from the store: whole (200), one byte range (206, RFC 9110 section 14), or 416 for
a range past the end; with the checksum headers a client verifies the whole against.

`Repr-Digest: sha-256=:<base64>:` is RFC 9530's digest of the whole representation (also sent with a 206, so a
resumed download checks the file it assembled); `X-Checksum-Sha256` is the same digest in hex, for scripts.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Artifact, Job
from server.services.artifact_store import artifact_store
from server.services.artifact_uploads import job_artifact
from server.services.errors import NotFound

_SINGLE_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass
class Download:
    status: int  # 200, 206 or 416
    headers: dict[str, str]
    body: Iterator[bytes] = field(default_factory=lambda: iter(()))


def held_artifact(session: Session, job: Job, artifact_id: int) -> Artifact:
    """The job's artifact whose bytes the store holds; 404 otherwise (not uploaded, pruned, another job's)."""
    artifact = job_artifact(session, job, artifact_id)
    if artifact.store_key is None or artifact.pruned_at is not None or artifact.sha256 is None:
        raise NotFound(f"artifact {artifact_id} has no bytes on the platform (not uploaded, or deleted by retention)")
    return artifact


def download(settings: Settings, artifact: Artifact, range_header: str | None, if_range: str | None) -> Download:
    size = int(artifact.size_bytes or 0)
    sha256 = str(artifact.sha256)
    etag = f'"{sha256}"'
    headers = {
        "Accept-Ranges": "bytes",
        "ETag": etag,
        "Repr-Digest": f"sha-256=:{base64.b64encode(bytes.fromhex(sha256)).decode()}:",
        "X-Checksum-Sha256": sha256,
        "X-Sfumato-Packing": str(artifact.packing),
        "Content-Disposition": _disposition(download_name(artifact)),
        "Content-Type": "application/x-tar" if artifact.packing == "tar" else "application/octet-stream",
    }
    wanted = _range(range_header, size) if range_header and if_range in (None, etag) else None
    if wanted == "unsatisfiable":
        return Download(416, {**headers, "Content-Range": f"bytes */{size}"})
    start, end = wanted or (0, size)
    body = artifact_store(settings).read(str(artifact.store_key), start, end)
    headers["Content-Length"] = str(end - start)
    if wanted is None:
        return Download(200, headers, body)
    return Download(206, {**headers, "Content-Range": f"bytes {start}-{end - 1}/{size}"}, body)


def download_name(artifact: Artifact) -> str:
    """The file name a download is saved under: the artifact's file or folder name (a folder's with .tar)."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", PurePosixPath(artifact.path).name) or f"artifact-{artifact.id}"
    return f"{stem}.tar" if artifact.packing == "tar" else stem


def _disposition(name: str) -> str:
    return f"attachment; filename=\"{name}\"; filename*=UTF-8''{name}"


def _range(header: str, size: int) -> tuple[int, int] | str | None:
    """(start, end exclusive) of a single byte range; None to serve the whole (several ranges, or a header this
    server does not read: RFC 9110 lets a server ignore Range); "unsatisfiable" for a range past the end."""
    match = _SINGLE_RANGE.match(header.strip())
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # the last N bytes
        suffix = int(last)
        return (max(size - suffix, 0), size) if suffix > 0 and size > 0 else "unsatisfiable"
    start = int(first)
    end = min(int(last) + 1, size) if last else size
    if last and int(last) < start:
        return None
    return (start, end) if start < size else "unsatisfiable"
