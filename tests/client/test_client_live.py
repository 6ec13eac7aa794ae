"""The Python client against a live server on PostgreSQL, with a real worker and scheduler: submit → wait →
metrics → samples → logs → compare, cancel and retry, and every error a user can cause."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from client_harness import TINY_STEPS, TinyJobs
from platform_harness import Platform, free_port

from sfumato import (
    AuthenticationError,
    Client,
    ConnectionFailed,
    NotFound,
    SpecFileError,
    ValidationFailed,
    WaitTimeout,
)
from sfumato.specfile import read_spec_file

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
STEPS = int(TINY_STEPS)


@pytest.fixture
def client(live_platform: Platform) -> Iterator[Client]:
    with Client(live_platform.url, live_platform.token) as api:
        yield api


def test_a_submitted_job_is_waited_for_until_it_has_succeeded(client: Client, tiny_jobs: TinyJobs) -> None:
    job = client.job(tiny_jobs.native_id)
    assert job.status == "succeeded", job.error
    assert (job.step, job.total_steps) == (STEPS, STEPS)
    assert job.executor == "native" and job.spec is not None and job.spec["algorithm"]["total_steps"] == STEPS
    assert [e.status for e in job.events or []] == ["queued", "scheduled", "running", "succeeded"]
    assert client.wait(job.id, timeout=1).status == "succeeded"  # a finished job returns at once


def test_metrics_are_plain_lists_per_key_on_the_step_axis(client: Client, tiny_jobs: TinyJobs) -> None:
    series = client.metrics(tiny_jobs.native_id, ["reward/mean", "loss", "no/such/key"])
    assert set(series) == {"reward/mean", "loss"}
    reward = series["reward/mean"]
    assert reward.steps == list(range(1, STEPS + 1))
    assert all(isinstance(v, float) for v in reward.values)
    assert reward.last() == client.job(tiny_jobs.native_id).last_reward


def test_metrics_without_keys_fetch_every_key_the_job_reported(client: Client, tiny_jobs: TinyJobs) -> None:
    series = client.metrics(tiny_jobs.native_id)
    assert {"reward/mean", "throughput/samples_per_s", "memory/peak_bytes", "loss"} <= set(series)
    assert set(series) == set(client.metric_keys(tiny_jobs.native_id))


def test_metrics_frame_has_a_row_per_step_and_a_column_per_key(client: Client, tiny_jobs: TinyJobs) -> None:
    frame = client.metrics_frame(tiny_jobs.native_id, ["reward/mean", "loss"])
    assert list(frame.index) == list(range(1, STEPS + 1))
    assert list(frame.columns) == ["loss", "reward/mean"]
    assert frame["reward/mean"].iloc[-1] == pytest.approx(client.job(tiny_jobs.native_id).last_reward)


def test_samples_of_a_step_are_listed_and_their_images_downloaded(
    client: Client, tiny_jobs: TinyJobs, tmp_path: Path
) -> None:
    every = client.samples(tiny_jobs.native_id)
    assert {s.step for s in every} == set(range(0, STEPS + 1))  # step 0: the base model's eval samples
    last = client.samples(tiny_jobs.native_id, step=STEPS)
    assert last and {s.step for s in last} == {STEPS} and last[0].prompt == "a red apple"
    assert client.sample_image(last[0])[:4] in (b"\x89PNG", b"RIFF")
    paths = client.download_samples(tiny_jobs.native_id, tmp_path / "images", step=STEPS)
    assert [p.name for p in paths] == [f"step{STEPS:06d}-{s.id}{p.suffix}" for s, p in zip(last, paths, strict=True)]
    assert all(p.stat().st_size > 0 for p in paths)


def test_logs_follow_ends_once_the_job_has_finished(client: Client, tiny_jobs: TinyJobs) -> None:
    lines = list(client.logs(tiny_jobs.native_id, follow=True))
    assert lines and [line.id for line in lines] == sorted(line.id for line in lines)
    assert any(f"step {STEPS}/{STEPS}" in line.text for line in lines), [line.text for line in lines][-5:]


def test_compare_reports_speedup_over_the_native_job_memory_and_final_reward(
    client: Client, tiny_jobs: TinyJobs
) -> None:
    answer = client.compare([tiny_jobs.native_id, tiny_jobs.lean_id])
    native, lean = answer.jobs
    assert (native.executor, lean.executor) == ("native", "lean_retain")
    assert answer.native_job_id == native.id and native.speedup == 1.0
    assert native.samples_per_s and lean.samples_per_s
    assert lean.speedup == pytest.approx(lean.samples_per_s / native.samples_per_s)
    throughput = [
        v for _, v in client.metrics(native.id, ["throughput/samples_per_s"])["throughput/samples_per_s"].points()
    ]
    assert native.samples_per_s == statistics.median(throughput[answer.definitions["warmup_steps"] :])
    memory = client.metrics(lean.id, ["memory/peak_bytes"])["memory/peak_bytes"]
    assert lean.peak_memory_bytes == max(v for _, v in memory.points()) > 0
    assert native.final_reward == client.metrics(native.id, ["reward/mean"])["reward/mean"].last()


def test_jobs_are_filtered_by_executor_and_status(client: Client, tiny_jobs: TinyJobs) -> None:
    found = client.jobs(executor="lean_retain", status="succeeded")  # other tests share the platform
    assert tiny_jobs.lean_id in [j.id for j in found] and tiny_jobs.native_id not in [j.id for j in found]
    assert {(j.executor, j.status) for j in found} == {("lean_retain", "succeeded")}
    assert tiny_jobs.native_id in [j.id for j in client.jobs(status=["succeeded", "failed"])]
    assert not client.jobs(status="failed", executor="native")


def test_a_cancelled_job_can_be_retried_and_wait_times_out_while_it_runs(
    client: Client, tiny_jobs: TinyJobs, live_platform: Platform
) -> None:
    long = client.submit(_long_spec(tiny_jobs))
    with pytest.raises(WaitTimeout, match=f"job {long.id} is still"):
        client.wait(long.id, timeout=0.5, interval=0.2)
    client.cancel(long.id)
    assert client.wait(long.id, timeout=60, interval=0.5).status == "cancelled"
    assert client.retry(long.id).status == "queued"
    client.cancel(long.id)
    assert client.wait(long.id, timeout=60, interval=0.5).status == "cancelled"


def _long_spec(tiny_jobs: TinyJobs) -> dict[str, Any]:
    return read_spec_file(tiny_jobs.spec_file, {"TINY_STEPS": "1000", "TINY_EXECUTOR": "long"})


def test_an_unknown_job_raises_not_found_with_the_server_message(client: Client) -> None:
    with pytest.raises(NotFound, match="job 999999 not found") as caught:
        client.job(999999)
    assert caught.value.status_code == 404


def test_a_wrong_token_raises_authentication_error(live_platform: Platform) -> None:
    with Client(live_platform.url, "sfu_not-a-token") as client, pytest.raises(AuthenticationError, match="invalid"):
        client.jobs()


def test_an_unreachable_server_raises_connection_failed() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with Client(url, "sfu_x") as client, pytest.raises(ConnectionFailed, match=f"cannot reach .* at {url}"):
        client.jobs()


def test_a_refused_spec_raises_validation_failed_naming_the_field(client: Client, tiny_jobs: TinyJobs) -> None:
    spec = _long_spec(tiny_jobs)
    with pytest.raises(ValidationFailed) as caught:
        client.submit(spec, overrides=["algorithm.group_size=1"])
    assert caught.value.status_code == 422
    assert [e["field"] for e in caught.value.errors] == ["algorithm.group_size"]
    assert str(caught.value).startswith("algorithm.group_size: ")


def test_an_override_of_a_field_the_schema_lacks_is_refused_before_sending(client: Client, tiny_jobs: TinyJobs) -> None:
    before = len(client.jobs(limit=500))
    with pytest.raises(SpecFileError, match=r"algorithm has no field 'grup_size'; fields: .*group_size"):
        client.submit(_long_spec(tiny_jobs), overrides=["algorithm.grup_size=8"])
    assert len(client.jobs(limit=500)) == before
