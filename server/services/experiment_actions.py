"""Changing an experiment: cancel its active cells, retry its failed ones, add a note. Each is one unit of work
and one audit event (plus each cell's own job event and audit row).

Who may: cancel and retry as for a job (services.scoping.ensure_can_act): a team admin any experiment of
the team, a member their own, a server admin any. Notes: any member or admin of the team.
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy.orm import Session

from server.config import Settings
from server.models import ACTIVE_STATES, ExperimentNote, JobStatus, utcnow
from server.schemas.experiments import ExperimentDetail, NoteIn, NoteOut
from server.services import audit
from server.services.auth import Caller
from server.services.errors import Conflict, Forbidden
from server.services.experiment_reads import cell_jobs, experiment_detail, note_out, visible_experiment
from server.services.job_status import set_status
from server.services.jobs import lock_job, requeue_job
from server.services.scoping import SUBMIT_ROLES, ensure_writer, team_role
from server.services.submission_limits import check_queue_room


def _ensure_can_change(caller: Caller, team_id: int | None, created_by_id: int | None) -> None:
    ensure_writer(caller)
    if caller.is_admin:
        return
    role = team_role(caller, team_id)
    if role == "admin" or (role == "member" and created_by_id == caller.user_id):
        return
    if role == "member":
        raise Forbidden("a member may cancel or retry only their own experiments; ask an admin of the team")
    raise Forbidden(f"role {role!r} cannot change experiments of this team")


def cancel_experiment(session: Session, caller: Caller, experiment_id: int) -> ExperimentDetail:
    """Queued cells are cancelled now, placed and running ones asked to stop; 409 when none is active."""
    experiment = visible_experiment(session, caller, experiment_id)
    _ensure_can_change(caller, experiment.team_id, experiment.created_by_id)
    active = [job.id for job in cell_jobs(session, experiment.id) if job.status in ACTIVE_STATES]
    cancelled = 0
    for job_id in active:
        job = lock_job(session, job_id)
        if job.status == JobStatus.QUEUED:
            set_status(session, job, JobStatus.CANCELLED, f"experiment cancelled by {caller.username}")
        elif job.status in ACTIVE_STATES:
            job.cancel_requested = True
        else:
            continue
        cancelled += 1
        audit.record(session, "job.cancel", caller, team_id=job.team_id, job_id=job.id, detail="with its experiment")
    if not cancelled:
        session.rollback()
        raise Conflict(f"experiment {experiment_id} has no queued or running cell to cancel")
    detail = f"experiment {experiment.id} {experiment.name!r}: {cancelled} cells"
    audit.record(session, "experiment.cancel", caller, team_id=experiment.team_id, detail=detail)
    session.commit()
    return experiment_detail(session, caller, experiment_id)


def retry_experiment(session: Session, caller: Caller, experiment_id: int, settings: Settings) -> ExperimentDetail:
    """The failed cells back to the queue (the succeeded and cancelled ones stay), all of them if the queue has
    room for all (429 naming the limit otherwise, as for creating the experiment); 409 when none failed."""
    experiment = visible_experiment(session, caller, experiment_id)
    _ensure_can_change(caller, experiment.team_id, experiment.created_by_id)
    failed = [job.id for job in cell_jobs(session, experiment.id) if job.status == JobStatus.FAILED]
    retried = [job for job in (lock_job(session, job_id) for job_id in failed) if job.status == JobStatus.FAILED]
    if not retried:
        session.rollback()
        raise Conflict(f"experiment {experiment_id} has no failed cell to retry")
    for (owner_id, team_id), count in Counter((job.owner_id, job.team_id) for job in retried).items():
        check_queue_room(session, owner_id, team_id, settings, count)
    for job in retried:
        requeue_job(session, caller, job)
    detail = f"experiment {experiment.id} {experiment.name!r}: {len(retried)} failed cells"
    audit.record(session, "experiment.retry", caller, team_id=experiment.team_id, detail=detail)
    session.commit()
    return experiment_detail(session, caller, experiment_id)


def add_note(session: Session, caller: Caller, experiment_id: int, note: NoteIn) -> NoteOut:
    """A member's or admin's Markdown note, stored as written (rendered on reading)."""
    experiment = visible_experiment(session, caller, experiment_id)
    ensure_writer(caller)
    if not caller.is_admin and team_role(caller, experiment.team_id) not in SUBMIT_ROLES:
        raise Forbidden("only members and admins of the experiment's team may add notes")
    row = ExperimentNote(
        experiment_id=experiment.id,
        author_id=caller.user_id,
        author_name=caller.username[:100],
        body=note.body,
        created_at=utcnow(),
    )
    session.add(row)
    detail = f"experiment {experiment.id} {experiment.name!r}: note of {len(note.body)} characters"
    audit.record(session, "experiment.note", caller, team_id=experiment.team_id, detail=detail)
    session.commit()
    return note_out(row)


def list_notes(session: Session, caller: Caller, experiment_id: int) -> list[NoteOut]:
    """Oldest first."""
    return [note_out(note) for note in visible_experiment(session, caller, experiment_id).notes]
