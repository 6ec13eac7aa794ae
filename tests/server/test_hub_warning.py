"""A spec naming a hub model, submitted while every worker that could run it has the hub off (HF_HUB_OFFLINE),
is accepted with a warning saying so; hosts report the hub mode when they register."""

from __future__ import annotations

import pytest
from server_harness import Harness

from server.services.hosts import DeviceInfo, register_host
from worker.host_agent import hub_offline

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
