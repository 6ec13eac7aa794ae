"""Job log lines, read forward from an offset (the last line id seen)."""

from __future__ import annotations

from pydantic import BaseModel

from server.schemas.common import ReadModel, UtcDatetime


class LogLineOut(ReadModel):
    id: int
    attempt: int
    node_rank: int
    stream: str
    text: str
    created_at: UtcDatetime


class LogPage(BaseModel):
    lines: list[LogLineOut]
    next_offset: int
