"""A team's prompt set reaches a worker host over the platform alone: a worker whose folders (home, artifact root)
are not the server's trains the tiny model on an uploaded dataset; the trainer fetches the pinned version with its
job token into the job's folder on the worker's disk, and its eval images are drawn from the test split."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from platform_harness import Platform, prepare, wait_until_host_online
from sqlalchemy.orm import Session
from test_platform_flow import tiny_spec

from server.config import Settings
from server.db import make_engine
from server.migrate import upgrade
from server.services.auth import ensure_admin
from sfumato.cli.process_groups import start_process

pytestmark = pytest.mark.slow

TRAIN = b"a red apple\na blue car\na green ball\n"
TEST = b"a yellow cup\na purple bird\n"


def launch_two_hosts(tmp_path: Path, tiny_model: Path) -> tuple[Platform, Path]:
    """Server and scheduler on the "server host"; the worker on another, with a home and an artifact root of its
    own (the tiny model linked into that home, as a host that built it holds it). Returns the worker's root."""
    database_url = f"sqlite:///{tmp_path / 'sfumato.db'}"
    platform = prepare(tmp_path / "server-host", database_url, f"sqla+sqlite:///{tmp_path / 'broker.db'}", None)
    upgrade(database_url)
    engine = make_engine(database_url)
    with Session(engine) as session:
        ensure_admin(session, Settings(database_url=database_url, admin_token=platform.token))
    engine.dispose()
    worker_home, worker_root = tmp_path / "worker-host" / "home", tmp_path / "worker-host" / "artifacts"
    worker_home.mkdir(parents=True)
    (worker_home / tiny_model.name).symlink_to(tiny_model, target_is_directory=True)
    worker_env = platform.env | {"SFUMATO_HOME": str(worker_home), "SFUMATO_ARTIFACT_ROOT": str(worker_root)}
    me = [sys.executable, "-m", "sfumato.cli"]
    try:
        platform.start("server", [*me, "server", "--port", str(platform.port)])
        platform.start("scheduler", [*me, "scheduler"])
        worker = [*me, "worker"]
        platform.procs["worker"] = start_process(worker, worker_env, platform.logs / "worker.log", Path.cwd())
        wait_until_host_online(platform)
    except BaseException:
        platform.stop()
        raise
    return platform, worker_root


def test_a_worker_on_another_host_trains_on_an_uploaded_dataset(tmp_path: Path, tiny_model: Path) -> None:
    platform, worker_root = launch_two_hosts(tmp_path, tiny_model)
    try:
        with platform.client() as http:
            files = [("train", ("train.txt", TRAIN)), ("test", ("test.txt", TEST))]
            uploaded = http.post("/api/v1/datasets", data={"name": "colours", "format": "text"}, files=files)
            assert uploaded.status_code == 201, uploaded.text
        spec = tiny_spec(total_steps=1)
        spec["prompts"] = {"source": "dataset:colours", "eval_source": "dataset:colours:test"}
        job_id = platform.submit(spec)
        done = platform.wait_status(job_id, ("succeeded", "failed", "cancelled"), timeout=240)
        assert done["status"] == "succeeded", f"{done['error']}\n{platform.output()}"
        with platform.client() as http:
            samples = http.get(f"/api/v1/jobs/{job_id}/samples", params={"kind": "eval"}).json()["items"]
    finally:
        platform.stop()
    fetched = worker_root / "jobs" / str(job_id) / "datasets" / "colours@1"
    assert (fetched / "train.txt").read_bytes() == TRAIN and (fetched / "test.txt").read_bytes() == TEST
    server_job = tmp_path / "server-host" / "home" / "artifacts" / "jobs" / str(job_id)  # samples land here
    assert not (server_job / "datasets").exists()
    assert samples and {s["prompt"] for s in samples} <= {"a yellow cup", "a purple bird"}
