"""Types every schema shares. The bounded numbers (steps, attempts, finite-or-unknown floats) are the ingestion
payload's (trainer.spec.ingest), so the trainer and every endpoint agree on them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from trainer.spec.ingest import MAX_INT32, Attempt, FiniteOrNone, Step

__all__ = [
    "MAX_INT32",
    "Attempt",
    "ErrorBody",
    "FieldError",
    "FiniteOrNone",
    "ReadModel",
    "Step",
    "UtcDatetime",
]


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


# The database stores naive UTC; responses say so ("...Z") so clients need not guess.
UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]


class ReadModel(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class FieldError(BaseModel):
    field: str
    message: str


class ErrorBody(BaseModel):
    """Every 4xx: a message, or for 422 the list of fields at fault; `code` where a caller may act on the reason
    (`attempt_superseded`: a trainer's report of an attempt that is over)."""

    detail: str | list[FieldError]
    code: str | None = None
