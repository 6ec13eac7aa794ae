"""A job on a second host, whose disk the server does not share (a worker with an artifact root of its own): its
trainer uploads each checkpoint and its final model, and both download from the server, file for file the same as
on that host's disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fault_harness import Cluster, tiny_spec

from sfumato import Client

pytestmark = pytest.mark.slow  # real server, scheduler, worker and trainer


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_job_on_a_host_with_its_own_disk_has_its_artifacts_downloadable_from_the_server(
    start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    cluster = start_cluster(postgres_url, redis_url, {})
    beta_disk = tmp_path / "beta-disk"
    cluster.start_worker("beta", 1, SFUMATO_ARTIFACT_ROOT=str(beta_disk))
    cluster.wait_hosts_online(["beta"])
    job_id = cluster.submit(tiny_spec(2, checkpoint={"every": 1}))
    done = cluster.wait_done(job_id, timeout=150)
    assert done["status"] == "succeeded", f"{done['error']}\n{cluster.output()}"

    with Client(cluster.url, cluster.platform.token) as api:
        artifacts = {(a.kind, a.name): a for a in api.artifacts(job_id)}
        assert all(a.downloadable for a in artifacts.values()), artifacts
        model = api.download_artifact(job_id, artifacts["model", "model"].id, tmp_path / "got")
        checkpoint = api.download_artifact(job_id, artifacts["checkpoint", "step-2"].id, tmp_path / "got")
    on_beta = beta_disk / "jobs" / str(job_id)
    assert tree(model) == tree(on_beta / "model") != {}
    assert tree(checkpoint) == tree(on_beta / "checkpoints" / "step-2") != {}
    server_disk = Path(cluster.platform.env["SFUMATO_HOME"]) / "artifacts" / "jobs" / str(job_id)
    assert not (server_disk / "model").exists()  # it came through the upload, not a shared disk
