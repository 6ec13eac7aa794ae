"""Attack 9: no size limits on submissions. A 24 MB spec (1.5 million lora_targets) was accepted and made a
45 MB job page, and nothing capped the queued jobs of a user or a team."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from security_support import serve
from server_harness import Harness

from server.config import Settings


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
