"""Every table, imported here so Alembic and the app see one metadata."""

from server.models.account import ROLES, ApiToken, Membership, Team, User
from server.models.audit import AUDIT_ACTIONS, AuditEvent
from server.models.base import Base, utcnow
from server.models.host import HOST_STATES, Allocation, Device, Host
from server.models.job import ACTIVE_STATES, JOB_STATES, TERMINAL_STATES, Artifact, Job, JobEvent
from server.models.telemetry import METRIC_BLOCK_STEPS, LogLine, MetricAttempt, MetricBlock, Sample

__all__ = [
    "ACTIVE_STATES",
    "AUDIT_ACTIONS",
    "HOST_STATES",
    "JOB_STATES",
    "METRIC_BLOCK_STEPS",
    "ROLES",
    "TERMINAL_STATES",
    "Allocation",
    "ApiToken",
    "Artifact",
    "AuditEvent",
    "Base",
    "Device",
    "Host",
    "Job",
    "JobEvent",
    "LogLine",
    "Membership",
    "MetricAttempt",
    "MetricBlock",
    "Sample",
    "Team",
    "User",
    "utcnow",
]
