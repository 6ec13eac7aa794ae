"""A job whose model is a hub id fails, on a host that cannot reach the hub, with a headline naming the model path
and the cause ("could not download org/name from the hub: no network on host h1"), not the HTTP library's error:
a real trainer under torchrun with nothing listening at the hub's endpoint (or the hub off) downloads nothing,
and its output goes through the worker's own finish_run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from server_harness import Harness

from server.models import Job
from server.services.job_runs import finish_run
from trainer.models.hub_download import HUB_OFF, NO_NETWORK
from worker.supervisor import TAIL_LINES

REPO = Path(__file__).resolve().parents[2]
HUB_MODEL = "example-org/absent-model"


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: the headline is read from the job's error like any other column."""
    return migrated_sqlite_url


def closed_endpoint() -> str:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def trainer_output(tmp_path: Path, spec: dict[str, object], hub_env: dict[str, str]) -> tuple[int, list[str]]:
    """``torchrun --nproc-per-node 1 -m trainer run`` with an empty hub cache: its exit code and output lines."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SFUMATO_API"))}
    env.update(SFUMATO_HOME=str(tmp_path / "home"), HF_HOME=str(tmp_path / "hf"), **hub_env)
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1", "-m", "trainer",
            "run", "--spec", str(spec_path), "--output-dir", str(tmp_path / "out")]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, (done.stdout + done.stderr).splitlines()


@pytest.mark.parametrize(
    ("hub_env", "cause"),
    [({"HF_ENDPOINT": closed_endpoint()}, NO_NETWORK), ({"HF_HUB_OFFLINE": "1"}, HUB_OFF)],
    ids=["no-network", "hub-off"],
)
def test_a_hub_model_that_cannot_be_downloaded_fails_with_a_headline_naming_the_path_the_hub_and_the_host(
    harness: Harness, tmp_path: Path, hub_env: dict[str, str], cause: str
) -> None:
    host_id = harness.add_host("h1", device_type="cpu", count=1)
    job_id = harness.submit_ok({"name": "from-the-hub", "model": {"family": "sd3", "path": HUB_MODEL}})
    harness.start_job(job_id, host_id=host_id)
    with harness.session() as session:
        spec, attempt = session.get_one(Job, job_id).spec, session.get_one(Job, job_id).attempt

    exit_code, output = trainer_output(tmp_path, spec, hub_env)
    assert exit_code != 0
    assert not (tmp_path / "hf" / "hub" / "models--example-org--absent-model" / "snapshots").exists()
    with harness.session() as session:
        finish_run(session, job_id, attempt, 0, "h1", exit_code, None, output[-TAIL_LINES:])
        session.commit()

    job = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin).json()
    assert job["status"] == "failed"
    assert job["root_cause"] == f"could not download {HUB_MODEL} from the hub: {cause} on host h1", job["error"]
