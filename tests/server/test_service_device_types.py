"""A reward service runs on a device type some host offers: left out, the server chooses one an online host has
enough of; a type no registered host offers is a 422 naming `device_type` and what the hosts offer, since such a
service would stay pending forever."""

from __future__ import annotations

from typing import Any

from server_harness import Harness, Headers

BRIGHT = {"name": "bright", "reward": "brightness"}


def create(harness: Harness, headers: Headers, **fields: Any) -> Any:
    return harness.client.post("/api/v1/services", json=BRIGHT | fields, headers=headers)


def test_on_a_cpu_only_platform_a_service_without_a_device_type_runs_on_cpu(harness: Harness, lab: Headers) -> None:
    harness.add_host("laptop", device_type="cpu", count=2)
    response = create(harness, lab)
    assert response.status_code == 201, response.text
    assert (response.json()["device_type"], response.json()["devices"]) == ("cpu", 1)


def test_on_a_cpu_only_platform_cuda_is_refused_naming_the_field_and_what_is_offered(
    harness: Harness, lab: Headers
) -> None:
    harness.add_host("laptop", device_type="cpu", count=2)
    response = create(harness, lab, device_type="cuda")
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == [
        {
            "field": "device_type",
            "message": "no registered host offers cuda devices; offered: cpu (up to 2 on one host)",
        }
    ]
    assert harness.client.get("/api/v1/services", headers=lab).json()["total"] == 0


def test_the_default_is_a_gpu_where_an_online_host_has_enough(harness: Harness, lab: Headers) -> None:
    harness.add_host("laptop", device_type="cpu", count=4)
    harness.add_host("gpu-a", device_type="cuda", count=1)
    assert create(harness, lab).json()["device_type"] == "cuda"
    assert create(harness, lab, name="bright-2", devices=2).json()["device_type"] == "cpu"  # no host has 2 GPUs


def test_the_default_passes_over_a_lost_hosts_gpus_for_an_online_hosts_cpu(harness: Harness, lab: Headers) -> None:
    harness.add_host("gpu-a", device_type="cuda", count=2, status="lost")
    harness.add_host("laptop", device_type="cpu", count=2)
    assert create(harness, lab).json()["device_type"] == "cpu"


def test_more_devices_than_any_host_has_is_refused_naming_devices_when_no_type_is_given(
    harness: Harness, lab: Headers
) -> None:
    harness.add_host("laptop", device_type="cpu", count=2)
    response = create(harness, lab, devices=3)
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {"field": "devices", "message": "asks for 3 devices on one host; the hosts offer cpu (up to 2 on one host)"}
    ]


def test_with_no_host_registered_yet_a_service_waits_on_cpu(harness: Harness, lab: Headers) -> None:
    response = create(harness, lab)  # the embedded worker may still be starting, as for a job
    assert response.status_code == 201 and response.json()["device_type"] == "cpu"
