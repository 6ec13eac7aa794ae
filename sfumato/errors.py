"""Errors the client raises: each carries the server's message, one line, ready to print."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx


class SfumatoError(Exception):
    """Anything the client cannot do; `str(error)` is a one-line explanation."""


class ConfigError(SfumatoError):
    """No server URL or token, or an unreadable config file."""


class ConnectionFailed(SfumatoError):
    """The server could not be reached."""


class SpecFileError(SfumatoError):
    """A spec file that cannot be read, parsed or overridden (before anything is sent)."""


class WaitTimeout(SfumatoError):
    """`wait` ran out of time before the job finished."""


class ChecksumMismatch(SfumatoError):
    """A downloaded artifact's bytes are not those the server holds (their SHA-256 differs)."""


class MissingDependency(SfumatoError):
    """An optional package (pandas, pyarrow) is needed for this call."""


class APIError(SfumatoError):
    """The server answered with an error status; `detail` is its message or its field errors."""

    def __init__(self, status_code: int, detail: Any, method: str, path: str) -> None:
        self.status_code = status_code
        self.detail = detail
        self.method = method
        self.path = path
        super().__init__(self.describe())

    def describe(self) -> str:
        if isinstance(self.detail, list):
            return "; ".join(_field_error(e) for e in self.detail)
        return str(self.detail)


class AuthenticationError(APIError):
    """401: no token, or an unknown, revoked or expired one."""

    def describe(self) -> str:
        return f"authentication failed: {super().describe()} (check SFUMATO_TOKEN or run `sfumato login`)"


class PermissionDenied(APIError):
    """403: the token may not do this (a read-only token, another team's action)."""


class NotFound(APIError):
    """404: no such job (or one the caller's teams may not see), sample or token."""


class Conflict(APIError):
    """409: the job is not in a state that allows this (cancel a finished job, retry a running one)."""


class ValidationFailed(APIError):
    """422: the spec or a parameter is refused; `errors` lists {field, message}."""

    @property
    def errors(self) -> list[dict[str, str]]:
        if isinstance(self.detail, list):
            return [{"field": str(e.get("field", "")), "message": str(e.get("message", ""))} for e in self.detail]
        return [{"field": "", "message": str(self.detail)}]


class ServerError(APIError):
    """5xx: the server failed; its log says why."""


def _field_error(error: Any) -> str:
    if isinstance(error, dict):
        field, message = error.get("field"), error.get("message", error)
        return f"{field}: {message}" if field else str(message)
    return str(error)


_BY_STATUS: dict[int, type[APIError]] = {
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    422: ValidationFailed,
}


def response_detail(response: httpx.Response) -> Any:
    """The server's message in an error answer: its JSON `detail`, else the start of its text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase
    return body.get("detail", body) if isinstance(body, dict) else body


def api_error(status_code: int, detail: Any, method: str, path: str) -> APIError:
    """The typed error for an HTTP error status."""
    cls = _BY_STATUS.get(status_code, ServerError if status_code >= 500 else APIError)
    return cls(status_code, detail, method, path)
