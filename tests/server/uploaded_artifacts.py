"""Artifacts with their bytes on the platform, sent through the trainer's door as the reporter sends them: the
registration, then the upload's chunks and its close (docs/artifacts.md)."""

from __future__ import annotations

import hashlib

from server_harness import Harness, Headers, Response


def register(harness: Harness, job_id: int, token: Headers, kind: str, name: str, path: str,
             step: int | None = None) -> int:  # fmt: skip
    body = {"attempt": 1, "kind": kind, "name": name, "step": step, "path": path}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/artifacts", json=body, headers=token)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def send_chunk(harness: Harness, job_id: int, artifact_id: int, token: Headers, offset: int, data: bytes) -> int:
    """PATCH one chunk at `offset`; the status code."""
    headers = {**token, "Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"}
    url = f"/api/v1/ingest/{job_id}/artifacts/{artifact_id}/upload"
    return harness.client.patch(url, content=data, headers=headers).status_code


def close_upload(harness: Harness, job_id: int, artifact_id: int, token: Headers, data: bytes) -> Response:
    """Close the upload with the size and SHA-256 of `data` (what the trainer meant to send)."""
    body = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    url = f"/api/v1/ingest/{job_id}/artifacts/{artifact_id}/upload/complete"
    return harness.client.post(url, json=body, headers=token)


def upload(harness: Harness, job_id: int, artifact_id: int, token: Headers, data: bytes) -> None:
    assert send_chunk(harness, job_id, artifact_id, token, 0, data) == 204
    closed = close_upload(harness, job_id, artifact_id, token, data)
    assert closed.status_code == 200, closed.text


def uploaded(harness: Harness, job_id: int, token: Headers, kind: str, name: str, data: bytes,
             step: int | None = None) -> int:  # fmt: skip
    """A registered artifact (its path its name) with `data` as its bytes; its id."""
    artifact_id = register(harness, job_id, token, kind, name, name, step)
    upload(harness, job_id, artifact_id, token, data)
    return artifact_id
