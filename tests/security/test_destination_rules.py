"""Where a reward URL may point, and what it may hold: link-local, unspecified, multicast, broadcast and metadata
addresses never; loopback and private ones only where SFUMATO_ALLOW_PRIVATE_URLS is on, in whatever numeric form
they are written; no control character or whitespace; the string stored is the string checked, and nothing is
stored before the check is complete."""

from __future__ import annotations

import threading

import pytest
from security_support import login_with_token
from server_harness import Harness

from server.models import Job
from server.services.reward_reachability import answer_pending_probes

ALWAYS_REFUSED = [
    "http://169.254.169.254",
    "http://[fe80::1]:8000",
    "http://0.0.0.0:8000",
    "http://[::]:8000",
    "http://0:8000",
    "http://224.0.0.1",
    "http://255.255.255.255",
    "http://240.0.0.1",
    "http://metadata.google.internal",
    "http://[::ffff:169.254.169.254]",
    "http://2852039166",  # 169.254.169.254 in decimal
    "http://100.100.100.200",
    "http://[fd00:ec2::254]",
]
PRIVATE = [
    "http://127.0.0.1:9000",
    "http://[::1]:9000",
    "http://2130706433:9000",
    "http://0177.0.0.1:9000",
    "http://0x7f.1:9000",
    "http://127.1:9000",
    "http://[::ffff:127.0.0.1]:9000",
    "http://[64:ff9b::7f00:1]:9000",
    "http://localhost:9000",
    "http://10.0.0.5",
    "http://172.16.0.1",
    "http://192.168.1.1",
    "http://100.64.0.1",
    "http://[fc00::1]",
]
CONTROL_CHARACTERS = [
    "http://reward.example.com\r\nX-Injected: 1",
    "http://reward.example.com\n",
    "http://reward.\texample.com",
    "http://reward.example.com\x00",
    "http://reward.example.com/\x7f",
    "http://reward.example.com/\x1b",
    " http://reward.example.com",
    "http://reward.example.com/a b",
]


def remote(url: str) -> dict:
    return {"reward": [{"name": "brightness"}, {"name": "remote", "url": url}]}


def allow_private(harness: Harness, allowed: bool) -> None:
    harness.client.app.state.settings.allow_private_urls = allowed  # type: ignore[attr-defined]


def assert_refused(harness: Harness, url: str, words: str) -> None:
    response = harness.submit(remote(url))
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["field"] == "reward.1.url" and words in error["message"], error
    assert harness.job_count() == 0


@pytest.mark.parametrize("url", ALWAYS_REFUSED)
def test_link_local_unspecified_multicast_and_metadata_urls_are_refused_even_where_private_ones_are_allowed(
    harness: Harness, url: str
) -> None:
    allow_private(harness, True)
    assert_refused(harness, url, "never called")


@pytest.mark.parametrize("url", PRIVATE)
def test_loopback_and_private_urls_in_any_numeric_form_are_refused_by_default(harness: Harness, url: str) -> None:
    assert_refused(harness, url, "SFUMATO_ALLOW_PRIVATE_URLS")


@pytest.mark.parametrize("url", PRIVATE)
def test_loopback_and_private_urls_are_accepted_where_private_urls_are_allowed(harness: Harness, url: str) -> None:
    allow_private(harness, True)
    assert harness.submit(remote(url)).status_code == 201


@pytest.mark.parametrize("url", CONTROL_CHARACTERS)
def test_control_characters_and_whitespace_in_a_reward_url_are_422_and_nothing_is_stored(
    harness: Harness, url: str
) -> None:
    assert_refused(harness, url, "character")  # a NUL is refused in any spec string before the URL rule sees it


def test_the_stored_url_is_the_checked_one(harness: Harness) -> None:
    job_id = harness.submit_ok(remote("http://reward.example.com:8000/"))
    stored = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin).json()["spec"]["reward"][1]["url"]
    assert stored == "http://reward.example.com:8000"


def test_a_queued_job_holding_a_url_stored_under_older_rules_is_shown_and_probed_unreachable(harness: Harness) -> None:
    job_id = harness.submit_ok(remote("http://reward.example.com:8000"))
    with harness.session() as session:  # what an older server stored: the raw string, CR LF and all
        job = session.get_one(Job, job_id)
        job.spec = {**job.spec, "reward": [job.spec["reward"][0], {**job.spec["reward"][1], "url": "http://a\r\nb"}]}
        session.commit()
    assert answer_pending_probes(harness.sessions, harness.settings, threading.Event()) == 1
    answer = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin)
    assert answer.status_code == 200 and answer.json()["reward_reachability"][0]["state"] == "unreachable"
    assert login_with_token(harness, harness.admin) == 303
    assert harness.client.get(f"/jobs/{job_id}").status_code == 200
