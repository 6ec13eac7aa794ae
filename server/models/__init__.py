"""Every table, imported here so Alembic and the app see one metadata."""

from server.models.account import ROLES, ApiToken, LoginThrottle, Membership, Team, User
from server.models.audit import AUDIT_ACTIONS, AuditEvent
from server.models.base import Base, utcnow
from server.models.experiment import Experiment, ExperimentNote
from server.models.host import Allocation, Device, Host
from server.models.job import Artifact, Job, JobEvent
from server.models.telemetry import METRIC_BLOCK_STEPS, LogLine, MetricAttempt, MetricBlock, Sample
from server.states import (
    ACTIVE_STATES,
    HOST_STATES,
    JOB_STATES,
    JOB_TRANSITIONS,
    PLACED_STATES,
    TERMINAL_STATES,
    AdminState,
    HostStatus,
    JobStatus,
)

__all__ = [
    "ACTIVE_STATES",
    "AUDIT_ACTIONS",
    "HOST_STATES",
    "JOB_STATES",
    "JOB_TRANSITIONS",
    "METRIC_BLOCK_STEPS",
    "PLACED_STATES",
    "ROLES",
    "TERMINAL_STATES",
    "AdminState",
    "Allocation",
    "ApiToken",
    "Artifact",
    "AuditEvent",
    "Base",
    "Device",
    "Experiment",
    "ExperimentNote",
    "Host",
    "HostStatus",
    "Job",
    "JobEvent",
    "JobStatus",
    "LogLine",
    "LoginThrottle",
    "Membership",
    "MetricAttempt",
    "MetricBlock",
    "Sample",
    "Team",
    "User",
    "utcnow",
]
