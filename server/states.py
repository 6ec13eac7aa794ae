"""The states a job, a host and a reward service can be in, and which job or service state may follow which.

StrEnum members are the strings the database stores ("queued", "online", ...), so a stored row and a member
compare equal and no migration is needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class JobStatus(StrEnum):
    QUEUED = "queued"
    SCHEDULED = "scheduled"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE_STATES = (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.RUNNING)
TERMINAL_STATES = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
JOB_STATES = tuple(JobStatus)
# A job whose current attempt holds devices: placed, or its trainer started.
PLACED_STATES = (JobStatus.SCHEDULED, JobStatus.RUNNING)

# Which status may follow which (`set_status` refuses the rest). A job is born queued (job_status.record_submitted).
# - queued → scheduled: the scheduler placed it; → cancelled: cancelled before placement.
# - scheduled → running: a node's trainer started; → queued: its task never started, the broker was away, or
#   an infrastructure failure with attempts left; → failed: such a failure with none left, or the trainer could
#   not start; → cancelled: cancelled before or while starting; → succeeded: the trainer ran to exit 0 while
#   its "running" mark never reached the database (an outage for the whole run).
# - running → succeeded / failed / cancelled: the attempt ended; → queued: an infrastructure failure (host
#   lost, worker restarted or shut down, SIGKILL) with attempts left.
# - succeeded / failed / cancelled → queued: a user retried it.
JOB_TRANSITIONS: Mapping[JobStatus, frozenset[JobStatus]] = {
    JobStatus.QUEUED: frozenset({JobStatus.SCHEDULED, JobStatus.CANCELLED}),
    JobStatus.SCHEDULED: frozenset(
        {JobStatus.RUNNING, JobStatus.QUEUED, JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED}
    ),
    JobStatus.RUNNING: frozenset({JobStatus.QUEUED, JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED}),
    JobStatus.SUCCEEDED: frozenset({JobStatus.QUEUED}),
    JobStatus.FAILED: frozenset({JobStatus.QUEUED}),
    JobStatus.CANCELLED: frozenset({JobStatus.QUEUED}),
}


class ExperimentState(StrEnum):
    """An experiment's state, derived from its cells' jobs (services.experiment_reads.experiment_state): queued
    while every active cell waits, running while any cell is placed or running, then succeeded (every cell),
    failed (any cell failed) or cancelled (the rest)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


EXPERIMENT_STATES = tuple(ExperimentState)


class HostStatus(StrEnum):
    """A host's effective state, what the scheduler and the pages read. Derived, not stepped through: `lost`
    while its heartbeat is stale, else what its admin state gives a live host (`LIVE_STATUS`); so any state can
    follow any other and there is no transition table to check."""

    ONLINE = "online"
    DRAINING = "draining"
    DISABLED = "disabled"
    LOST = "lost"


class AdminState(StrEnum):
    """What an admin asked of a host, kept apart from liveness: a host that is lost and comes back returns to
    the admin's choice (a drained host stays drained)."""

    ACTIVE = "active"
    DRAINING = "draining"
    DISABLED = "disabled"


HOST_STATES = tuple(HostStatus)
ADMIN_STATES = tuple(AdminState)
# The status each admin choice gives a host that heartbeats.
LIVE_STATUS: Mapping[AdminState, HostStatus] = {
    AdminState.ACTIVE: HostStatus.ONLINE,
    AdminState.DRAINING: HostStatus.DRAINING,
    AdminState.DISABLED: HostStatus.DISABLED,
}


class ServiceState(StrEnum):
    """A reward service's state (server.models.service). Born pending; placed like a job, it holds its devices
    from `starting` until `stopped` or `failed`."""

    PENDING = "pending"
    STARTING = "starting"
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


SERVICE_STATES = tuple(ServiceState)
# A service whose name is taken in its team: every state but the two ends.
LIVE_SERVICE_STATES = tuple(s for s in ServiceState if s not in (ServiceState.STOPPED, ServiceState.FAILED))
# A service that holds devices (its worker task runs, or is about to).
PLACED_SERVICE_STATES = (ServiceState.STARTING, ServiceState.HEALTHY, ServiceState.UNHEALTHY, ServiceState.STOPPING)

# Which state may follow which (`service_status.set_state` refuses the rest).
# - pending → starting: the scheduler placed it; → stopped: stopped before placement.
# - starting → healthy: its /healthz answered; → unhealthy: the server died or stopped answering (the worker
#   restarts it); → pending: its host was lost, its worker restarted, or its task never started; → stopping:
#   a stop was asked; → failed: it never became healthy in `MAX_FAILED_STARTS` starts in a row.
# - healthy → unhealthy / pending / stopping, as above.
# - unhealthy → healthy: its restarted server answered; → pending / stopping / failed, as above.
# - stopping → stopped: the worker stopped the server and freed its devices (or its host was lost meanwhile).
SERVICE_TRANSITIONS: Mapping[ServiceState, frozenset[ServiceState]] = {
    ServiceState.PENDING: frozenset({ServiceState.STARTING, ServiceState.STOPPED}),
    ServiceState.STARTING: frozenset(
        {ServiceState.HEALTHY, ServiceState.UNHEALTHY, ServiceState.PENDING, ServiceState.STOPPING, ServiceState.FAILED}
    ),
    ServiceState.HEALTHY: frozenset({ServiceState.UNHEALTHY, ServiceState.PENDING, ServiceState.STOPPING}),
    ServiceState.UNHEALTHY: frozenset(
        {ServiceState.HEALTHY, ServiceState.PENDING, ServiceState.STOPPING, ServiceState.FAILED}
    ),
    ServiceState.STOPPING: frozenset({ServiceState.STOPPED}),
    ServiceState.STOPPED: frozenset(),
    ServiceState.FAILED: frozenset(),
}


class JobKind(StrEnum):
    """What a job's trainer runs: `python -m trainer run` (train), `python -m trainer probe` (the advisor's), or
    `python -m trainer task` for a task on a checkpoint (an export, an evaluation, a playground grid)."""

    TRAIN = "train"
    PROBE = "probe"
    EXPORT = "export"
    EVAL = "eval"
    PLAYGROUND = "playground"


TASK_KINDS = (JobKind.EXPORT, JobKind.EVAL, JobKind.PLAYGROUND)


class AdviceState(StrEnum):
    """An advice waits for its probe job's report (`probing`), then has its answer, or its probe failed."""

    PROBING = "probing"
    ANSWERED = "answered"
    FAILED = "failed"


class Reachability(StrEnum):
    """The answer a remote reward's probe gives: the same two words whatever stopped an unreachable one."""

    PENDING = "pending"
    REACHABLE = "reachable"
    UNREACHABLE = "unreachable"
