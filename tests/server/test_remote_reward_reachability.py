"""A remote reward's server is probed once, after the job is stored and outside the submit request, and the job
shows one of two words for it: reachable or unreachable. A closed port, a silent listener, a database and a
server that answers something else all read the same."""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest
from server_harness import Harness

from server.config import Settings
from server.services.reward_reachability import answer_pending_probes
from sfumato.cli.reward_server_process import reward_server

ERROR_WORDS = ("Error", "Timeout", "refused", "answered", "health check")


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: the probes' rows are plain inserts and updates."""
    return migrated_sqlite_url


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The embedded platform's rule: reward servers on this machine may be named."""
    return settings.model_copy(update={"allow_private_urls": True})


def remote(url: str) -> dict:
    return {"reward": [{"name": "brightness"}, {"name": "remote", "url": url, "weight": 0.5}]}


def answer_all_probes(harness: Harness) -> None:
    """The scheduler process's prober, pass after pass until nothing is pending."""
    settings = harness.client.app.state.settings  # type: ignore[attr-defined]
    for _ in range(10):
        if answer_pending_probes(harness.sessions, settings, threading.Event()) == 0:
            return
    raise AssertionError("probes still pending after 10 passes")


def job(harness: Harness, job_id: int) -> dict:
    response = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin)
    assert response.status_code == 200, response.text
    return dict(response.json())


@contextmanager
def listener(host: str = "127.0.0.1") -> Iterator[socket.socket]:
    """A port that accepts connections into its backlog and never answers; accept() waits at most 0.5 s."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        sock.listen()
        sock.settimeout(0.5)
        yield sock


def closed_port_url() -> str:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def shared_server_urls() -> list[str]:
    """The PostgreSQL and Redis the tests were given, as a port scanner would name them."""
    urls = []
    for name in ("SFUMATO_TEST_POSTGRES_URL", "SFUMATO_TEST_REDIS_URL"):
        parts = urlsplit(os.environ.get(name, ""))
        if parts.hostname and parts.port:
            urls.append(f"http://{parts.hostname}:{parts.port}")
    return urls


def test_every_unreachable_destination_reads_the_same_single_word(harness: Harness) -> None:
    with listener() as silent, reward_server("--reward", "brightness") as other:
        urls = [closed_port_url(), f"http://127.0.0.1:{silent.getsockname()[1]}", f"{other.url}/elsewhere"]
        urls += shared_server_urls()
        submitted = [harness.submit(remote(url)) for url in urls]
        answers = [response.json() for response in submitted]
        assert [r.status_code for r in submitted] == [201] * len(urls)
        assert all(a["reward_reachability"] == [{"field": "reward.1.url", "state": "pending"}] for a in answers)
        answer_all_probes(harness)
    probed = [job(harness, answer["id"]) for answer in answers]
    unreachable = [{"field": "reward.1.url", "state": "unreachable"}]
    assert [p["reward_reachability"] for p in probed] == [unreachable] * len(urls)
    for answer in [*answers, *probed]:
        assert answer["warnings"] == []
        shown = str({k: v for k, v in answer.items() if k != "spec"})
        assert not any(word in shown for word in ERROR_WORDS), shown


def test_a_reward_server_that_answers_is_reachable(harness: Harness) -> None:
    with reward_server("--reward", "brightness") as server:
        job_id = harness.submit_ok(remote(server.url))
        answer_all_probes(harness)
    assert job(harness, job_id)["reward_reachability"] == [{"field": "reward.1.url", "state": "reachable"}]


def test_the_submit_request_opens_no_connection_and_the_prober_does_later(harness: Harness) -> None:
    with listener() as sock:
        response = harness.submit(remote(f"http://127.0.0.1:{sock.getsockname()[1]}"))
        assert response.status_code == 201, response.text
        with pytest.raises(TimeoutError):
            sock.accept()
        prober = threading.Thread(target=answer_all_probes, args=(harness,))
        prober.start()
        sock.settimeout(10)
        connection, _ = sock.accept()
        connection.close()
        prober.join()


def test_with_probing_off_no_probe_is_queued_and_no_connection_is_opened(harness: Harness) -> None:
    harness.client.app.state.settings.remote_reward_probe = False  # type: ignore[attr-defined]
    with listener() as sock:
        response = harness.submit(remote(f"http://127.0.0.1:{sock.getsockname()[1]}"))
        answer_all_probes(harness)
        with pytest.raises(TimeoutError):
            sock.accept()
    assert response.status_code == 201 and response.json()["reward_reachability"] == []


def this_machine_name() -> str:
    """A name the resolver answers with a loopback or private address (the machine's own name, in /etc/hosts)."""
    name = socket.gethostname()
    try:
        answers = {info[4][0] for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    except OSError:
        pytest.skip(f"{name} does not resolve here")
    if any(ipaddress.ip_address(a.split("%")[0]).is_global for a in answers):
        pytest.skip(f"{name} resolves to a global address here")
    return name


def test_a_name_that_resolves_to_a_private_address_is_unreachable_without_a_connection(harness: Harness) -> None:
    harness.client.app.state.settings.allow_private_urls = False  # type: ignore[attr-defined]
    name = this_machine_name()
    with listener("0.0.0.0") as sock:
        job_id = harness.submit_ok(remote(f"http://{name}:{sock.getsockname()[1]}"))
        answer_all_probes(harness)
        with pytest.raises(TimeoutError):
            sock.accept()
    assert job(harness, job_id)["reward_reachability"] == [{"field": "reward.1.url", "state": "unreachable"}]
