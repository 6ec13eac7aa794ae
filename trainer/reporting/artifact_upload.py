"""Upload an artifact's bytes to the platform, resumably (docs/artifacts.md).

The protocol is tus 1.0's core (https://tus.io/protocols/resumable-upload): `HEAD .../upload` answers how many
bytes the server holds (`Upload-Offset`), each `PATCH .../upload` appends a chunk sent with the offset it starts at
(`application/offset+octet-stream`; a wrong offset is 409), and the server keeps what it received of a chunk cut
short. Like a GCS resumable upload's last request, `POST .../upload/complete` closes it with the size and the
SHA-256 of the whole; the server refuses a mismatch (422 naming `sha256`) and only then makes the bytes visible.

After an interruption (the server away, the trainer killed) the next call asks the offset and goes on from there:
the stream is built again (artifact_stream.py is deterministic) and hashed from the start, its first `offset`
bytes are not sent again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import orjson

from trainer.reporting.artifact_stream import CHUNK_BYTES, artifact_chunks, packing_of
from trainer.reporting.ingest_client import IngestClient
from trainer.spec.ingest import UPLOAD_CONTENT_TYPE, UPLOAD_OFFSET_HEADER, ArtifactUploadDone


class UploadRefused(Exception):
    """The server refused the upload for good (4xx): sending it again cannot help."""


class UploadInterrupted(Exception):
    """The upload stopped part way (the server's answer was 5xx or 409): the next try resumes it."""


def upload_artifact(
    client: IngestClient,
    artifact_id: int,
    source: Path,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    on_chunk: Callable[[int], None] | None = None,
) -> ArtifactUploadDone:
    """Send `source` (a file, or a folder as a tar stream) as artifact `artifact_id`'s bytes and complete the
    upload. Raises UploadRefused, UploadInterrupted, or one of TransportError. `on_chunk(offset)` is called after
    each chunk the server took."""
    path = f"/artifacts/{artifact_id}/upload"
    offset = _server_offset(client, path)
    digest, size = hashlib.sha256(), 0
    for chunk in artifact_chunks(source, chunk_bytes):
        digest.update(chunk)
        start, size = size, size + len(chunk)
        if size <= offset:
            continue  # the server holds these bytes already
        piece = chunk[max(offset - start, 0) :]
        offset = _append(client, path, offset, piece)
        if on_chunk is not None:
            on_chunk(offset)
    done = ArtifactUploadDone(size=size, sha256=digest.hexdigest(), packing=packing_of(source))
    headers = {"Content-Type": "application/json"}
    status, _, body = client.request("POST", f"{path}/complete", orjson.dumps(done.model_dump()), headers)
    _check(status, body)
    return done


def _server_offset(client: IngestClient, path: str) -> int:
    status, headers, body = client.request("HEAD", path)
    _check(status, body)
    return int(headers.get(UPLOAD_OFFSET_HEADER.lower(), "0"))


def _append(client: IngestClient, path: str, offset: int, piece: bytes) -> int:
    headers = {"Content-Type": UPLOAD_CONTENT_TYPE, UPLOAD_OFFSET_HEADER: str(offset)}
    status, answer_headers, body = client.request("PATCH", path, piece, headers)
    _check(status, body)
    return int(answer_headers[UPLOAD_OFFSET_HEADER.lower()])


def _check(status: int, body: bytes) -> None:
    if status == 409 or status >= 500:
        raise UploadInterrupted(f"{status}: {body[:200].decode(errors='replace')}")
    if status >= 400:
        raise UploadRefused(f"{status}: {body[:200].decode(errors='replace')}")
