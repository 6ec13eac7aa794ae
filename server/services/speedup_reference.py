"""Which job a compare answer's speedups are measured against, the same whatever the order of the ids.

The caller may name it (`reference=`: a job of the set). Otherwise the native job whose spec equals the other
jobs' apart from the executor (the one that matches the most of them), nearest in time to those it matches,
else the native job with the lowest id. Naming the rule in the answer lets every face say "speedup over #N"
and why that job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from server.models import Job
from server.services.errors import FieldErrors

NATIVE = "native"
NAMED = "named by the caller (reference=)"
SAME_SPEC = "the native job with the same spec apart from the executor, nearest in time"
LOWEST_ID = "the native job with the lowest id (none has the same spec as the others apart from the executor)"
IGNORED_FIELDS = ("executor", "name")


@dataclass(frozen=True)
class Reference:
    job: Job
    reason: str


def _apart_from_executor(spec: Any) -> Any:
    return {k: v for k, v in spec.items() if k not in IGNORED_FIELDS} if isinstance(spec, dict) else spec


def _time(job: Job) -> float:
    moment: datetime = job.started_at or job.created_at
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def pick_reference(jobs: Sequence[Job], named: int | None = None) -> Reference | None:
    """The reference among `jobs` (a set: their order does not matter); `named` must be one of them (422)."""
    if named is not None:
        chosen = next((job for job in jobs if job.id == named), None)
        if chosen is None:
            ids = ", ".join(str(job.id) for job in sorted(jobs, key=lambda j: j.id))
            raise FieldErrors.one("reference", f"job {named} is not one of the compared jobs ({ids})")
        return Reference(chosen, NAMED)
    natives = [job for job in jobs if job.executor == NATIVE]
    if not natives:
        return None
    others = [job for job in jobs if job.executor != NATIVE]

    def rank(native: Job) -> tuple[int, float, int]:
        spec = _apart_from_executor(native.spec)
        matches = [other for other in others if _apart_from_executor(other.spec) == spec]
        distance = sum(abs(_time(other) - _time(native)) for other in matches)
        return -len(matches), distance, native.id

    best = min(natives, key=rank)
    return Reference(best, SAME_SPEC if rank(best)[0] < 0 else LOWEST_ID)
