"""HTML and script in job names, prompts, metric keys, log lines, token and reward names: escaped on every page."""

from __future__ import annotations

import re

from security_support import XSS, upload_sample
from server_harness import Harness, png_bytes

ESCAPED = "&lt;script&gt;alert("


def _csrf(html: str) -> str:
    match = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert match
    return match.group(1)


def _login_with_token(harness: Harness) -> str:
    """Log the page client in as the admin; returns the new session's CSRF token."""
    raw = harness.admin["Authorization"].removeprefix("Bearer ")
    form = {"token": raw, "csrf_token": _csrf(harness.client.get("/login").text)}
    harness.client.post("/login", data=form, follow_redirects=False)
    return _csrf(harness.client.get("/settings").text)


def test_hostile_text_is_escaped_on_every_page(harness: Harness) -> None:
    spec = {"name": f"job {XSS}", "prompts": {"eval": [f"prompt {XSS}"]}}
    job_id = harness.submit_ok(spec)
    other = harness.submit_ok({"name": f"other {XSS}"})
    token = harness.start_job(job_id)
    batch = {"attempt": 1, "steps": [{"step": 1, "wall_time": 1.0, "values": {f"reward/{XSS}": 0.5}}]}
    assert harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=batch, headers=token).status_code == 200
    assert upload_sample(harness, job_id, token, png_bytes(), prompt=f"sample {XSS}").status_code == 201
    harness.add_log_lines(job_id, [f"log {XSS}"])
    harness.client.post("/api/v1/tokens", json={"name": f"token {XSS}"}, headers=harness.admin)
    _login_with_token(harness)
    pages = [
        "/jobs",
        "/jobs/rows",
        f"/jobs/{job_id}",
        f"/jobs/{job_id}/header",
        f"/jobs/{job_id}/logs?after=0",
        f"/jobs/{job_id}/gallery",
        f"/compare?job={job_id}&job={other}",
        f"/submit?from={job_id}",
        "/hosts",
        "/settings",
        "/teams/1",
        "/teams/1/audit",
    ]
    escaped_somewhere = 0
    for path in pages:
        response = harness.client.get(path)
        assert response.status_code == 200, path
        assert "<script>alert(" not in response.text, path
        escaped_somewhere += ESCAPED in response.text
    assert escaped_somewhere >= 8


def test_hostile_reward_name_is_refused_and_escaped_in_the_form_error(harness: Harness) -> None:
    response = harness.submit({"reward": [{"name": XSS}]})
    assert response.status_code == 422 and response.json()["detail"][0]["field"].startswith("reward")
    csrf = _login_with_token(harness)
    spec_json = '{"reward": [{"name": "' + XSS.replace('"', '\\"') + '"}]}'
    page = harness.client.post("/submit", data={"mode": "json", "spec_json": spec_json, "csrf_token": csrf})
    assert page.status_code == 422 and "<script>alert(" not in page.text and ESCAPED in page.text
