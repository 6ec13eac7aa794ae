"""The team page's webhooks: an admin adds one and sees its secret once, the "send test" button queues a test
delivery and swaps in the webhook's history, and a URL the platform may not call is refused naming `url`."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from page_fixtures import csrf_of


def add(client: TestClient, url: str) -> tuple[int, str]:
    csrf = csrf_of(client.get("/teams/1").text)
    response = client.post("/teams/1/webhooks", data={"url": url, "csrf_token": csrf})
    return response.status_code, response.text


def test_an_admin_adds_a_webhook_and_sees_its_secret_once(client: TestClient) -> None:
    status, page = add(client, "https://hooks.example.com/services/T0/B0/x")
    assert status == 201, page
    assert re.search(r"shown this once: <code>[0-9a-f]{64}</code>", page)
    again = client.get("/teams/1").text
    assert "https://hooks.example.com/services/T0/B0/x" in again and "shown this once" not in again


def test_the_send_test_button_queues_a_delivery_shown_in_the_webhooks_history(client: TestClient) -> None:
    _, page = add(client, "https://hooks.example.com/hook")
    webhook_id = re.search(r'id="webhook-(\d+)"', page).group(1)  # type: ignore[union-attr]
    assert f'hx-post="/teams/1/webhooks/{webhook_id}/test"' in page
    sent = client.post(
        f"/teams/1/webhooks/{webhook_id}/test",
        data={"csrf_token": csrf_of(page)},
        headers={"HX-Request": "true"},
        follow_redirects=True,
    )
    assert sent.status_code == 200, sent.text
    section = sent.text.split(f'id="webhook-{webhook_id}"', 1)[1].split("</article>", 1)[0]
    assert re.search(r"<td>test</td>\s*<td>pending</td>\s*<td>queued</td>", section)


def test_a_link_local_url_is_refused_on_the_page_naming_url(client: TestClient) -> None:
    status, page = add(client, "http://169.254.1.1/hook")
    assert status == 422, page
    assert "url: 169.254.1.1 is link-local" in page
