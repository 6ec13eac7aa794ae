"""The executor advisor's platform half: an advice row, its probe job on the target host class, the probe's
report through the ingest door, and the answer every caller reads from here.

The answer is computed when read, from the stored spec, budget and probe report (the prediction,
trainer/spec/advice.py, then its intervals and recommendation, services.advice_verdict), so the API, the page and
the CLI show one answer. Jobs submitted from an advice carry its id and hold their hosts whole; their predicted
against measured samples/s and peak memory use the compare answer's definitions (services.throughput, the peak of
memory/peak_bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import TERMINAL_STATES, Advice, Device, Host, HostStatus, Job, JobStatus, Team, utcnow
from server.schemas.advice import AdviceAnswer, AdviceOut, AdviseRequest, PredictionCheck
from server.schemas.jobs import JobDetail
from server.services import throughput
from server.services.advice_verdict import advice_answer, size_text
from server.services.auth import Caller
from server.services.compare import MEMORY_KEY
from server.services.errors import Conflict, FieldErrors, NotFound
from server.services.jobs import submit_job, validate_spec
from server.services.metric_figures import key_figures
from server.services.scoping import get_visible_job, scope_jobs
from server.services.shared_hosts import SharedJob, shared_with
from server.states import AdviceState, JobKind
from trainer.spec import SpecError, stored_spec, with_executor
from trainer.spec.advice import predict
from trainer.spec.byte_size import parse_byte_size
from trainer.spec.executor_choice import options_for
from trainer.spec.probe_report import ProbeReport


def parse_budget(value: str | int | None) -> int | None:
    """'40GiB', '512 MiB', '1.5GiB', '40GB' or a byte count → bytes, at most 2**63 - 1 (the column holds no more);
    422 naming `memory_budget` otherwise (trainer.spec.byte_size, as the spec's resources.memory_budget)."""
    if value is None:
        return None
    try:
        return parse_byte_size(value)
    except ValueError as exc:
        raise FieldErrors.one("memory_budget", str(exc)) from exc


def check_host_class(session: Session, host_class: str) -> None:
    """409 naming the class when no online host has an enabled device of it."""
    online = session.scalar(
        select(Host.id)
        .join(Device, Device.host_id == Host.id)
        .where(Host.status == HostStatus.ONLINE, Device.enabled.is_(True), Device.device_type == host_class)
        .limit(1)
    )
    if online is None:
        raise Conflict(f"no host of class {host_class!r} is online to run the probe")


def request_advice(
    session: Session, caller: Caller, body: AdviseRequest, settings: Settings, team: str | None = None
) -> AdviceOut:
    """Validate the spec (422 as for submit), store the advice and queue its probe job; nothing on an error."""
    spec = validate_spec(body.spec, settings)
    budget = parse_budget(body.memory_budget)
    host_class = body.host_class or spec.resources.device_type
    data = spec.model_dump(mode="json")
    data["resources"]["device_type"] = host_class
    spec = validate_spec(data, settings)
    check_host_class(session, host_class)
    advice = Advice(spec=spec.model_dump(mode="json"), budget_bytes=budget, host_class=host_class)
    advice.state, advice.owner_id = AdviceState.PROBING, caller.user_id
    try:
        session.add(advice)
        session.flush()
        probe = {**advice.spec, "name": f"probe: {spec.name}"[:200]}
        job = submit_job(session, caller, probe, settings, team, kind=JobKind.PROBE, advice_id=advice.id)
    except Exception:
        session.rollback()
        raise
    advice.team_id = session.get(Job, job.id).team_id  # type: ignore[union-attr]
    session.commit()
    return advice_detail(session, caller, advice.id)


def visible_advice(session: Session, caller: Caller, advice_id: int) -> Advice:
    """As for jobs (services.scoping): the caller's teams' advice, their own teamless advice; else 404."""
    advice = session.get(Advice, advice_id)
    visible = advice is not None and (
        caller.is_admin
        or advice.team_id in caller.team_ids
        or (advice.team_id is None and advice.owner_id == caller.user_id)
    )
    if not visible or advice is None:
        raise NotFound(f"advice {advice_id} not found")
    return advice


def probe_job(session: Session, advice_id: int) -> Job | None:
    return session.scalars(
        select(Job).where(Job.advice_id == advice_id, Job.kind == JobKind.PROBE).order_by(Job.id.desc())
    ).first()


def answer(advice: Advice) -> AdviceAnswer | None:
    if advice.probe is None:
        return None
    spec = stored_spec(advice.spec)
    if spec is None:
        return None
    return advice_answer(predict(spec, ProbeReport.model_validate(advice.probe)), advice.budget_bytes)


def state_of(advice: Advice, job: Job | None) -> tuple[str, str | None]:
    """Probing until the report arrives; failed when the probe job ended without one."""
    if advice.state != AdviceState.PROBING or job is None or job.status not in TERMINAL_STATES:
        return advice.state, advice.error
    reason = job.error or ("the probe job ended without a report" if job.status == JobStatus.SUCCEEDED else None)
    return AdviceState.FAILED, f"probe job {job.id} {job.status}" + (f": {reason}" if reason else "")


def shared_warning(shared: Sequence[SharedJob], who: str, consequence: str) -> str | None:
    """One sentence when ``who`` shared a host with other jobs (services.shared_hosts), else None."""
    if not shared:
        return None
    hosts = ", ".join(dict.fromkeys(s.host for s in shared))
    return f"{who} ran while {len(shared)} other job(s) held devices on {hosts}: {consequence}"


def probe_warning(session: Session, probe: Job | None) -> str | None:
    if probe is None:
        return None
    return shared_warning(shared_with(session, [probe.id])[probe.id], "the probe", "the prediction carries their load")


def checks(
    session: Session, caller: Caller, advice: Advice, result: AdviceAnswer | None, probe_note: str | None
) -> list[PredictionCheck]:
    """Each job submitted from the advice that the caller may see: predicted against measured samples/s and peak
    memory, and the warning when the job or the probe shared a host (then the two are not like with like)."""
    submitted = select(Job).where(Job.advice_id == advice.id, Job.kind == JobKind.TRAIN).order_by(Job.id)
    jobs = list(session.scalars(scope_jobs(submitted, caller)))
    speeds = throughput.samples_per_s(session, [job.id for job in jobs])
    shared = shared_with(session, [job.id for job in jobs])
    rows = {row.executor: row for row in result.executors} if result else {}
    out = []
    for job in jobs:
        predicted = rows.get(job.executor)
        memory = key_figures(session, job.id, [MEMORY_KEY]).get(MEMORY_KEY)
        job_warning = shared_warning(shared[job.id], "the job", f"its samples/s is not {job.executor}'s alone")
        warnings = [w for w in (job_warning, probe_note) if w]
        out.append(
            PredictionCheck(
                job_id=job.id,
                advice_id=advice.id,
                name=job.name,
                status=job.status,
                executor=job.executor,
                predicted_samples_per_s=predicted.samples_per_s if predicted else None,
                predicted_samples_per_s_interval=predicted.samples_per_s_interval if predicted else None,
                measured_samples_per_s=speeds[job.id],
                predicted_peak_memory_bytes=predicted.peak_memory_bytes if predicted else None,
                measured_peak_memory_bytes=memory.maximum if memory else None,
                shared_warning="; ".join(warnings) or None,
            )
        )
    return out


def advice_detail(session: Session, caller: Caller, advice_id: int) -> AdviceOut:
    advice = visible_advice(session, caller, advice_id)
    job = probe_job(session, advice.id)
    state, error = state_of(advice, job)
    result = answer(advice)
    probe_note = probe_warning(session, job)
    return AdviceOut(
        id=advice.id,
        state=state,
        spec_name=str(advice.spec.get("name", "")),
        host_class=advice.host_class,
        budget_bytes=advice.budget_bytes,
        probe_job_id=job.id if job else None,
        probe_job_status=job.status if job else None,
        created_at=advice.created_at,
        answered_at=advice.answered_at,
        error=error,
        answer=result,
        probe_warning=probe_note,
        submitted=checks(session, caller, advice, result, probe_note),
    )


def store_probe(session: Session, job: Job, report: ProbeReport) -> None:
    """The probe job's report (the ingest door): the advice is answered. 409 for a job that is not a probe."""
    advice = session.get(Advice, job.advice_id) if job.kind == JobKind.PROBE and job.advice_id else None
    if advice is None:
        raise Conflict(f"job {job.id} is not an advisor's probe")
    advice.probe = report.model_dump(mode="json")
    advice.state, advice.error, advice.answered_at = AdviceState.ANSWERED, None, utcnow()
    try:
        answer(advice)
    except (ValueError, ValidationError) as exc:
        advice.state, advice.error = AdviceState.FAILED, f"the probe's report cannot be priced: {exc}"
    session.commit()


def advice_team(session: Session, advice: Advice, team: str | None) -> str:
    """The team a job from the advice goes to: the advice's own, which asked for it; `team`, when given, must
    name it (422 naming `team` otherwise, as for an advice whose team is gone)."""
    own = session.get(Team, advice.team_id) if advice.team_id is not None else None
    if own is None:
        raise FieldErrors.one("team", f"advice {advice.id} belongs to no team any more; advise again in a team")
    if team is not None and team != own.name:
        raise FieldErrors.one(
            "team", f"advice {advice.id} was asked for team {own.name!r}; its jobs go there, not to {team!r}"
        )
    return own.name


def refuse_over_budget(result: AdviceAnswer, executor: str) -> None:
    """422 naming `executor` when the probe predicts its peak memory (its retained graphs included) over the
    advice's budget: the estimate is known before the job runs, so the job is not started to fail."""
    row = next(r for r in result.executors if r.executor == executor)
    if row.fits_budget or result.budget_bytes is None:
        return
    fitting = [r.executor for r in result.executors if r.fits_budget]
    allowed = f"executors that fit: {', '.join(fitting)}" if fitting else "no executor fits; advise again with more"
    raise FieldErrors.one(
        "executor",
        f"{executor} is predicted to peak at {size_text(row.peak_memory_bytes or 0)}, over this advice's "
        f"{size_text(result.budget_bytes)} memory budget; {allowed}",
    )


def submit_from_advice(
    session: Session, caller: Caller, advice_id: int, executor: str, settings: Settings, team: str | None = None
) -> JobDetail:
    """Submit the advice's spec with ``executor`` (one of the answer's predicted rows) into the advice's team (the
    caller must be allowed to submit there), exclusive (`resources.exclusive`: it holds its hosts whole, so no
    other job's load moves the measurement); the job links the advice."""
    advice = visible_advice(session, caller, advice_id)
    team = advice_team(session, advice, team)
    result = answer(advice)
    if result is None:
        raise Conflict(f"advice {advice_id} has no answer yet ({state_of(advice, probe_job(session, advice.id))[0]})")
    predicted = [row.executor for row in result.executors if row.samples_per_s is not None]
    if executor not in predicted:
        raise FieldErrors.one("executor", f"{executor!r} has no prediction in this advice; choose one of {predicted}")
    refuse_over_budget(result, executor)
    spec = stored_spec(advice.spec)
    if spec is None:
        raise FieldErrors.one("spec", "the advice's stored spec no longer validates; advise again")
    try:
        chosen = with_executor(spec, options_for(spec, executor))
    except SpecError as exc:
        raise FieldErrors.one(exc.field, exc.message) from exc
    data: dict[str, Any] = chosen.model_dump(mode="json")
    data["resources"]["exclusive"] = True  # its measured samples/s is set beside the prediction: the executor's alone
    return submit_job(session, caller, data, settings, team, advice_id=advice.id)


def prediction_for_job(session: Session, caller: Caller, job_id: int) -> PredictionCheck | None:
    """The job's advice's prediction against its measurement, for the job's page, its API answer and `sfumato show`
    (None: not from an advice); 404 for a job the caller may not see."""
    job = get_visible_job(session, caller, job_id)
    if job.advice_id is None or job.kind != JobKind.TRAIN:
        return None
    try:
        advice = visible_advice(session, caller, job.advice_id)
    except NotFound:  # the job's page is the job's team's; an advice the reader cannot see adds nothing to it
        return None
    found = checks(session, caller, advice, answer(advice), probe_warning(session, probe_job(session, advice.id)))
    return next((c for c in found if c.job_id == job_id), None)
