"""A real platform for API tests: migrated database, the app under TestClient, and the few rows other rooms write.

The scheduler and worker are not started; `start_job` and `finish_job` make the same database
changes they make (attempt, status through set_status, job token), so the API is tested alone.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy.orm import Session, sessionmaker
from starlette import testclient

from server.config import Settings
from server.models import Allocation, ApiToken, Device, Host, Job, JobStatus, LogLine, Membership, Team, User
from server.services.job_status import set_status
from server.services.tokens import JOB_TOKEN_PREFIX, USER_TOKEN_PREFIX, hash_token, new_token

Headers = dict[str, str]
# Whichever httpx module Starlette's TestClient runs on (httpx2 when installed, else httpx).
Response = testclient.httpx.Response


def bearer(token: str) -> Headers:
    return {"Authorization": f"Bearer {token}"}


def png_bytes(width: int = 8, height: int = 8, fmt: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, format=fmt)
    return buffer.getvalue()


@dataclass
class Harness:
    client: TestClient
    sessions: sessionmaker[Session]
    settings: Settings
    admin: Headers

    def session(self) -> Session:
        return self.sessions()

    def submit(self, spec: dict[str, Any] | None = None, headers: Headers | None = None, **params: str) -> Response:
        return self.client.post("/api/v1/jobs", json=spec or {}, headers=headers or self.admin, params=params)

    def submit_ok(self, spec: dict[str, Any] | None = None, headers: Headers | None = None) -> int:
        response = self.submit(spec, headers)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def add_user(
        self,
        username: str,
        team: str,
        role: str = "member",
        *,
        scope: str = "write",
        expires_at: datetime | None = None,
    ) -> Headers:
        """A user in `team` (created if new) with one API token; returns its auth headers."""
        raw = new_token(USER_TOKEN_PREFIX)
        with self.session() as session:
            team_row = session.query(Team).filter_by(name=team).one_or_none() or Team(name=team)
            user = User(username=username)
            session.add_all([team_row, user])
            session.flush()
            session.add(Membership(user_id=user.id, team_id=team_row.id, role=role))
            session.add(
                ApiToken(user_id=user.id, name="test", token_hash=hash_token(raw), scope=scope, expires_at=expires_at)
            )
            session.commit()
        return bearer(raw)

    def join(self, username: str, team: str, role: str = "member") -> None:
        with self.session() as session:
            user = session.query(User).filter_by(username=username).one()
            team_row = session.query(Team).filter_by(name=team).one()
            session.add(Membership(user_id=user.id, team_id=team_row.id, role=role))
            session.commit()

    def add_host(self, name: str, device_type: str = "cuda", count: int = 2, status: str = "online") -> int:
        with self.session() as session:
            host = Host(name=name, queue=f"host.{name}", status=status)
            session.add(host)
            session.flush()
            for index in range(count):
                session.add(Device(host_id=host.id, index=index, device_type=device_type, model="H100"))
            session.commit()
            return host.id

    def start_job(self, job_id: int, *, host_id: int | None = None) -> Headers:
        """What the scheduler and worker do at launch: next attempt, devices, running, a fresh job token.
        A job that is running already is first sent back to the queue, as a lost node would."""
        raw = new_token(JOB_TOKEN_PREFIX)
        with self.session() as session:
            job = session.get_one(Job, job_id)
            if job.status != JobStatus.QUEUED:
                set_status(session, job, JobStatus.QUEUED, "requeued by the tests")
            job.attempt += 1
            if host_id is not None:
                host = session.get_one(Host, host_id)
                for device in host.devices[: job.devices]:
                    session.add(Allocation(job_id=job.id, attempt=job.attempt, device_id=device.id, host_id=host.id))
            set_status(session, job, JobStatus.SCHEDULED)
            set_status(session, job, JobStatus.RUNNING)
            job.token_hash = hash_token(raw)
            session.commit()
        return bearer(raw)

    def finish_job(self, job_id: int, status: JobStatus = JobStatus.SUCCEEDED) -> None:
        with self.session() as session:
            job = session.get_one(Job, job_id)
            set_status(session, job, status)
            session.commit()

    def add_log_lines(self, job_id: int, texts: list[str]) -> None:
        with self.session() as session:
            session.add_all(LogLine(job_id=job_id, attempt=1, text=text) for text in texts)
            session.commit()

    def job_count(self) -> int:
        with self.session() as session:
            return session.query(Job).count()
