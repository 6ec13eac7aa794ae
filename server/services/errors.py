"""Errors a caller can cause, raised by services and turned into JSON 4xx bodies by the API.

They carry no FastAPI types, so web pages and the CLI can call the same services and catch them.
"""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    status_code = 400

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
