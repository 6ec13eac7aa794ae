"""Errors a caller can cause, raised by services and turned into JSON 4xx bodies by the API.

They carry no FastAPI types, so web pages and the CLI can call the same services and catch them.
"""

from __future__ import annotations

from typing import Any

from trainer.spec.ingest import ATTEMPT_SUPERSEDED_CODE


class ServiceError(Exception):
    status_code = 400
    code: str | None = None  # a machine-readable reason beside `detail`, for callers that act on it

    def __init__(self, detail: Any) -> None:
        super().__init__(detail)
        self.detail = detail


class Unauthorized(ServiceError):
    status_code = 401


class Forbidden(ServiceError):
    status_code = 403


class NotFound(ServiceError):
    status_code = 404


class Conflict(ServiceError):
    status_code = 409


class AttemptSuperseded(Conflict):
    """409 with code `attempt_superseded`: the report is of an attempt that is over, the job having been sent back
    to the queue or started again since. Its reporter should stop (trainer.reporting.reporter)."""

    code = ATTEMPT_SUPERSEDED_CODE

    def __init__(self, job_id: int, attempt: int, current: int) -> None:
        now = f"the job is at attempt {current}" if current > attempt else "the job is back in the queue"
        super().__init__(f"attempt {attempt} of job {job_id} is over: {now}")


class PayloadTooLarge(ServiceError):
    status_code = 413


class TooManyRequests(ServiceError):
    """429: a limit on how often or how much; `retry_after` seconds when waiting is what helps."""

    status_code = 429

    def __init__(self, detail: Any, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


class FieldErrors(ServiceError):
    """422 with `[{"field": "algorithm.group_size", "message": ...}]`, the shape spec errors use."""

    status_code = 422

    def __init__(self, errors: list[dict[str, str]]) -> None:
        super().__init__(errors)

    @classmethod
    def one(cls, field: str, message: str) -> FieldErrors:
        return cls([{"field": field, "message": message}])
