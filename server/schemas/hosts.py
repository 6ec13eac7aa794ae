"""Worker hosts, their devices, and which job holds each device."""

from __future__ import annotations

from pydantic import BaseModel, Field

from server.schemas.common import UtcDatetime


class DeviceOut(BaseModel):
    id: int
    index: int
    device_type: str
    model: str
    memory_bytes: int | None
    enabled: bool
    busy: bool
    job_id: int | None  # the holding job, when the caller may see it


class HostOut(BaseModel):
    id: int
    name: str
    address: str | None
    status: str
    hub_offline: bool = Field(
        False,
        description="the worker cannot reach the model hub: it runs with the hub off (HF_HUB_OFFLINE), or the hub "
        "did not answer its probe at registration",
    )
    last_heartbeat_at: UtcDatetime
    registered_at: UtcDatetime
    devices: list[DeviceOut]


class HostList(BaseModel):
    items: list[HostOut]
