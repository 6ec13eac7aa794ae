"""Attack 9: no size limits on submissions. A 24 MB spec (1.5 million lora_targets) was accepted and made a
45 MB job page, and nothing capped the queued jobs of a user or a team. Later, retry skipped the cap: 100
queued jobs became 110. Every path into the queue is held here (side by side: tests/web/test_compare_page.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from security_support import serve
from server_harness import Harness, Headers
from sqlalchemy import func, select

from server.config import Settings
from server.models import Job, JobStatus
from tests.spec.advice_fixture import REPORT, SPEC_DATA


@pytest.fixture
def limited(settings: Settings) -> Iterator[Harness]:
    small = {"max_spec_bytes": 20_000, "max_queued_per_user": 2, "max_queued_per_team": 3}
    yield from serve(settings.model_copy(update=small))


def test_a_spec_over_the_size_limit_is_413_naming_the_setting(limited: Harness) -> None:
    spec = {"name": "big", "model": {"finetune": "lora", "lora_targets": [f"block.{i}.to_q" for i in range(1500)]}}
    response = limited.submit(spec)
    assert response.status_code == 413, response.text
    assert "SFUMATO_MAX_SPEC_BYTES" in response.json()["detail"] and limited.job_count() == 0


def test_a_spec_with_too_many_lora_targets_is_422_naming_the_field(harness: Harness) -> None:
    response = harness.submit({"name": "wide", "model": {"lora_targets": ["to_q"] * 257}})
    assert response.status_code == 422, response.text
    assert [e["field"] for e in response.json()["detail"]] == ["model.lora_targets"]


def test_queued_jobs_are_capped_per_user_with_429_naming_the_limit(limited: Harness) -> None:
    lena = limited.add_user("lena", "lab")
    assert [limited.submit({"name": f"j{i}"}, lena).status_code for i in range(3)] == [201, 201, 429]
    assert "SFUMATO_MAX_QUEUED_PER_USER" in limited.submit({"name": "again"}, lena).json()["detail"]


def test_queued_jobs_are_capped_per_team_with_429_naming_the_limit(limited: Harness) -> None:
    lena, sam = limited.add_user("lena", "lab"), limited.add_user("sam", "lab")
    assert [limited.submit({"name": f"l{i}"}, lena).status_code for i in range(2)] == [201, 201]
    assert limited.submit({"name": "s0"}, sam).status_code == 201
    refused = limited.submit({"name": "s1"}, sam)
    assert refused.status_code == 429 and "SFUMATO_MAX_QUEUED_PER_TEAM" in refused.json()["detail"]


def test_a_job_that_starts_makes_room_in_the_queue(limited: Harness) -> None:
    lena = limited.add_user("lena", "lab")
    first = limited.submit_ok({"name": "a"}, lena)
    limited.submit_ok({"name": "b"}, lena)
    limited.start_job(first)
    assert limited.submit({"name": "c"}, lena).status_code == 201


def _queued(harness: Harness) -> int:
    with harness.session() as session:
        return session.scalar(select(func.count()).select_from(Job).where(Job.status == JobStatus.QUEUED)) or 0


def _status(harness: Harness, job_id: int) -> str:
    with harness.session() as session:
        return session.get_one(Job, job_id).status


def test_retrying_into_a_full_queue_is_429_naming_the_limit_and_leaves_the_job_as_it_was(limited: Harness) -> None:
    lena = limited.add_user("lena", "lab")
    cancelled = limited.submit_ok({"name": "a"}, lena)
    limited.submit_ok({"name": "b"}, lena)
    assert limited.client.post(f"/api/v1/jobs/{cancelled}/cancel", headers=lena).status_code == 200
    limited.submit_ok({"name": "c"}, lena)  # the cancelled job's place, taken
    refused = limited.client.post(f"/api/v1/jobs/{cancelled}/retry", headers=lena)
    assert refused.status_code == 429 and "SFUMATO_MAX_QUEUED_PER_USER" in refused.json()["detail"]
    assert (_status(limited, cancelled), _queued(limited)) == ("cancelled", 2)


def test_retrying_an_experiment_whose_failed_cells_do_not_fit_is_429_with_the_count(limited: Harness) -> None:
    lena = limited.add_user("lena", "lab")
    body = {"name": "exp", "spec": {"name": "base"}, "axes": [{"path": "seed", "values": [1, 2]}]}
    created = limited.client.post("/api/v1/experiments", json=body, headers=lena)
    assert created.status_code == 201, created.text
    cells = [cell["job_id"] for cell in created.json()["cells"]]
    for job_id in cells:
        limited.start_job(job_id)
        limited.finish_job(job_id, JobStatus.FAILED)
    limited.submit_ok({"name": "since"}, lena)
    refused = limited.client.post(f"/api/v1/experiments/{created.json()['id']}/retry", headers=lena)
    assert refused.status_code == 429, refused.text
    assert "these 2 jobs need 2 places and 1 are left" in refused.json()["detail"]
    assert [_status(limited, job_id) for job_id in cells] == ["failed", "failed"]


def _answered_advice(harness: Harness, headers: Headers) -> int:
    """An advice of `headers`' team whose probe job ran (so it holds no place in the queue) and reported."""
    harness.add_host("cpu-box", device_type="cpu", count=2)
    created = harness.client.post("/api/v1/advise", json={"spec": SPEC_DATA}, headers=headers)
    assert created.status_code == 202, created.text
    token = harness.start_job(created.json()["probe_job_id"])
    report = REPORT.model_dump(mode="json")
    sent = harness.client.post(f"/api/v1/ingest/{created.json()['probe_job_id']}/probe", json=report, headers=token)
    assert sent.status_code == 204, sent.text
    return int(created.json()["id"])


def test_submitting_from_an_advice_into_a_full_queue_is_429_naming_the_limit(limited: Harness) -> None:
    lena = limited.add_user("lena", "lab")
    advice_id = _answered_advice(limited, lena)
    limited.submit_ok({"name": "a"}, lena)
    limited.submit_ok({"name": "b"}, lena)
    refused = limited.client.post(f"/api/v1/advice/{advice_id}/submit", json={"executor": "native"}, headers=lena)
    assert refused.status_code == 429 and "SFUMATO_MAX_QUEUED_PER_USER" in refused.json()["detail"]
    assert _queued(limited) == 2


def test_asking_for_advice_with_a_full_queue_is_429_and_queues_no_probe(limited: Harness) -> None:
    lena = limited.add_user("lena", "lab")
    limited.add_host("cpu-box", device_type="cpu", count=2)
    limited.submit_ok({"name": "a"}, lena)
    limited.submit_ok({"name": "b"}, lena)
    refused = limited.client.post("/api/v1/advise", json={"spec": SPEC_DATA}, headers=lena)
    assert refused.status_code == 429 and "SFUMATO_MAX_QUEUED_PER_USER" in refused.json()["detail"]
    assert limited.job_count() == 2
