"""Limits and hygiene: 413 for oversized bodies, 422 for a PNG that is not one, paths confined to their roots,
a spec's shell metacharacters kept as text, and security headers on every response."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from security_support import TwoTeams, upload_sample
from server_harness import Harness, png_bytes

from server.models import Allocation, Device, Host, Job
from server.services.job_runs import start_run
from worker.launch import torchrun_argv


def test_oversized_json_body_is_413_before_it_is_read(harness: Harness) -> None:
    limit = harness.settings.max_body_bytes
    response = harness.client.post("/api/v1/jobs", content=b"{" + b" " * limit + b"}", headers=harness.admin)
    assert response.status_code == 413 and "larger than" in response.json()["detail"]
    assert harness.job_count() == 0


def test_oversized_chunked_upload_is_413(harness: Harness, two_teams: TwoTeams) -> None:
    def chunks() -> object:
        for _ in range(harness.settings.max_body_bytes // 10_000 + 2):
            yield b"x" * 10_000

    url = f"/api/v1/ingest/{two_teams.job_id}/samples"
    response = harness.client.post(
        url, content=chunks(), headers={**two_teams.job_token, "Content-Type": "multipart/form-data; boundary=x"}
    )
    assert response.status_code == 413


@pytest.mark.parametrize(
    "image",
    [b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>", b"\x89PNG\r\n\x1a\n" + b"\0" * 64],
    ids=["svg-as-png", "magic-then-garbage"],
)
def test_a_png_that_is_not_a_png_is_422_and_not_stored(harness: Harness, two_teams: TwoTeams, image: bytes) -> None:
    response = upload_sample(harness, two_teams.job_id, two_teams.job_token, image, prompt="fake")
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "image"
    listed = harness.client.get(f"/api/v1/jobs/{two_teams.job_id}/samples", headers=two_teams.lab).json()
    assert all(s["prompt"] != "fake" for s in listed["items"])


def test_a_png_over_the_pixel_limit_is_422(harness: Harness, two_teams: TwoTeams) -> None:
    response = upload_sample(harness, two_teams.job_id, two_teams.job_token, png_bytes(512, 512), prompt="big")
    assert response.status_code == 422


@pytest.mark.parametrize("path", ["../../etc", "/etc/passwd", "checkpoints/../../../other", "//etc/shadow"])
def test_artifact_paths_outside_the_job_folder_are_refused(harness: Harness, two_teams: TwoTeams, path: str) -> None:
    body = {"attempt": 1, "kind": "model", "name": "evil", "path": path}
    response = harness.client.post(
        f"/api/v1/ingest/{two_teams.job_id}/artifacts", json=body, headers=two_teams.job_token
    )
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "path"


def test_sample_image_urls_cannot_walk_out_of_the_artifact_root(harness: Harness, two_teams: TwoTeams) -> None:
    base = f"/api/v1/jobs/{two_teams.job_id}/samples"
    for suffix in ("/..%2F..%2F..%2Fetc%2Fpasswd/image", "/%2Fetc%2Fpasswd/image", "/0/image"):
        assert harness.client.get(base + suffix, headers=two_teams.lab).status_code in (404, 422)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"model": {"path": "/etc"}}, "model.path"),
        ({"model": {"path": "../../../../etc"}}, "model.path"),
        ({"model": {"path": "~/.ssh"}}, "model.path"),
        ({"prompts": {"source": "/etc/passwd"}}, "prompts.source"),
        ({"prompts": {"source": "var/sfumato.db"}}, "prompts.source"),
    ],
)
def test_spec_paths_outside_the_roots_are_refused(harness: Harness, spec: dict[str, object], field: str) -> None:
    response = harness.submit(spec)
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == field
    assert harness.job_count() == 0


def test_default_roots_are_the_models_folder_and_examples_on_the_embedded_platform(harness: Harness) -> None:
    roots = harness.settings.resolved_path_roots()
    assert roots == [str((harness.settings.home / "models").resolve()), str(Path("examples").resolve())]
    prompts = harness.settings.home / "models" / "prompts.txt"
    prompts.parent.mkdir(parents=True)
    prompts.write_text("a red apple\n")
    assert harness.submit({"prompts": {"source": str(prompts)}}).status_code == 201
    production = harness.settings.model_copy(update={"database_url": "postgresql+psycopg://db/sfumato"})
    assert production.resolved_path_roots() == roots[:1]


def test_shell_metacharacters_in_a_spec_are_stored_as_text_and_never_run(harness: Harness, tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    hostile = f"; rm -rf / ; touch {canary}"
    prompt = f"$(touch {canary}) `touch {canary}` | sh"
    job_id = harness.submit_ok({"name": hostile, "prompts": {"eval": [prompt]}})
    stored = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin).json()
    assert stored["name"] == hostile and stored["spec"]["prompts"]["eval"] == [prompt]
    host_id = harness.add_host("cpu-1", device_type="cpu", count=1)
    with harness.session() as session:
        job = session.get_one(Job, job_id)
        job.attempt, job.status = 1, "scheduled"
        device = session.query(Device).filter_by(host_id=host_id).one()
        session.add(Allocation(job_id=job_id, attempt=1, device_id=device.id, host_id=host_id))
        session.commit()
        host = session.get_one(Host, host_id).name
        plan = start_run(session, job_id, 1, 0, host, tmp_path / "artifacts", node_token_key=b"k")
        session.commit()
    assert plan is not None
    argv = torchrun_argv(plan, python=sys.executable)
    assert all("rm -rf" not in arg and "touch" not in arg for arg in argv)
    assert json.loads(plan.spec_path.read_text())["name"] == hostile
    assert not canary.exists()


@pytest.mark.parametrize("path", ["/jobs", "/login", "/api/v1/jobs", "/api/v1/nothing", "/static/app.css"])
def test_every_response_carries_the_security_headers(harness: Harness, path: str) -> None:
    headers = harness.client.get(path, follow_redirects=False).headers
    csp = headers["content-security-policy"]
    assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "same-origin"


def test_the_413_answer_carries_the_security_headers_too(harness: Harness) -> None:
    body = b"x" * (harness.settings.max_body_bytes + 1)
    response = harness.client.post("/api/v1/jobs", content=body, headers=harness.admin)
    assert response.status_code == 413 and response.headers["x-content-type-options"] == "nosniff"
