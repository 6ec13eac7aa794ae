"""A job's end is told to its team's webhooks, and only to its team's: a pending delivery written with the status
change, then handed to the workers once by the scheduler process's sender."""

from __future__ import annotations

import json

from server_harness import Harness, Headers
from sqlalchemy import select

from server.models import Job, JobStatus, WebhookDelivery
from server.services.notification_queue import send_pending_deliveries


def add_webhook(harness: Harness, headers: Headers) -> int:
    team_id = harness.client.get("/api/v1/teams", headers=headers).json()["items"][0]["id"]
    response = harness.client.post(
        f"/api/v1/teams/{team_id}/webhooks", json={"url": "https://hooks.example.com/x"}, headers=headers
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def sent(harness: Harness) -> list[tuple[int, str, dict]]:
    with harness.session() as session:
        rows = session.scalars(select(WebhookDelivery).order_by(WebhookDelivery.id))
        return [(d.webhook_id, d.event, json.loads(d.body)) for d in rows]


def end(harness: Harness, job_id: int, status: JobStatus) -> None:
    harness.start_job(job_id)
    harness.finish_job(job_id, status)


def test_a_job_that_succeeds_or_fails_is_told_to_its_teams_webhook_with_its_id_and_page(
    harness: Harness, lab: Headers
) -> None:
    webhook_id = add_webhook(harness, lab)
    won, lost = harness.submit_ok({"name": "won"}, lab), harness.submit_ok({"name": "lost"}, lab)
    end(harness, won, JobStatus.SUCCEEDED)
    end(harness, lost, JobStatus.FAILED)
    deliveries = sent(harness)
    assert [(w, e, b["job_id"], b["status"]) for w, e, b in deliveries] == [
        (webhook_id, "job.succeeded", won, "succeeded"),
        (webhook_id, "job.failed", lost, "failed"),
    ]
    assert deliveries[0][2]["urls"]["job"].endswith(f"/jobs/{won}") and "won" in deliveries[0][2]["text"]


def test_another_teams_job_end_is_not_told_to_the_webhook(harness: Harness, lab: Headers, studio: Headers) -> None:
    add_webhook(harness, lab)
    end(harness, harness.submit_ok({"name": "theirs"}, studio), JobStatus.SUCCEEDED)
    assert sent(harness) == []


def test_an_experiment_is_told_ended_once_its_last_cell_ends(harness: Harness, lab: Headers) -> None:
    add_webhook(harness, lab)
    body = {"name": "sweep", "spec": {"name": "cell"}, "axes": [{"path": "seed", "values": [1, 2]}]}
    created = harness.client.post("/api/v1/experiments", json=body, headers=lab)
    assert created.status_code in (201, 202), created.text
    with harness.session() as session:
        cells = session.scalars(select(Job.id).where(Job.experiment_id == created.json()["id"]).order_by(Job.id))
        first, second = cells.all()
    end(harness, first, JobStatus.SUCCEEDED)
    assert [e for _, e, _ in sent(harness)] == ["job.succeeded"]
    end(harness, second, JobStatus.FAILED)
    events = [(e, b["urls"]) for _, e, b in sent(harness)]
    assert [e for e, _ in events] == ["job.succeeded", "job.failed", "experiment.ended"]
    assert events[2][1]["experiment"].endswith(f"/experiments/{created.json()['id']}")


def test_the_sender_hands_each_pending_delivery_to_the_workers_once(harness: Harness, lab: Headers) -> None:
    add_webhook(harness, lab)
    for name in ("a", "b"):
        end(harness, harness.submit_ok({"name": name}, lab), JobStatus.SUCCEEDED)
    handed: list[int] = []
    assert send_pending_deliveries(harness.sessions, handed.append) == 2
    assert send_pending_deliveries(harness.sessions, handed.append) == 0
    with harness.session() as session:
        assert handed == list(session.scalars(select(WebhookDelivery.id).order_by(WebhookDelivery.id)))
