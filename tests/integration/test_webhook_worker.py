"""On the embedded platform (`sfumato up`) the "send test" of a webhook travels the real path: the API writes the
delivery, the scheduler process hands it to the notifications queue, the worker's task POSTs it, signed, to a
receiver on this machine, Celery retries it after the first attempt's backoff when the receiver fails, and both
attempts appear in the delivery history."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from platform_harness import Platform
from webhook_receiver import receiving

from server.services.webhook_delivery import retry_delay

pytestmark = pytest.mark.slow


def test_a_test_delivery_reaches_a_local_receiver_through_the_scheduler_and_a_worker(sfumato_up: Platform) -> None:
    with receiving() as receiver, sfumato_up.client() as http:
        receiver.statuses = [503]  # the first attempt fails; the task runs again retry_delay(1) = 10 s later
        team = http.post("/api/v1/teams", json={"name": "lab"})
        assert team.status_code == 201, team.text
        hooks = f"/api/v1/teams/{team.json()['id']}/webhooks"
        webhook = http.post(hooks, json={"url": receiver.url})
        assert webhook.status_code == 201, webhook.text
        queued = http.post(f"{hooks}/{webhook.json()['id']}/test")
        assert queued.status_code == 202, queued.text

        def delivered() -> list[dict] | None:
            items = http.get(f"{hooks}/{webhook.json()['id']}/deliveries").json()["items"]
            return items if items and items[0]["state"] == "delivered" else None

        [delivery] = sfumato_up.wait_for("the retried test delivery", delivered, timeout=90)
    assert [(a["attempt"], a["status_code"]) for a in delivery["attempts"]] == [(1, 503), (2, 200)]
    first, second = (datetime.fromisoformat(a["at"]) for a in delivery["attempts"])
    assert (second - first).total_seconds() >= retry_delay(1)
    (_, body), (headers, again) = receiver.received
    assert json.loads(body)["event"] == "test" and again == body
    assert headers["X-Sfumato-Signature"].startswith("sha256=")
