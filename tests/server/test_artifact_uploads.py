"""The resumable upload of an artifact's bytes (tus-style offsets, closed by size and SHA-256) and their download
with Range requests and the checksum headers."""

from __future__ import annotations

import base64
import hashlib

import pytest
from server_harness import Harness, Headers
from uploaded_artifacts import close_upload, register, send_chunk, upload

CONTENT = bytes(range(256)) * 40  # 10240 bytes


@pytest.fixture
def running(harness: Harness) -> tuple[int, Headers]:
    job_id = harness.submit_ok()
    return job_id, harness.start_job(job_id)


def register_file(harness: Harness, job_id: int, token: Headers) -> int:
    return register(harness, job_id, token, "checkpoint", "weights.bin", "checkpoints/weights.bin", 1)


def held(harness: Harness, job_id: int, artifact_id: int, token: Headers) -> int:
    response = harness.client.head(f"/api/v1/ingest/{job_id}/artifacts/{artifact_id}/upload", headers=token)
    assert response.status_code == 204
    return int(response.headers["Upload-Offset"])


def download(harness: Harness, job_id: int, artifact_id: int, **headers: str):  # type: ignore[no-untyped-def]
    url = f"/api/v1/jobs/{job_id}/artifacts/{artifact_id}/download"
    return harness.client.get(url, headers={**harness.admin, **headers})


def test_an_interrupted_upload_resumes_from_the_offset_the_server_holds(
    harness: Harness, running: tuple[int, Headers]
) -> None:
    job_id, token = running
    artifact_id = register_file(harness, job_id, token)
    assert send_chunk(harness, job_id, artifact_id, token, 0, CONTENT[:4000]) == 204
    # The trainer was cut off; started again, it asks where to go on and sends the rest from there.
    offset = held(harness, job_id, artifact_id, token)
    assert offset == 4000
    assert send_chunk(harness, job_id, artifact_id, token, offset, CONTENT[offset:]) == 204
    assert close_upload(harness, job_id, artifact_id, token, CONTENT).status_code == 200
    assert download(harness, job_id, artifact_id).content == CONTENT


def test_a_chunk_sent_at_another_offset_than_the_bytes_held_is_409(
    harness: Harness, running: tuple[int, Headers]
) -> None:
    job_id, token = running
    artifact_id = register_file(harness, job_id, token)
    assert send_chunk(harness, job_id, artifact_id, token, 0, CONTENT[:100]) == 204
    assert send_chunk(harness, job_id, artifact_id, token, 50, CONTENT[50:]) == 409
    assert held(harness, job_id, artifact_id, token) == 100


def test_a_flipped_byte_is_refused_by_the_checksum_and_the_earlier_bytes_stay(
    harness: Harness, running: tuple[int, Headers]
) -> None:
    job_id, token = running
    artifact_id = register_file(harness, job_id, token)
    upload(harness, job_id, artifact_id, token, CONTENT)
    flipped = bytearray(CONTENT)
    flipped[5000] ^= 0x01
    assert send_chunk(harness, job_id, artifact_id, token, 0, bytes(flipped)) == 204
    refused = close_upload(harness, job_id, artifact_id, token, CONTENT)  # the checksum of what the trainer meant
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["field"] == "sha256" and "checksum" in refused.json()["detail"][0]["message"]
    [listed] = harness.client.get(f"/api/v1/jobs/{job_id}/artifacts", headers=harness.admin).json()["items"]
    assert listed["sha256"] == hashlib.sha256(CONTENT).hexdigest()
    assert download(harness, job_id, artifact_id).content == CONTENT
    assert held(harness, job_id, artifact_id, token) == 0  # the bad bytes are dropped: the next try starts anew


def test_a_truncated_upload_is_refused_naming_the_size_and_nothing_becomes_visible(
    harness: Harness, running: tuple[int, Headers]
) -> None:
    job_id, token = running
    artifact_id = register_file(harness, job_id, token)
    assert send_chunk(harness, job_id, artifact_id, token, 0, CONTENT[:-10]) == 204
    refused = close_upload(harness, job_id, artifact_id, token, CONTENT)
    assert refused.status_code == 422 and refused.json()["detail"][0]["field"] == "size"
    [listed] = harness.client.get(f"/api/v1/jobs/{job_id}/artifacts", headers=harness.admin).json()["items"]
    assert (listed["sha256"], listed["downloadable"]) == (None, False)
    assert download(harness, job_id, artifact_id).status_code == 404
    assert held(harness, job_id, artifact_id, token) == len(CONTENT) - 10  # kept, to resume


def test_the_same_artifact_registered_twice_is_one_artifact(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    assert register_file(harness, job_id, token) == register_file(harness, job_id, token)


def test_a_download_carries_the_checksum_headers_and_the_file_name(
    harness: Harness, running: tuple[int, Headers]
) -> None:
    job_id, token = running
    artifact_id = register_file(harness, job_id, token)
    upload(harness, job_id, artifact_id, token, CONTENT)
    answer = download(harness, job_id, artifact_id)
    digest = hashlib.sha256(CONTENT)
    assert answer.status_code == 200 and answer.headers["Accept-Ranges"] == "bytes"
    assert answer.headers["X-Checksum-Sha256"] == digest.hexdigest()
    assert answer.headers["Repr-Digest"] == f"sha-256=:{base64.b64encode(digest.digest()).decode()}:"
    assert answer.headers["Content-Disposition"].startswith('attachment; filename="weights.bin"')


@pytest.mark.parametrize(
    ("asked", "start", "end"),
    [
        ("bytes=0-99", 0, 100),
        ("bytes=10000-", 10000, 10240),
        ("bytes=-40", 10200, 10240),
        ("bytes=10200-99999", 10200, 10240),
    ],
)
def test_a_range_request_gets_206_with_that_range(
    harness: Harness, running: tuple[int, Headers], asked: str, start: int, end: int
) -> None:
    job_id, token = running
    artifact_id = register_file(harness, job_id, token)
    upload(harness, job_id, artifact_id, token, CONTENT)
    answer = download(harness, job_id, artifact_id, Range=asked)
    assert answer.status_code == 206
    assert answer.headers["Content-Range"] == f"bytes {start}-{end - 1}/{len(CONTENT)}"
    assert answer.content == CONTENT[start:end]


def test_a_range_past_the_end_is_416_with_the_size(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    artifact_id = register_file(harness, job_id, token)
    upload(harness, job_id, artifact_id, token, CONTENT)
    answer = download(harness, job_id, artifact_id, Range=f"bytes={len(CONTENT)}-")
    assert answer.status_code == 416 and answer.headers["Content-Range"] == f"bytes */{len(CONTENT)}"


def test_a_job_token_reads_its_own_teams_artifacts_and_gets_404_for_another_teams(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    source = harness.submit_ok(headers=lab)
    source_token = harness.start_job(source)
    artifact_id = register_file(harness, source, source_token)
    upload(harness, source, artifact_id, source_token, CONTENT)
    url = f"/api/v1/jobs/{source}/artifacts/{artifact_id}/download"
    teammate = harness.start_job(harness.submit_ok(headers=lab))
    stranger = harness.start_job(harness.submit_ok(headers=studio))
    assert harness.client.get(url, headers=teammate).content == CONTENT
    refused = harness.client.get(url, headers=stranger)
    missing = harness.client.get(f"/api/v1/jobs/{source}/artifacts/2000000001/download", headers=teammate)
    assert (refused.status_code, missing.status_code) == (404, 404)
