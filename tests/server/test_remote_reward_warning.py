"""A remote reward whose server does not answer its health check is accepted with a warning (it may come up
later); one that answers needs none."""

from __future__ import annotations

import socket

import pytest
from server_harness import Harness

from sfumato.cli.reward_server_process import reward_server


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: the warning reads no table."""
    return migrated_sqlite_url


def remote(url: str) -> dict:
    return {"reward": [{"name": "brightness"}, {"name": "remote", "url": url, "weight": 0.5}]}


def test_an_unreachable_reward_server_is_accepted_with_a_warning_naming_the_field(harness: Harness) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    response = harness.submit(remote(url))
    assert response.status_code == 201, response.text
    (warning,) = response.json()["warnings"]
    assert warning.startswith(f"reward.1.url '{url}' does not answer its health check")
    assert response.json()["status"] == "queued"


def test_a_reward_server_that_answers_needs_no_warning(harness: Harness) -> None:
    with reward_server("--reward", "brightness") as server:
        response = harness.submit(remote(server.url))
    assert response.status_code == 201 and response.json()["warnings"] == []


def test_with_probing_off_the_server_opens_no_connection_and_warns_of_nothing(harness: Harness) -> None:
    with socket.socket() as listener:  # a port that listens, so a connection would be seen
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        harness.client.app.state.settings.remote_reward_probe = False  # type: ignore[attr-defined]
        response = harness.submit(remote(f"http://127.0.0.1:{listener.getsockname()[1]}"))
        with pytest.raises(TimeoutError):
            listener.accept()
    assert response.status_code == 201 and response.json()["warnings"] == []
