"""Shared by the hostile-input tests: hostile text, the two-teams world, a sample upload."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi.testclient import TestClient
from platform_harness import REPO, free_port
from server_harness import Harness, Headers, Response, bearer, png_bytes
from sqlalchemy import select

from server.config import Settings
from server.models import ApiToken, User
from server.schemas.accounts import UserCreate
from server.services.accounts import create_user
from server.services.auth import Caller, ensure_admin
from server.services.tokens import USER_TOKEN_PREFIX, hash_token, new_token
from sfumato.app import create_app
from sfumato.cli.process_groups import wait_until_healthy

XSS = "<script>alert('x')</script>"


@dataclass
class TwoTeams:
    """Team `lab` with a running job that has metrics, a sample, logs and an artifact; team `studio` beside it."""

    lab: Headers  # an admin of lab
    studio: Headers  # an admin of studio
    job_id: int
    job_token: Headers
    sample_id: int


def upload_sample(harness: Harness, job_id: int, token: Headers, image: bytes, prompt: str = "a red apple") -> Response:
    form = {"attempt": "1", "step": "2", "kind": "eval", "prompt": prompt, "seed": "7", "reward": "0.5"}
    files = {"image": ("sample.png", image, "image/png")}
    return harness.client.post(f"/api/v1/ingest/{job_id}/samples", data=form, files=files, headers=token)


def send_telemetry(harness: Harness, job_id: int, token: Headers) -> int:
    """What a running job's trainer sends (a metric, a sample, a checkpoint) and a log line; the sample's id."""
    batch = {"attempt": 1, "steps": [{"step": 1, "wall_time": 1.0, "values": {"loss": 0.5}}]}
    assert harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=batch, headers=token).status_code == 200
    sample = upload_sample(harness, job_id, token, png_bytes())
    assert sample.status_code == 201, sample.text
    artifact = {"attempt": 1, "kind": "checkpoint", "name": "step-1", "step": 1, "path": "checkpoints/step-1"}
    assert harness.client.post(f"/api/v1/ingest/{job_id}/artifacts", json=artifact, headers=token).status_code == 201
    harness.add_log_lines(job_id, ["step 1 loss 0.5"])
    return int(sample.json()["id"])


def csrf_of(html: str) -> str:
    """The CSRF token a page carries in its <meta name="csrf-token">."""
    match = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert match
    return match.group(1)


def login_with_token(harness: Harness, headers: Headers) -> int:
    """Open a page session with the API token of `headers`; the login's status code."""
    form = {
        "token": headers["Authorization"].removeprefix("Bearer "),
        "csrf_token": csrf_of(harness.client.get("/login").text),
    }
    return harness.client.post("/login", data=form, follow_redirects=False).status_code


def login_with_password(harness: Harness, username: str, password: str) -> int:
    form = {"username": username, "password": password, "csrf_token": csrf_of(harness.client.get("/login").text)}
    return harness.client.post("/login", data=form, follow_redirects=False).status_code


def add_password_user(harness: Harness, username: str, password: str, team_id: int = 1) -> int:
    """A member of team `team_id` with a password, created by the server admin as in a session opened by password
    (tokens may not set passwords); the new user's id."""
    with harness.session() as session:
        admin = session.scalars(select(User).where(User.username == "admin")).one()
        as_admin = Caller(admin.id, admin.username, is_admin=True, teams=())
        body = UserCreate(username=username, password=password, team_id=team_id)
        return create_user(session, as_admin, body).id


def token_for(harness: Harness, username: str) -> Headers:
    """A fresh write token of an existing user (as the settings page would make it)."""
    raw = new_token(USER_TOKEN_PREFIX)
    with harness.session() as session:
        user_id = session.scalar(select(User.id).where(User.username == username))
        session.add(ApiToken(user_id=user_id, name="extra", token_hash=hash_token(raw)))
        session.commit()
    return bearer(raw)


def serve(settings: Settings) -> Iterator[Harness]:
    """The real app under TestClient, with the first start's admin."""
    app = create_app(settings)
    with TestClient(app) as client:
        with app.state.sessionmaker() as session:
            token = ensure_admin(session, settings)
        assert token is not None
        yield Harness(client, app.state.sessionmaker, settings, bearer(token))


@contextmanager
def bootstrapped_server(tmp_path: Path, **env: str) -> Iterator[tuple[str, Path]]:
    """`sfumato server --bootstrap` (one process) on an embedded platform under `tmp_path`, with `env` over this
    environment less its database, admin password and secret key; its URL and its log, once it answers."""
    environ = {**os.environ, "SFUMATO_HOME": str(tmp_path / "home")}
    for name in ("SFUMATO_DATABASE_URL", "SFUMATO_ADMIN_PASSWORD", "SFUMATO_SECRET_KEY"):
        environ.pop(name, None)
    port = free_port()
    argv = [sys.executable, "-m", "sfumato.cli", "server", "--port", str(port), "--workers", "1", "--bootstrap"]
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=environ | env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, proc, log)
        yield url, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)
