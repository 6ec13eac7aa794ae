"""Every table, imported here so Alembic and the app see one metadata."""

from server.models.account import ROLES, ApiToken, LoginThrottle, Membership, Team, User
from server.models.advice import Advice
from server.models.audit import AUDIT_ACTIONS, AuditEvent
from server.models.base import Base, utcnow
from server.models.dataset import Dataset, DatasetVersion
from server.models.evaluation import Evaluation, EvaluationReward, RewardHackingAlarm
from server.models.experiment import Experiment, ExperimentNote
from server.models.host import Allocation, Device, Host
from server.models.job import Artifact, Job, JobAttempt, JobEvent
from server.models.registry import ModelAlias, ModelVersion, RegisteredModel
from server.models.reward_probe import RewardProbe
from server.models.service import RewardService
from server.models.telemetry import METRIC_BLOCK_STEPS, LogLine, MetricAttempt, MetricBlock, Sample
from server.models.webhook import Webhook, WebhookAttempt, WebhookDelivery
from server.states import (
    ACTIVE_STATES,
    HOST_STATES,
    JOB_STATES,
    JOB_TRANSITIONS,
    LIVE_SERVICE_STATES,
    PLACED_SERVICE_STATES,
    PLACED_STATES,
    SERVICE_STATES,
    SERVICE_TRANSITIONS,
    TERMINAL_STATES,
    AdminState,
    HostStatus,
    JobStatus,
    ServiceState,
)

__all__ = [
    "ACTIVE_STATES",
    "AUDIT_ACTIONS",
    "HOST_STATES",
    "JOB_STATES",
    "JOB_TRANSITIONS",
    "LIVE_SERVICE_STATES",
    "METRIC_BLOCK_STEPS",
    "PLACED_SERVICE_STATES",
    "PLACED_STATES",
    "ROLES",
    "SERVICE_STATES",
    "SERVICE_TRANSITIONS",
    "TERMINAL_STATES",
    "AdminState",
    "Advice",
    "Allocation",
    "ApiToken",
    "Artifact",
    "AuditEvent",
    "Base",
    "Dataset",
    "DatasetVersion",
    "Device",
    "Evaluation",
    "EvaluationReward",
    "Experiment",
    "ExperimentNote",
    "Host",
    "HostStatus",
    "Job",
    "JobAttempt",
    "JobEvent",
    "JobStatus",
    "LogLine",
    "LoginThrottle",
    "Membership",
    "MetricAttempt",
    "MetricBlock",
    "ModelAlias",
    "ModelVersion",
    "RegisteredModel",
    "RewardHackingAlarm",
    "RewardProbe",
    "RewardService",
    "Sample",
    "ServiceState",
    "Team",
    "User",
    "Webhook",
    "WebhookAttempt",
    "WebhookDelivery",
    "utcnow",
]
