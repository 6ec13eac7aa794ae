"""Run side by side: a job's spec once per chosen executor, each holding its host whole, for a fair compare."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Job
from server.services.auth import Caller
from server.services.capacity import check_capacity
from server.services.compare import MAX_JOBS
from server.services.errors import FieldErrors
from server.services.jobs import add_jobs, validate_spec
from server.services.reward_reachability import queue_reward_probes
from server.services.scoping import team_for_submission
from server.services.service_rewards import check_service_rewards
from server.services.submission_limits import check_queue_room
from trainer.spec import EXECUTOR_OPTIONS, JobSpec
from trainer.spec.executor_choice import JAGG_ROUTING

# digenrl needs its two pools in `resources`: a spec written for another executor has none.
SIDE_BY_SIDE_EXECUTORS = tuple(name for name in EXECUTOR_OPTIONS if name != "digenrl")
MAX_NAME = 200
# jagg and the executors composed with it: each takes JAGG's routing options.
JAGG_FAMILY = {name for name, options in EXECUTOR_OPTIONS.items() if set(JAGG_ROUTING) <= options}


def side_by_side_name(name: str, source_executor: str, executor: str) -> str:
    """The source job's name with its executor's word replaced by `executor` ("sweep/native,seed=1" under jagg is
    "sweep/jagg,seed=1", not "sweep/native,seed=1-jagg"); a name without it gets " · executor" appended."""
    words = list(re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(source_executor)}(?![A-Za-z0-9_])", name))
    if words:
        last = words[-1]
        return (name[: last.start()] + executor + name[last.end() :])[:MAX_NAME]
    suffix = f" · {executor}"
    return name[: MAX_NAME - len(suffix)] + suffix


def side_by_side_spec(spec: dict[str, Any], executor: str) -> dict[str, Any]:
    """The spec under `executor` (with that executor's defaults: options differ per executor, but jagg and its
    compositions with Lean keep the source's routing, JAGG_ROUTING, so they run the same estimator), exclusive."""
    data = copy.deepcopy(spec)
    source = spec.get("executor")
    source_name = source.get("name", "native") if isinstance(source, dict) else str(source or "native")
    data["name"] = side_by_side_name(str(spec.get("name") or "job"), source_name, executor)
    data["executor"] = {"name": executor}
    if isinstance(source, dict) and {source_name, executor} <= JAGG_FAMILY:
        data["executor"] |= {key: source[key] for key in JAGG_ROUTING if source.get(key) is not None}
    data.setdefault("resources", {})["exclusive"] = True
    return data


def run_side_by_side(
    session: Session, caller: Caller, job: Job, team: str | None, executors: Sequence[str], settings: Settings
) -> list[int]:
    """Submit one exclusive job per executor, or none: every spec, and the queue's room for all of them (429
    naming the limit), is checked before they are stored together."""
    chosen = list(dict.fromkeys(executors))
    unknown = [e for e in chosen if e not in SIDE_BY_SIDE_EXECUTORS]
    if unknown or not chosen:
        allowed = ", ".join(SIDE_BY_SIDE_EXECUTORS)
        raise FieldErrors.one(
            "executor", f"choose one or more of {allowed}" + (f"; not {unknown[0]!r}" if unknown else "")
        )
    if len(chosen) > MAX_JOBS:
        raise FieldErrors.one("executor", f"at most {MAX_JOBS} executors")
    member = team_for_submission(caller, team)
    specs: list[JobSpec] = []
    errors: list[dict[str, str]] = []
    for executor in chosen:
        try:
            spec = validate_spec(side_by_side_spec(job.spec, executor), settings)
            check_service_rewards(session, spec, member.team_id, member.team_name)
            check_capacity(session, spec)
            specs.append(spec)
        except FieldErrors as exc:
            errors += [{"field": e["field"], "message": f"{executor}: {e['message']}"} for e in exc.detail]
    if errors:
        raise FieldErrors(errors)
    check_queue_room(session, caller.user_id, member.team_id, settings, len(specs))
    jobs = add_jobs(session, caller, specs, member.team_id, [{} for _ in specs])
    queue_reward_probes(session, jobs, settings)
    session.commit()
    return [added.id for added in jobs]
