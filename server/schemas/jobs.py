"""Jobs as the API and the web pages show them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from server.schemas.common import ReadModel, UtcDatetime
from server.states import Reachability


class JobEventOut(ReadModel):
    attempt: int
    status: str
    message: str | None
    created_at: UtcDatetime


class AllocationOut(BaseModel):
    attempt: int
    host: str
    device_index: int
    device_type: str
    node_rank: int
    released_at: UtcDatetime | None


class JobSummary(ReadModel):
    id: int
    name: str
    status: str
    algorithm: str
    executor: str
    model_family: str
    device_type: str
    devices: int
    nodes: int
    priority: int
    attempt: int
    max_attempts: int
    owner: str | None
    team: str | None
    cancel_requested: bool
    wait_reason: str | None
    error: str | None
    root_cause: str | None = Field(
        description="a failed job's cause in one line: the exception its traceback ends with (the full text is `error`)"
    )
    step: int
    total_steps: int
    last_reward: float | None
    samples_per_s: float | None = Field(
        description="median samples/s after the warm-up step (the compare answer's definition)"
    )
    last_progress_at: UtcDatetime | None
    created_at: UtcDatetime
    started_at: UtcDatetime | None
    finished_at: UtcDatetime | None


class RewardReachability(BaseModel):
    field: str = Field(description="the remote reward's URL field, e.g. 'reward.1.url'")
    state: Reachability = Field(
        description="'pending' until the platform has asked GET <url>/healthz once, after the job was stored; then "
        "'reachable' (it answered 200) or 'unreachable' (anything else, whatever the reason)"
    )


class JobDetail(JobSummary):
    spec: dict[str, Any]
    events: list[JobEventOut]
    allocations: list[AllocationOut]
    warnings: list[str] = Field(
        default_factory=list,
        description="on submission: what may stop the job although the spec is valid (a hub model while every "
        "worker that could run it is offline)",
    )
    reward_reachability: list[RewardReachability] = Field(
        default_factory=list,
        description="whether each remote reward's server answered its health check (SFUMATO_REMOTE_REWARD_PROBE)",
    )


class JobPage(BaseModel):
    items: list[JobSummary]
    total: int
    limit: int
    offset: int
