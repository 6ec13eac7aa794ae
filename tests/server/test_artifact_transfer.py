"""The trainer's upload and the two downloads (the client's, the trainer's fetch) against the real app served by
uvicorn: a folder goes up as one deterministic tar stream, an upload and a download cut short resume, and what
arrives is the folder that was sent."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dataset_support import served
from server_harness import Harness, Headers
from uploaded_artifacts import register

from sfumato import Client
from trainer.reporting.artifact_fetch import fetch_artifact
from trainer.reporting.artifact_stream import artifact_chunks
from trainer.reporting.artifact_upload import upload_artifact
from trainer.reporting.ingest_client import IngestClient
from trainer.reporting.reporter import Reporter

CHUNK = 64 * 1024


@pytest.fixture
def live(harness: Harness) -> Iterator[str]:
    """The harness's app served on a free port (the trainer and the client speak real HTTP)."""
    yield from served(harness)


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    folder = tmp_path / "out" / "checkpoints" / "step-2"
    (folder / "unet").mkdir(parents=True)
    (folder / "unet" / "weights.safetensors").write_bytes(os.urandom(5 * CHUNK + 123))
    (folder / "trainer_state.json").write_text('{"step": 2}')
    return folder


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@dataclass
class Registered:
    """A running job's checkpoint registered (not uploaded yet), and the trainer's client for its upload."""

    job_id: int
    artifact_id: int
    client: IngestClient


@pytest.fixture
def registered(harness: Harness, live: str) -> Registered:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    artifact_id = register(harness, job_id, token, "checkpoint", "step-2", "checkpoints/step-2", 2)
    return Registered(job_id, artifact_id, IngestClient(f"{live}/api/v1/ingest/{job_id}", raw(token), 10))


def raw(headers: Headers) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


class Interrupted(Exception):
    pass


def test_a_folder_upload_cut_short_resumes_and_downloads_as_the_same_files(
    harness: Harness, live: str, checkpoint: Path, registered: Registered, tmp_path: Path
) -> None:
    job_id, artifact_id, client = registered.job_id, registered.artifact_id, registered.client
    held: list[int] = []

    def cut_after_two_chunks(offset: int) -> None:
        held.append(offset)
        if offset >= 2 * CHUNK:
            raise Interrupted

    with pytest.raises(Interrupted):
        upload_artifact(client, artifact_id, checkpoint, chunk_bytes=CHUNK, on_chunk=cut_after_two_chunks)
    offsets: list[int] = []
    done = upload_artifact(client, artifact_id, checkpoint, chunk_bytes=CHUNK, on_chunk=offsets.append)
    assert held[-1] < offsets[0] <= held[-1] + CHUNK  # went on after the bytes held, sent nothing twice
    assert done.packing == "tar" and done.size == offsets[-1]
    with Client(live, raw(harness.admin)) as api:
        unpacked = api.download_artifact(job_id, artifact_id, tmp_path / "downloads")
    assert unpacked == tmp_path / "downloads" / "step-2"
    assert tree(unpacked) == tree(checkpoint)


def test_a_folders_tar_stream_depends_on_names_and_contents_only(checkpoint: Path) -> None:
    before = b"".join(artifact_chunks(checkpoint, CHUNK))
    for path in checkpoint.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))
    (checkpoint / "trainer_state.json").chmod(0o600)
    assert b"".join(artifact_chunks(checkpoint, CHUNK)) == before


def test_the_reporter_uploads_the_folder_of_an_artifact_event(harness: Harness, live: str, checkpoint: Path) -> None:
    job_id = harness.submit_ok()
    token = raw(harness.start_job(job_id))
    reporter = Reporter(checkpoint.parents[1], live, str(job_id), 1, token, batch_interval_s=0.05)
    reporter.artifact("checkpoint", "step-2", 2, "checkpoints/step-2")
    reporter.close()
    [listed] = harness.client.get(f"/api/v1/jobs/{job_id}/artifacts", headers=harness.admin).json()["items"]
    assert (listed["downloadable"], listed["packing"]) == (True, "tar")


def test_a_download_cut_short_resumes_with_a_range_and_a_corrupt_part_is_fetched_again(
    harness: Harness, live: str, checkpoint: Path, registered: Registered, tmp_path: Path
) -> None:
    job_id, artifact_id = registered.job_id, registered.artifact_id
    upload_artifact(registered.client, artifact_id, checkpoint, chunk_bytes=CHUNK)
    whole = b"".join(artifact_chunks(checkpoint, CHUNK))
    dest = tmp_path / "fetched"
    dest.mkdir()
    (dest / f".fetch-{job_id}-{artifact_id}.part").write_bytes(whole[:CHUNK])  # a fetch cut short
    teammate = raw(harness.start_job(harness.submit_ok()))
    assert tree(fetch_artifact(live, teammate, job_id, artifact_id, dest)) == tree(checkpoint)
    corrupt = bytearray(whole[:CHUNK])
    corrupt[10] ^= 0xFF
    (dest / f".fetch-{job_id}-{artifact_id}.part").write_bytes(bytes(corrupt))
    assert tree(fetch_artifact(live, teammate, job_id, artifact_id, dest)) == tree(checkpoint)


def test_sfumato_download_fetches_the_latest_checkpoint_and_unpacks_it(
    harness: Harness, live: str, checkpoint: Path, registered: Registered, tmp_path: Path
) -> None:
    job_id = registered.job_id
    upload_artifact(registered.client, registered.artifact_id, checkpoint)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SFUMATO_")}
    env.update(HOME=str(tmp_path), SFUMATO_URL=live, SFUMATO_TOKEN=raw(harness.admin))
    argv = [sys.executable, "-m", "sfumato.cli", "download", str(job_id), "--kind", "checkpoint", "--out", "got"]
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "got/step-2"
    assert tree(tmp_path / "got" / "step-2") == tree(checkpoint)
    missing = subprocess.run([*argv[:-2], "--step", "9"], env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=60)  # fmt: skip
    assert missing.returncode == 1
    assert "no downloadable checkpoint at step 9; on the platform: checkpoint step-2 (step 2)" in missing.stderr
