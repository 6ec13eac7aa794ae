"""The pages' chart data and images are the API's own reads, asked with the page session cookie: the same
schema and limits as any client; the cookie authorizes reads only."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from page_fixtures import World

from server.services.metric_reads import MAX_KEYS_PER_READ


def test_the_job_page_points_its_charts_at_the_api(client: TestClient, world: World) -> None:
    html = client.get(f"/jobs/{world.running.id}").text
    assert f'data-metrics-src="/api/v1/jobs/{world.running.id}/metrics"' in html
    assert f'data-max-keys="{MAX_KEYS_PER_READ}"' in html


def test_the_page_session_reads_the_api_series_on_one_shared_step_axis(client: TestClient, world: World) -> None:
    keys = client.get(f"/api/v1/jobs/{world.running.id}/metrics/keys").json()["keys"]
    assert "reward/mean" in keys and "executor/native_overlap" in keys
    body = client.get(f"/api/v1/jobs/{world.running.id}/metrics?keys=reward/mean,loss&max_points=10").json()
    mean, loss = body["series"]
    assert mean["steps"] == loss["steps"] and mean["steps"][-1] == 29 and body["bucket_steps"] > 1


def test_the_page_session_gets_the_api_limits(client: TestClient, world: World) -> None:
    keys = ",".join(f"k{i}" for i in range(MAX_KEYS_PER_READ + 1))
    response = client.get(f"/api/v1/jobs/{world.running.id}/metrics?keys={keys}")
    assert response.status_code == 422
    assert f"at most {MAX_KEYS_PER_READ} keys" in response.text


def test_the_page_session_reads_no_job_the_api_would_hide(client: TestClient) -> None:
    assert client.get("/api/v1/jobs/999999/metrics?keys=loss").status_code == 404


def test_the_page_session_cookie_authorizes_no_api_write(client: TestClient, world: World) -> None:
    """A cookie is sent by any page that links here, so only a read may use it: a write needs the token."""
    response = client.post(f"/api/v1/jobs/{world.running.id}/cancel")
    assert response.status_code == 401 and "bearer token" in response.text
    assert client.get(f"/api/v1/jobs/{world.running.id}").json()["cancel_requested"] is False


def test_without_a_session_the_api_reads_need_a_token(anon: TestClient, world: World) -> None:
    assert anon.get(f"/api/v1/jobs/{world.running.id}/metrics/keys").status_code == 401


def test_the_gallery_images_are_the_api_image_route(client: TestClient, world: World) -> None:
    html = client.get(f"/jobs/{world.running.id}/gallery/grid?i=0").text
    full = re.search(r'href="(/api/v1/jobs/\d+/samples/\d+/image)"', html)
    assert full
    response = client.get(full.group(1))
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
