"""On the embedded platform (`sfumato up`) a remote reward on this machine is allowed, and the scheduler
process's prober answers it after the job is stored: a port nothing listens on reads "unreachable"."""

from __future__ import annotations

import socket

import pytest
from platform_harness import Platform

pytestmark = pytest.mark.slow


def test_sfumato_up_allows_a_loopback_reward_url_and_its_scheduler_answers_the_probe(sfumato_up: Platform) -> None:
    assert "SFUMATO_ALLOW_PRIVATE_URLS" not in sfumato_up.env  # `up` sets the embedded default itself
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    spec = {"name": "probed", "reward": [{"name": "remote", "url": url}]}
    with sfumato_up.client() as http:
        submitted = http.post("/api/v1/jobs", json=spec)
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["id"]
        assert http.post(f"/api/v1/jobs/{job_id}/cancel").status_code in (200, 202)  # the probe needs no run

        def answered() -> list[dict[str, str]] | None:
            shown = http.get(f"/api/v1/jobs/{job_id}").json()["reward_reachability"]
            return shown if shown[0]["state"] != "pending" else None

        assert sfumato_up.wait_for("the reward probe's answer", answered, timeout=60) == [
            {"field": "reward.0.url", "state": "unreachable"}
        ]
