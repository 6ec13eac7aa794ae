"""Jobs as the API and the web pages show them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from server.schemas.audited_cosine import AuditedCosine
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
    attempt: int = Field(description="the attempt number: every placement of the job counts")
    max_attempts: int = Field(description="retry.max_attempts: attempts the job's own failures may end")
    max_platform_restarts: int = Field(description="retry.max_platform_restarts")
    retries_after_failure: int = Field(
        description="attempts of the current run that the job's own failure ended (its trainer killed by SIGKILL) "
        "and that were retried"
    )
    platform_restarts: int = Field(
        description="attempts of the current run that the platform ended (a worker or host restarted, shut down "
        "or lost, a lost task, a platform part unreachable) and restarted; not counted against max_attempts"
    )
    attempts_summary: str = Field(
        description="the attempt and both counts in words, as every face shows them, e.g. 'attempt 4 · 1 retry "
        "after failure (max 2) · 2 restarts of the platform (max 10)'"
    )
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
    reward_hacking: bool = Field(
        False, description="the job raised the reward-hacking alarm (GET .../reward-hacking, docs/evaluation.md)"
    )
    created_at: UtcDatetime
    started_at: UtcDatetime | None
    finished_at: UtcDatetime | None
    duration_s: float | None = Field(
        description="seconds the job's trainer ran: each attempt from its start to the last moment the platform "
        "saw it running (to now while it runs), summed; time queued and time the platform was down are not in it"
    )
    peak_memory_bytes: float | None = Field(
        None, description="the largest memory/peak_bytes the job reported (the compare answer's definition)"
    )


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
    audited_cosine: AuditedCosine | None = Field(
        None, description="a class-A executor's gradient cosine against native's (services.audited_cosine); null: exact"
    )


class JobPage(BaseModel):
    items: list[JobSummary]
    total: int
    limit: int
    offset: int
