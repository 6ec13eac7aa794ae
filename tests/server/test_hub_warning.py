"""A spec naming a hub model, submitted while no worker that could run it can reach the hub (HF_HUB_OFFLINE, or
the hub's endpoint did not answer the worker's probe when it registered), is accepted with a warning saying so."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from server_harness import Harness

from server.services.hosts import DeviceInfo, register_host
from worker.host_agent import hub_offline

REPO = Path(__file__).resolve().parents[2]

HUB_MODEL = {"model": {"path": "stabilityai/stable-diffusion-3.5-medium"}, "resources": {"device_type": "cuda"}}


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: the warning reads the hosts table like any other."""
    return migrated_sqlite_url


def register(harness: Harness, name: str, *, offline: bool, device_type: str = "cuda") -> None:
    with harness.session() as session:
        register_host(session, name, [DeviceInfo(0, device_type, "H100", None)], hub_offline=offline)
        session.commit()


def test_a_hub_model_with_every_worker_offline_is_accepted_with_a_warning(harness: Harness) -> None:
    register(harness, "airgapped-1", offline=True)
    register(harness, "airgapped-2", offline=True)
    register(harness, "cpu-box", offline=False, device_type="cpu")  # cannot run a cuda job
    response = harness.submit(HUB_MODEL)
    assert response.status_code == 201, response.text
    (warning,) = response.json()["warnings"]
    assert "stabilityai/stable-diffusion-3.5-medium" in warning and "HF_HUB_OFFLINE" in warning


def test_one_worker_that_reaches_the_hub_is_enough(harness: Harness) -> None:
    register(harness, "airgapped", offline=True)
    register(harness, "connected", offline=False)
    assert harness.submit(HUB_MODEL).json()["warnings"] == []


def test_a_builtin_model_needs_no_hub(harness: Harness) -> None:
    register(harness, "airgapped", offline=True)
    response = harness.submit({"model": {"path": "builtin:tiny"}, "resources": {"device_type": "cuda"}})
    assert response.status_code == 201 and response.json()["warnings"] == []


@pytest.mark.parametrize(("env", "offline"), [({"HF_HUB_OFFLINE": "1"}, True), ({"HF_HUB_OFFLINE": "0"}, False),
                                              ({"TRANSFORMERS_OFFLINE": "yes"}, True), ({}, False)])  # fmt: skip
def test_a_worker_reads_the_hub_mode_as_huggingface_hub_does(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], offline: bool
) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert hub_offline() is offline


def closed_endpoint() -> str:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def register_worker(harness: Harness, name: str, hub_endpoint: str) -> None:
    """The worker's own registration (HostAgent.register, 1 CPU slot), in a process of its own whose model hub is
    at ``hub_endpoint``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_", "SFUMATO_"))}
    env.update(
        SFUMATO_DATABASE_URL=harness.settings.database_url,
        SFUMATO_HOME=str(harness.settings.home),
        SFUMATO_WORKER_HOSTNAME=name,
        SFUMATO_WORKER_CPU_SLOTS="1",
        HF_ENDPOINT=hub_endpoint,
    )
    code = (
        "from server.config import get_settings; import worker.host_agent as a; a.HostAgent(get_settings()).register()"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, timeout=120)


def test_a_worker_whose_probe_finds_no_hub_makes_a_hub_model_a_warning_naming_it(harness: Harness) -> None:
    register_worker(harness, "no-network-1", closed_endpoint())
    response = harness.submit({"model": {"path": "stabilityai/stable-diffusion-3.5-medium"}})
    assert response.status_code == 201, response.text
    (warning,) = response.json()["warnings"]
    assert "no worker that could run this job can reach the hub (no-network-1: " in warning


def test_a_worker_whose_probe_reaches_the_hub_makes_no_warning(harness: Harness) -> None:
    with socket.create_server(("127.0.0.1", 0)) as hub:  # accepts the probe's connection
        register_worker(harness, "connected-1", f"http://127.0.0.1:{hub.getsockname()[1]}")
    assert harness.submit({"model": {"path": "stabilityai/stable-diffusion-3.5-medium"}}).json()["warnings"] == []
