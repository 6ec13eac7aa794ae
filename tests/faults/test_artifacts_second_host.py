"""A job on a second host, whose disk the server does not share (a worker with an artifact root of its own): it
trains on a team's uploaded prompt set, which its trainer fetches from the platform with its job token into the job's
folder on that host (the eval prompts from the set's test split), and it uploads each checkpoint and its final model,
which download from the server file for file the same as on that host's disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fault_harness import Cluster, tiny_spec

from sfumato import Client

pytestmark = pytest.mark.slow  # real server, scheduler, worker and trainer

TRAIN = b"a red apple\na blue car\na green ball\n"
TEST = b"a yellow cup\na purple bird\n"


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_job_on_a_host_with_its_own_disk_fetches_its_dataset_and_has_its_artifacts_downloadable_from_the_server(
    start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    cluster = start_cluster(postgres_url, redis_url, {})
    beta_disk = tmp_path / "beta-disk"
    cluster.start_worker("beta", 1, SFUMATO_ARTIFACT_ROOT=str(beta_disk))
    (tmp_path / "train.txt").write_bytes(TRAIN)
    (tmp_path / "test.txt").write_bytes(TEST)
    with Client(cluster.url, cluster.platform.token) as api:
        api.upload_dataset("colours", "text", tmp_path / "train.txt", test=tmp_path / "test.txt")
    cluster.wait_hosts_online(["beta"])
    prompts = {"source": "dataset:colours", "eval_source": "dataset:colours:test"}
    samples = {"every": 2, "count": 1}  # eval samples at steps 0 and 2
    job_id = cluster.submit(tiny_spec(2, checkpoint={"every": 1}, prompts=prompts, samples=samples))
    done = cluster.wait_done(job_id, timeout=150)
    assert done["status"] == "succeeded", f"{done['error']}\n{cluster.output()}"

    with Client(cluster.url, cluster.platform.token) as api:
        eval_prompts = {sample.prompt for sample in api.samples(job_id, kind="eval")}
        artifacts = {(a.kind, a.name): a for a in api.artifacts(job_id)}
        assert all(a.downloadable for a in artifacts.values()), artifacts
        model = api.download_artifact(job_id, artifacts["model", "model"].id, tmp_path / "got")
        checkpoint = api.download_artifact(job_id, artifacts["checkpoint", "step-2"].id, tmp_path / "got")
    on_beta = beta_disk / "jobs" / str(job_id)
    fetched = on_beta / "datasets" / "colours@1"
    assert (fetched / "train.txt").read_bytes() == TRAIN and (fetched / "test.txt").read_bytes() == TEST
    assert eval_prompts and eval_prompts <= {"a yellow cup", "a purple bird"}
    assert tree(model) == tree(on_beta / "model") != {}
    assert tree(checkpoint) == tree(on_beta / "checkpoints" / "step-2") != {}
    server_disk = Path(cluster.platform.env["SFUMATO_HOME"]) / "artifacts" / "jobs" / str(job_id)
    assert not (server_disk / "model").exists()  # it came through the upload, not a shared disk
    assert not (server_disk / "datasets").exists()  # the dataset went to the worker's disk only
