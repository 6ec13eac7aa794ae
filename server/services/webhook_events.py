"""The events a team's webhooks receive, written as pending deliveries in the unit of work of the event: a job that
succeeded or failed and an experiment whose last cell ended (succeeded, failed or cancelled), in the one that ends
the job; a job's reward-hacking alarm, in the one that records it.

Job ends are queued by job_status.set_status, the one place a job changes status, so no path that ends a job is
missed; the alarm by services.reward_hacking, which records it once per job.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.config import get_settings
from server.models import TERMINAL_STATES, Experiment, Job, JobStatus, Team, Webhook, WebhookDelivery
from server.services.webhook_payloads import EXPERIMENT_ENDED, JOB_FAILED, JOB_SUCCEEDED, payload_body

JOB_EVENTS = {JobStatus.SUCCEEDED: JOB_SUCCEEDED, JobStatus.FAILED: JOB_FAILED}


def queue_job_end_events(session: Session, job: Job) -> None:
    """Pending deliveries for a job that has just ended, to every webhook of its team (none: no delivery)."""
    webhook_ids, team = _team_webhooks(session, job)
    if team is None:
        return
    public_url = get_settings().public_url.rstrip("/")
    bodies = []
    event = JOB_EVENTS.get(JobStatus(job.status))
    if event is not None:
        text = f"Sfumato: job {job.id} ({job.name}) of team {team.name} {job.status}"
        urls = {"job": f"{public_url}/jobs/{job.id}"}
        bodies.append((event, payload_body(event, team.name, status=job.status, text=text, job_id=job.id, urls=urls)))
    if job.experiment_id is not None and _experiment_ended(session, job.experiment_id):
        experiment = session.get_one(Experiment, job.experiment_id)
        text = f"Sfumato: experiment {experiment.id} ({experiment.name}) of team {team.name} ended"
        urls = {"experiment": f"{public_url}/experiments/{experiment.id}"}
        bodies.append(
            (EXPERIMENT_ENDED, payload_body(EXPERIMENT_ENDED, team.name, status="ended", text=text, urls=urls))
        )
    session.add_all(WebhookDelivery(webhook_id=w, event=e, body=b) for w in webhook_ids for e, b in bodies)


def _experiment_ended(session: Session, experiment_id: int) -> bool:
    """Every cell of the experiment has ended (the flushed status of the job that just ended included)."""
    session.flush()
    running = session.scalar(
        select(func.count())
        .select_from(Job)
        .where(Job.experiment_id == experiment_id, Job.status.not_in([str(s) for s in TERMINAL_STATES]))
    )
    return running == 0


def queue_job_alarm(session: Session, job: Job, event: str, text: str) -> None:
    """Pending deliveries of a job's alarm `event` (saying `text`) to every webhook of its team."""
    webhook_ids, team = _team_webhooks(session, job)
    if team is None:
        return
    urls = {"job": f"{get_settings().public_url.rstrip('/')}/jobs/{job.id}"}
    body = payload_body(event, team.name, status=job.status, text=text, job_id=job.id, urls=urls)
    session.add_all(WebhookDelivery(webhook_id=w, event=event, body=body) for w in webhook_ids)


def _team_webhooks(session: Session, job: Job) -> tuple[list[int], Team | None]:
    """The job's team's webhooks and the team; no team when the job has none or its team has no webhook."""
    if job.team_id is None:
        return [], None
    webhook_ids = list(session.scalars(select(Webhook.id).where(Webhook.team_id == job.team_id)))
    if not webhook_ids:
        return [], None
    return webhook_ids, session.get_one(Team, job.team_id)
