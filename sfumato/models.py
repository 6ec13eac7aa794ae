"""What the API returns, as typed objects. Unknown fields from a newer server are kept, not refused."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

TERMINAL_STATES = ("succeeded", "failed", "cancelled")


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-ready data, for `--json` and scripts."""
        return self.model_dump(mode="json")


class JobEvent(_Model):
    attempt: int
    status: str
    message: str | None = None
    created_at: datetime


class AuditedCosine(_Model):
    """A class-A job's gradient cosine against native's for its spec, as the server defines it; `text` is what
    every face prints ('cosine 0.9950 (first-step audit)', 'audit failed (…)', 'not audited')."""

    source: str
    cosine: float | None = None
    rel_l2: float | None = None
    failed: bool = False
    advice_id: int | None = None
    text: str


class Job(_Model):
    """A job as listed; `spec`, `events` and `allocations` are filled by `Client.job`."""

    id: int
    name: str
    status: str
    algorithm: str
    executor: str
    device_type: str
    devices: int
    nodes: int = 1
    attempt: int = 0
    max_attempts: int = 1
    max_platform_restarts: int = 0
    retries_after_failure: int = 0
    platform_restarts: int = 0
    attempts_summary: str = ""  # the server's words for the three counts above
    owner: str | None = None
    team: str | None = None
    cancel_requested: bool = False
    wait_reason: str | None = None
    error: str | None = None
    root_cause: str | None = None
    step: int = 0
    total_steps: int = 0
    last_reward: float | None = None
    samples_per_s: float | None = None
    peak_memory_bytes: float | None = None  # the largest memory/peak_bytes reported (services.peak_memory)
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    duration_s: float | None = None  # the time its trainer ran (services.job_duration on the server)
    audited_cosine: AuditedCosine | None = None  # `Client.job`'s: a class-A executor's audited cosine; null: exact
    spec: dict[str, Any] | None = None
    events: list[JobEvent] | None = None

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL_STATES


class MetricSeries(_Model):
    """One metric on its steps; `values[i]` is None where the key has no point at `steps[i]`. Downsampled, each
    step stands for a bucket: `values` holds its last value, `minimum` and `maximum` its extremes."""

    key: str
    steps: list[int]
    values: list[float | None]
    wall_times: list[float | None] = []
    minimum: list[float | None] | None = None
    maximum: list[float | None] | None = None

    def points(self) -> list[tuple[int, float]]:
        """(step, value) pairs without the gaps."""
        return [(s, v) for s, v in zip(self.steps, self.values, strict=True) if v is not None]

    def last(self) -> float | None:
        points = self.points()
        return points[-1][1] if points else None


class LogLine(_Model):
    id: int
    attempt: int
    node_rank: int
    stream: str
    text: str
    created_at: datetime


class Sample(_Model):
    id: int
    attempt: int
    step: int
    kind: str
    prompt: str
    seed: int
    reward: float | None = None
    width: int
    height: int
    created_at: datetime
    image_url: str


class Artifact(_Model):
    """A checkpoint, model, export or playground grid a job registered; `downloadable` once the platform holds
    its bytes (`Client.download_artifact`)."""

    id: int
    attempt: int
    kind: str
    name: str
    step: int | None = None
    path: str
    size_bytes: int | None = None
    created_at: datetime
    sha256: str | None = None
    packing: str | None = None
    downloadable: bool = False


class Device(_Model):
    index: int
    device_type: str
    model: str
    memory_bytes: int | None = None
    enabled: bool = True
    busy: bool = False
    job_id: int | None = None


class Host(_Model):
    id: int
    name: str
    address: str | None = None
    status: str
    last_heartbeat_at: datetime
    devices: list[Device]


class ApiToken(_Model):
    """A user API token; `token` (the secret) is set only in the answer to its creation."""

    id: int
    name: str
    scope: str = "write"
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    token: str | None = None


class SharedHost(_Model):
    """Another job that held devices on a host the compared job ran on, at the same time."""

    job_id: int
    name: str | None = None
    host: str


class ComparedJob(_Model):
    """One job's figures in a `Comparison`, as the server defines them (see `Comparison.definitions`)."""

    id: int
    name: str
    status: str
    executor: str
    algorithm: str
    steps: int
    samples_per_s: float | None = None
    speedup: float | None = None
    bound: float | None = None
    of_bound: float | None = None
    audited_cosine: AuditedCosine | None = None  # null for an exact executor
    peak_memory_bytes: float | None = None
    final_reward: float | None = None
    best_reward: float | None = None
    eval_reward: float | None = None
    eval_step: int | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    duration_s: float | None = None
    time_to_reward_s: float | None = None
    time_to_reward_step: int | None = None
    reward_curve: dict[str, Any] = {}
    shared_with: list[SharedHost] = []


class SpecDifference(_Model):
    field: str
    values: list[str]


class Comparison(_Model):
    """`Client.compare`'s answer: a row per job, the job speedups are over, the spec fields that differ, and
    what each figure means (`definitions`, e.g. the warm-up samples/s leaves out)."""

    jobs: list[ComparedJob]
    native_job_id: int | None = None
    reference: str = ""
    reference_reason: str | None = None
    reward_target: float | None = None
    reward_target_job_id: int | None = None
    reward_target_reason: str = ""
    differences: list[SpecDifference] = []
    definitions: dict[str, Any] = {}


class ExperimentCell(_Model):
    """One cell of an experiment: its job and its value of each axis."""

    index: int
    position: int
    block: int = 0
    job_id: int
    name: str
    values: dict[str, Any]
    status: str
    step: int = 0
    total_steps: int = 0

    @property
    def label(self) -> str:
        return ", ".join(f"{path}={value}" for path, value in self.values.items())


class ExperimentSummary(_Model):
    """The server's summary: `groups` (mean and 95% interval per figure), `verdicts` (a sentence per executor
    with the test named), `flags` (cells whose timing is not comparable), `jobs` (each cell's compare row)."""

    groups: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    flags: list[dict[str, Any]] = []
    jobs: list[ComparedJob] = []
    host_loads: dict[int, float] = {}
    seeds_for_verdict: int = 3
    reward_target: float | None = None
    reward_target_reason: str = ""
    method: str = ""


class Experiment(_Model):
    """An experiment as listed; `cells`, `summary` and `notes` are filled by `Client.experiment_detail`."""

    id: int
    name: str
    team: str | None = None
    created_by: str | None = None
    state: str
    cell_count: int
    status_counts: dict[str, int] = {}
    axes: list[dict[str, Any]] = []
    fair_timing: bool = False
    created_at: datetime
    order_seed: int | None = None
    gpu_model: str | None = None
    cells: list[ExperimentCell] | None = None
    warnings: list[str] = []
    summary: ExperimentSummary | None = None
    notes: list[dict[str, Any]] | None = None

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_STATES


class Bounds(_Model):
    """A 95% interval over the probe's timed rounds."""

    low: float
    high: float


class AdvisedExecutor(_Model):
    """One executor's row of an advice's answer (the server computes every figure)."""

    executor: str
    samples_per_s: float | None = None
    samples_per_s_interval: Bounds | None = None
    speedup: float | None = None
    speedup_interval: Bounds | None = None
    peak_memory_bytes: int | None = None
    fits_budget: bool = False
    exactness: str | None = None
    gradient_cosine: float | None = None
    memory_by_trained: list[int] = []
    recommended: bool = False
    reason: str
    error: str | None = None


class AdviceAnswer(_Model):
    executors: list[AdvisedExecutor]
    recommended: str | None = None
    fits: bool
    why: str = ""
    summary: str
    budget_bytes: int | None = None
    rounds: int = 0
    method: str = ""


class PredictionCheck(_Model):
    """A job submitted from an advice: predicted against measured, and the warning when they are not like with
    like (the job or the probe shared a host)."""

    job_id: int
    advice_id: int
    executor: str
    predicted_samples_per_s: float | None = None
    predicted_samples_per_s_interval: Bounds | None = None
    measured_samples_per_s: float | None = None
    predicted_peak_memory_bytes: int | None = None
    measured_peak_memory_bytes: float | None = None
    shared_warning: str | None = None


class Advice(_Model):
    """`sfumato advise`: probing until the probe job reports, then `answer`."""

    id: int
    state: str
    spec_name: str
    host_class: str
    budget_bytes: int | None = None
    probe_job_id: int | None = None
    error: str | None = None
    answer: AdviceAnswer | None = None
    probe_warning: str | None = None
    submitted: list[PredictionCheck] = []

    @property
    def settled(self) -> bool:
        return self.state != "probing"
