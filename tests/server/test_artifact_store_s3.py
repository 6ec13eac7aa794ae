"""The artifact store in an S3-compatible bucket (SFUMATO_ARTIFACT_STORE=s3://bucket/prefix): a real S3 server
(moto's `moto_server`, started here on a free port) behind boto3, as a MinIO or AWS bucket would be."""

from __future__ import annotations

import hashlib
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from platform_harness import free_port
from server_harness import Harness
from uploaded_artifacts import uploaded

from server.config import Settings

MOTO_SERVER = Path(sys.executable).with_name("moto_server")
BUCKET = "sfumato-artifacts"


@pytest.fixture
def s3_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if not MOTO_SERVER.exists():
        pytest.skip("moto[server] is not installed: pip install -e '.[dev]'")
    port = free_port()
    log = (tmp_path / "moto.log").open("wb")
    server = subprocess.Popen([str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log)
    endpoint = f"http://127.0.0.1:{port}"
    for env, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL_S3": endpoint}.items():  # fmt: skip
        monkeypatch.setenv(env, value)
    try:
        _wait_until_answering(endpoint, server)
        import boto3

        boto3.session.Session().client("s3").create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.terminate()
        server.wait(10)
        log.close()


def _wait_until_answering(endpoint: str, server: subprocess.Popen[bytes]) -> None:
    while server.poll() is None:
        try:
            httpx.get(endpoint, timeout=1)
            return
        except httpx.TransportError:
            continue
    raise AssertionError(f"moto_server exited with {server.returncode}")


@pytest.fixture
def settings(migrated_sqlite_url: str, tmp_path: Path, s3_endpoint: str) -> Settings:
    return Settings(
        home=tmp_path / "home",
        database_url=migrated_sqlite_url,
        artifact_root=tmp_path / "artifacts",
        artifact_store=f"s3://{BUCKET}/team-artifacts",
        secret_key=secrets.token_hex(32),
    )


def bucket_keys() -> list[str]:
    import boto3

    listed = boto3.session.Session().client("s3").list_objects_v2(Bucket=BUCKET)
    return sorted(item["Key"] for item in listed.get("Contents", []))


def test_an_upload_lands_in_the_bucket_and_downloads_by_range_from_it(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    data = bytes(range(256)) * 100
    artifact_id = uploaded(harness, job_id, token, "model", "model.safetensors", data)
    sha256 = hashlib.sha256(data).hexdigest()
    assert bucket_keys() == [f"team-artifacts/jobs/{job_id}/artifacts/{artifact_id}/{sha256}"]
    assert not any((harness.settings.resolved_artifact_root()).rglob("*.part"))
    url = f"/api/v1/jobs/{job_id}/artifacts/{artifact_id}/download"
    ranged = harness.client.get(url, headers={**harness.admin, "Range": "bytes=1000-1999"})
    assert ranged.status_code == 206 and ranged.content == data[1000:2000]
    assert harness.client.get(url, headers=harness.admin).content == data


def test_retention_deletes_the_pruned_checkpoint_from_the_bucket(harness: Harness) -> None:
    lab = harness.add_user("lena", "lab", "admin")
    team_id = harness.client.get("/api/v1/teams", headers=lab).json()["items"][0]["id"]
    job_id = harness.submit_ok(headers=lab)
    token = harness.start_job(job_id)
    for step in (1, 2):
        uploaded(harness, job_id, token, "checkpoint", f"step-{step}", f"step {step}".encode(), step)
    assert len(bucket_keys()) == 2
    retention = {"checkpoint_retention": 1}
    assert harness.client.patch(f"/api/v1/teams/{team_id}/artifact-storage", json=retention, headers=lab).is_success
    [kept] = bucket_keys()
    assert kept.endswith(hashlib.sha256(b"step 2").hexdigest())
