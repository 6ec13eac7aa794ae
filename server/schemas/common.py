"""Types every schema shares."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_INT32 = 2**31 - 1


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _finite_or_none(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


# The database stores naive UTC; responses say so ("...Z") so clients need not guess.
UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]
# A NaN reward or throughput (a diverged run) is reported as unknown rather than refused.
FiniteOrNone = Annotated[float | None, AfterValidator(_finite_or_none)]
Step = Annotated[int, Field(ge=0, le=MAX_INT32)]
# Seconds since the epoch, up to the year 3000: an infinite or absurd wall time (which broke every duration
# computed from it) is refused with 422, naming the field.
MAX_WALL_TIME = 32_503_680_000.0
WallTime = Annotated[float, Field(ge=0, le=MAX_WALL_TIME, allow_inf_nan=False)]
Attempt = Annotated[int, Field(ge=1, le=10_000)]


class ReadModel(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class FieldError(BaseModel):
    field: str
    message: str


class ErrorBody(BaseModel):
    """Every 4xx: a message, or for 422 the list of fields at fault."""

    detail: str | list[FieldError]
