"""Experiments as the API, the pages, the CLI and the report show them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from server.schemas.common import FiniteOrNone, UtcDatetime
from server.schemas.compare import CompareRow, Definitions

AXIS_PATH_PATTERN = r"^[a-z_][a-z0-9_]*(\.([a-z_][a-z0-9_]*|[0-9]{1,3}))*$"


class AxisIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        min_length=1, max_length=200, pattern=AXIS_PATH_PATTERN, description="a dotted spec field: executor.name"
    )
    values: list[Any] = Field(min_length=1, max_length=64, description="the values the cells take, each once")


class ExperimentCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=150)
    spec: dict[str, Any] = Field(description="the base job spec every cell starts from (GET /api/v1/spec/schema)")
    axes: list[AxisIn] = Field(min_length=1, max_length=8)
    fair_timing: bool | None = Field(
        None,
        description="every cell exclusive on one device model, queued in a random order; default: true when an "
        "axis is an executor field",
    )


class ExperimentCell(BaseModel):
    index: int = Field(description="the cell's place in the matrix (the first axis varies slowest)")
    position: int = Field(description="its place in the queue order (blocked and counterbalanced under fair timing)")
    block: int = Field(
        description="its seed's block, from 0 (the seed's place on the seed axis; 0 without one): under fair "
        "timing a block's cells, one seed's for every compared setting, run back to back"
    )
    job_id: int
    name: str
    values: dict[str, Any] = Field(description="the cell's value of each axis, by path")
    status: str
    step: int
    total_steps: int


class Interval(BaseModel):
    """A mean over the seeds of a cell group and its 95% confidence interval (Student's t; null below 2 seeds):
    a geometric mean and a log-scale interval for positive figures, clipped to a declared reward range."""

    mean: FiniteOrNone
    low: FiniteOrNone
    high: FiniteOrNone
    n: int = Field(description="seeds with the figure")


class CellGroup(BaseModel):
    """The cells that differ only in seed."""

    label: str = Field(description="the group's axis values other than seed; 'all cells' without any")
    values: dict[str, Any]
    executor: str
    job_ids: list[int]
    seeds: list[int]
    samples_per_s: Interval
    speedup: Interval | None = Field(
        description="over the native group with the same other values, from the seeds run under both: the "
        "geometric mean of the per-seed ratios and its interval; null without such a group"
    )
    audited_cosine: str | None = Field(
        None,
        description="a class-A executor's audited cosine over the group's seeds (services.audited_cosine); "
        "null for an exact executor",
    )
    peak_memory_bytes: Interval
    final_reward: Interval
    eval_reward: Interval
    reward_range: list[float] | None = Field(
        description="[lowest, highest] the spec's reward declares; its reward intervals never leave it"
    )
    time_to_reward_s: Interval = Field(
        description="the compare answer's time to reward R (ExperimentSummary.reward_target) of the seeds that "
        "reached it: the geometric mean and its log interval; n counts them"
    )
    reached_reward: str = Field(description="'2 of 3 seeds reached R', or why there is no R")


class Verdict(BaseModel):
    """One executor group against native, in a sentence, with the test named."""

    label: str
    text: str = Field(
        description="e.g. 'lean_retain: 1.31x [1.27, 1.35] faster than native, eval reward "
        "indistinguishable (paired t-test, p = 0.62)'"
    )
    speedup: Interval
    bound: FiniteOrNone = Field(description="the executor's analytical speedup over native on the group's spec")
    audited_cosine: str | None = Field(
        None, description="the group's audited cosine, as CellGroup.audited_cosine; in the text beside the speedup"
    )
    given: bool = Field(description="whether a verdict is given; see `withheld` when not")
    withheld: str | None = Field(
        description="why no verdict is given: too few paired seeds, or 'above bound: timing suspect'"
    )
    reward: str = Field(description="the reward compared: eval_reward, or final_reward where a cell has no eval")
    reward_test: str | None = Field(description="the test of the reward difference; null below 2 paired seeds")
    p_value: FiniteOrNone


class CellFlag(BaseModel):
    """A cell whose timing is not comparable: it ran on other hardware than most cells, shared a host or ran on
    a loaded one; or the last block's native cell, when native's samples/s drifted from the first block."""

    job_id: int
    cell: str
    problem: str


class ExperimentSummary(BaseModel):
    groups: list[CellGroup]
    verdicts: list[Verdict]
    flags: list[CellFlag]
    jobs: list[CompareRow] = Field(description="every cell's figures as the compare answer gives them")
    device_models: dict[int, str] = Field(description="the device model each cell's latest attempt ran on")
    host_loads: dict[int, float] = Field(
        description="per job: the mean 1-minute load average per core of its host, sampled at every step"
    )
    seeds_for_verdict: int = Field(description="paired seeds a verdict needs")
    reward_target: FiniteOrNone = Field(
        None, description="R of every group's time to reward: the compare answer's, for the experiment's jobs"
    )
    reward_target_reason: str = Field("", description="why that R, or that there is none")
    definitions: Definitions
    method: str = Field(description="how the intervals and tests are computed")


class ExperimentOut(BaseModel):
    id: int
    name: str
    team: str | None
    created_by: str | None
    state: str = Field(description="from the cells' jobs: queued, running, succeeded, failed or cancelled")
    cell_count: int
    status_counts: dict[str, int] = Field(description="cells per job status")
    axes: list[AxisIn]
    fair_timing: bool
    created_at: UtcDatetime


class NoteOut(BaseModel):
    id: int
    author: str
    body: str = Field(description="Markdown as written")
    html: str = Field(description="the body rendered to HTML with raw HTML escaped (services.markdown_text)")
    created_at: UtcDatetime


class NoteIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    body: str = Field(min_length=1, max_length=20_000, description="Markdown")


class ExperimentDetail(ExperimentOut):
    base_spec: dict[str, Any]
    order_seed: int = Field(description="the seed the order of settings inside the first block was shuffled with")
    gpu_model: str | None = Field(description="the device model fair timing pinned every cell to")
    cells: list[ExperimentCell] = Field(description="in matrix order")
    warnings: list[str] = Field(description="what the experiment cannot tell, e.g. no verdict with too few seeds")
    summary: ExperimentSummary
    notes: list[NoteOut]


class ExperimentPage(BaseModel):
    items: list[ExperimentOut]
    total: int
    limit: int
    offset: int
