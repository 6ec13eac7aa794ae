"""The compare answer: one row of figures per job, each figure defined once (see `definitions`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from server.schemas.audited_cosine import AuditedCosine
from server.schemas.common import FiniteOrNone, UtcDatetime


class SharedHost(BaseModel):
    """Another job that held devices on a host this job ran on, at the same time."""

    job_id: int
    name: str | None = Field(description="null when the caller may not see that job")
    host: str


class RewardCurve(BaseModel):
    """A job's reward series against its running seconds (definitions.reward_seconds), for charts."""

    source: str = Field(description="'eval' (its eval reward) or 'train' (its training reward/mean)")
    steps: list[int]
    seconds: list[float]
    rewards: list[float]


class CompareRow(BaseModel):
    id: int
    name: str
    status: str
    executor: str
    algorithm: str
    steps: int
    samples_per_s: FiniteOrNone = Field(description="see definitions.samples_per_s")
    speedup: FiniteOrNone = Field(description="samples/s over the reference job's (native_job_id); null without one")
    bound: FiniteOrNone = Field(description="analytical speedup over native on this job's spec")
    of_bound: FiniteOrNone = Field(description="speedup / bound")
    audited_cosine: AuditedCosine | None = Field(
        None, description="see definitions.audited_cosine; null for an exact executor"
    )
    peak_memory_bytes: FiniteOrNone
    final_reward: FiniteOrNone
    best_reward: FiniteOrNone
    eval_reward: FiniteOrNone = Field(description="mean reward of the latest eval step's samples")
    eval_step: int | None
    started_at: UtcDatetime | None = Field(description="the job's running event")
    ended_at: UtcDatetime | None
    duration_s: FiniteOrNone = Field(description="see definitions.duration_s")
    time_to_reward_s: FiniteOrNone = Field(None, description="see definitions.time_to_reward; null: R not reached")
    time_to_reward_step: int | None = Field(None, description="the step of the point that reached R")
    reward_curve: RewardCurve = Field(
        default_factory=lambda: RewardCurve(source="train", steps=[], seconds=[], rewards=[])
    )
    shared_with: list[SharedHost]


class SpecDifference(BaseModel):
    field: str
    values: list[str] = Field(
        description="one per job, in the order of `jobs`; '—', 'null' and '(empty)' as definitions.differences says"
    )


class Definitions(BaseModel):
    samples_per_s: str
    warmup_steps: int = Field(description="steps left out at the start of each attempt")
    speedup: str
    bound: str
    audited_cosine: str
    duration_s: str
    time_to_reward: str
    reward_seconds: str
    shared_with: str
    differences: str = Field(description="how a spec-difference cell without a plain value reads")


class Comparison(BaseModel):
    jobs: list[CompareRow]
    native_job_id: int | None = Field(
        description="the reference job speedups are measured against (see definitions.speedup); null without one"
    )
    reference: str = Field(description="what every face prints: 'speedup over #N'")
    reference_reason: str | None = Field(description="why that job: named by the caller, or the rule that chose it")
    reward_target: FiniteOrNone = Field(description="R of the time-to-reward column; null when there is none")
    reward_target_job_id: int | None = Field(description="the job whose final reward R is, when R is the default")
    reward_target_reason: str = Field(description="what every face prints about R: named, or the default's rule")
    differences: list[SpecDifference]
    definitions: Definitions
