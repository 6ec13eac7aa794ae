"""What the admin's inventory actions answer."""

from __future__ import annotations

from pydantic import BaseModel


class HostState(BaseModel):
    id: int
    name: str
    status: str
    requeued_jobs: list[int]  # jobs a disable sent back to the queue


class DeviceState(BaseModel):
    id: int
    host_id: int
    index: int
    enabled: bool
