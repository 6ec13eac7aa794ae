"""Listing and reading jobs, for the API and the web pages alike: the calls a dashboard makes most.

Each is a few statements written once as SQL (services.sql_text), so that a request does not pay for
building ORM statements: on a 2-core machine that work cost more than the queries themselves. They read
only the columns the schemas show, typed as the ORM tables type them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import DateTime, Integer, String, TextualSelect, bindparam, text
from sqlalchemy.orm import Session
from sqlalchemy.types import TypeEngine

from server.models import JOB_STATES, Job
from server.schemas.jobs import JobDetail, JobPage, JobSummary
from server.services.attempt_counts import JobLimits, attempt_counts
from server.services.audited_cosine import AuditTarget, audit_pairs, audited_cosines
from server.services.auth import Caller
from server.services.current_points import current_points_of_jobs
from server.services.errors import FieldErrors, NotFound
from server.services.job_duration import durations_s
from server.services.metric_reads import latest_points_of_pairs
from server.services.peak_memory import peak_memory_bytes
from server.services.reward_hacking import alarmed_jobs
from server.services.reward_reachability import job_reward_reachability
from server.services.root_cause import root_cause
from server.services.scoping import VISIBLE_JOB, visibility
from server.services.sql_text import column_types, rows_as_dicts, select_text
from server.services.throughput import samples_per_s

# samples/s is not a column: services.throughput computes it, as for the compare answer.
_COMPUTED = ("owner", "team", "samples_per_s", "root_cause", "retries_after_failure", "platform_restarts",
             "attempts_summary", "duration_s", "peak_memory_bytes", "reward_hacking")  # fmt: skip
_SUMMARY_FIELDS = tuple(f for f in JobSummary.model_fields if f not in _COMPUTED)
_SUMMARIES = TypeAdapter(list[JobSummary])
_JOB = Job.__table__.c
_NAMES = {"owner": String, "team": String}


def _job_select(*extra: str) -> str:
    """The summary's columns of `jobs j`, its owner's and team's names, and `extra` columns."""
    columns = ", ".join([*(f"j.{name}" for name in _SUMMARY_FIELDS), "u.username AS owner", "tm.name AS team", *extra])
    return (
        f"SELECT {columns} FROM jobs j LEFT JOIN users u ON u.id = j.owner_id LEFT JOIN teams tm ON tm.id = j.team_id"
    )


def _job_statement(sql: str, **extra: TypeEngine[Any] | type[TypeEngine[Any]]) -> TextualSelect:
    """A statement over `jobs j` selecting _job_select's columns (named as here), typed as the ORM types them,
    then `extra`."""
    columns = column_types(Job.__table__, *_SUMMARY_FIELDS) | _NAMES | extra
    return select_text(sql, **columns).bindparams(bindparam("team_ids", expanding=True))


_FILTERS = (
    f"WHERE {VISIBLE_JOB} AND (:any_status OR j.status IN :statuses) "
    "AND (:executor IS NULL OR j.executor = :executor) AND (:algorithm IS NULL OR j.algorithm = :algorithm) "
    "AND (:name_pattern IS NULL OR lower(j.name) LIKE :name_pattern ESCAPE '/')"
)
_FILTER_PARAMS = [
    bindparam("statuses", type_=String, expanding=True),
    *(bindparam(name, type_=String) for name in ("executor", "algorithm", "name_pattern")),
]
# The page and, in the same pass, how many jobs match in all.
_LIST = _job_statement(
    f"{_job_select('count(*) OVER () AS total')} {_FILTERS} ORDER BY j.id DESC LIMIT :limit OFFSET :offset",
    total=Integer,
).bindparams(*_FILTER_PARAMS)
# A page past the end has no row to carry the total.
_COUNT = text(f"SELECT count(*) FROM jobs j {_FILTERS}").bindparams(
    bindparam("team_ids", expanding=True), *_FILTER_PARAMS
)
_DETAIL = _job_statement(
    f"{_job_select('j.spec', 'j.advice_id')} WHERE j.id = :job_id AND {VISIBLE_JOB}",
    spec=_JOB.spec.type,
    advice_id=Integer,
)
_ALLOCATIONS = select_text(
    'SELECT a.attempt, h.name AS host, d."index" AS device_index, d.device_type, a.node_rank, a.released_at '
    "FROM allocations a JOIN devices d ON d.id = a.device_id JOIN hosts h ON h.id = a.host_id "
    'WHERE a.job_id = :job_id AND a.attempt = :attempt ORDER BY a.node_rank, d."index"',
    attempt=Integer,
    host=String,
    device_index=Integer,
    device_type=String,
    node_rank=Integer,
    released_at=DateTime,
)
_EVENTS = select_text(
    "SELECT attempt, status, message, created_at FROM job_events WHERE job_id = :job_id ORDER BY id",
    attempt=Integer,
    status=String,
    message=String,
    created_at=DateTime,
)


@dataclass(frozen=True)
class JobFilters:
    statuses: tuple[str, ...] = ()
    executor: str | None = None
    algorithm: str | None = None
    name: str | None = None

    def params(self) -> dict[str, Any]:
        """Bind values of the list's WHERE clause; the name matches as a case-insensitive substring."""
        pattern = None
        if self.name:
            escaped = self.name.lower().replace("/", "//").replace("%", "/%").replace("_", "/_")
            pattern = f"%{escaped}%"
        return {
            "any_status": not self.statuses,
            "statuses": list(self.statuses),
            "executor": self.executor,
            "algorithm": self.algorithm,
            "name_pattern": pattern,
        }


def parse_filters(
    status: str | None = None, executor: str | None = None, algorithm: str | None = None, name: str | None = None
) -> JobFilters:
    """Query-string filters; `status` may list several, comma-separated."""
    statuses = tuple(s.strip() for s in (status or "").split(",") if s.strip())
    unknown = [s for s in statuses if s not in JOB_STATES]
    if unknown:
        raise FieldErrors.one("status", f"unknown status {unknown[0]!r}; allowed: {', '.join(JOB_STATES)}")
    return JobFilters(statuses, executor or None, algorithm or None, name or None)


def list_jobs(session: Session, caller: Caller, filters: JobFilters, limit: int = 50, offset: int = 0) -> JobPage:
    """Newest first, within the caller's teams; `total` counts every match, not just this page."""
    params = visibility(caller) | filters.params()
    rows = rows_as_dicts(session.execute(_LIST, params | {"limit": limit, "offset": offset}))
    if rows:
        total = rows[0]["total"]
    elif offset:
        total = session.execute(_COUNT, params).scalar_one()
    else:
        total = 0
    ids = [row["id"] for row in rows]
    currents = current_points_of_jobs(session, ids)
    speeds = samples_per_s(session, ids, currents)
    peaks = peak_memory_bytes(session, ids, currents)
    for row in rows:
        row["samples_per_s"] = speeds[row["id"]]
        row["peak_memory_bytes"] = peaks[row["id"]]
        row["root_cause"] = root_cause(row["error"])
    _add_attempt_figures(session, rows)
    alarmed = alarmed_jobs(session, ids)
    for row in rows:
        row["reward_hacking"] = row["id"] in alarmed
    return JobPage(items=_SUMMARIES.validate_python(rows), total=total, limit=limit, offset=offset)


def job_detail(session: Session, caller: Caller, job_id: int) -> JobDetail:
    """Everything the job page shows: spec, status history, progress, and the devices of its current attempt.
    Three statements: the job with its owner's and team's names, its devices, its events."""
    found = rows_as_dicts(session.execute(_DETAIL, visibility(caller) | {"job_id": job_id}))
    if not found:
        raise NotFound(f"job {job_id} not found")
    job = found[0]
    job["allocations"] = rows_as_dicts(session.execute(_ALLOCATIONS, {"job_id": job_id, "attempt": job["attempt"]}))
    job["events"] = rows_as_dicts(session.execute(_EVENTS, {"job_id": job_id}))
    currents = current_points_of_jobs(session, [job_id])
    job["samples_per_s"] = samples_per_s(session, [job_id], currents)[job_id]
    job["peak_memory_bytes"] = peak_memory_bytes(session, [job_id], currents)[job_id]
    job["root_cause"] = root_cause(job["error"])
    job["reward_reachability"] = job_reward_reachability(session, job_id)
    targets = [AuditTarget(job_id, job["executor"], job["advice_id"])]
    audits = latest_points_of_pairs(session, audit_pairs(targets), currents)
    job["audited_cosine"] = audited_cosines(session, targets, audits)[job_id]
    _add_attempt_figures(session, [job])
    job["reward_hacking"] = bool(alarmed_jobs(session, [job_id]))
    return JobDetail.model_validate(job)


def _add_attempt_figures(session: Session, rows: list[dict[str, Any]]) -> None:
    """Each job row's attempt counts (services.attempt_counts) and duration (services.job_duration)."""
    limits = [JobLimits(r["id"], r["attempt"], r["max_attempts"], r["max_platform_restarts"]) for r in rows]
    counts = attempt_counts(session, limits)
    durations = durations_s(session, [row["id"] for row in rows])
    for row in rows:
        count = counts[row["id"]]
        row["retries_after_failure"] = count.retries_after_failure
        row["platform_restarts"] = count.platform_restarts
        row["attempts_summary"] = count.summary
        row["duration_s"] = durations[row["id"]]
