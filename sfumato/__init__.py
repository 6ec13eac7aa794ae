"""Sfumato's Python client: `from sfumato import Client`. Torch-free; needs httpx, pydantic and pyyaml."""

from sfumato.client import Client
from sfumato.errors import (
    APIError,
    AuthenticationError,
    ConfigError,
    Conflict,
    ConnectionFailed,
    MissingDependency,
    NotFound,
    PermissionDenied,
    ServerError,
    SfumatoError,
    SpecFileError,
    ValidationFailed,
    WaitTimeout,
)
from sfumato.models import ApiToken, ComparedJob, Comparison, Host, Job, LogLine, MetricSeries, Sample

__all__ = [
    "APIError",
    "ApiToken",
    "AuthenticationError",
    "Client",
    "ComparedJob",
    "Comparison",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "Host",
    "Job",
    "LogLine",
    "MetricSeries",
    "MissingDependency",
    "NotFound",
    "PermissionDenied",
    "Sample",
    "ServerError",
    "SfumatoError",
    "SpecFileError",
    "ValidationFailed",
    "WaitTimeout",
]
