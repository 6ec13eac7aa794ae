"""Property-based fuzz of the whole OpenAPI (schemathesis) against a live server on PostgreSQL.

Every operation gets valid (positive) and invalid (negative) requests; a response of 500 or more,
or a 4xx without a JSON `{"detail": ...}` body, is a failure. Used by tests/security (a small run)
and by `make fuzz` (a longer one):

    SFUMATO_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/postgres \\
        python tests/security/openapi_fuzz.py --examples 100
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import APIOperation, GenerationMode
from sqlalchemy.orm import Session

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from server.config import Settings  # noqa: E402
from server.db import make_engine, scratch_postgres_database  # noqa: E402
from server.migrate import upgrade  # noqa: E402
from server.models import ApiToken, Device, Host, Job  # noqa: E402
from server.services.auth import ensure_admin  # noqa: E402
from server.services.tokens import JOB_TOKEN_PREFIX, USER_TOKEN_PREFIX, hash_token, new_token  # noqa: E402
from sfumato.cli.process_groups import wait_until_healthy  # noqa: E402

ADMIN_TOKEN = "sfu_fuzz-admin-token"


@dataclass
class FuzzReport:
    requests: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        statuses = ", ".join(f"{code}: {n}" for code, n in sorted(self.by_status.items()))
        errors = sum(n for code, n in self.by_status.items() if code >= 500)
        return f"{self.requests} requests, {errors} server errors, {len(self.failures)} failures ({statuses})"


@dataclass
class LiveServer:
    url: str
    job_token: str
    spare_token_id: int
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _seed(database_url: str) -> tuple[str, int]:
    """The admin (SFUMATO_ADMIN_TOKEN), a CPU host, a running job with its token, and a spare token to revoke."""
    settings = Settings(database_url=database_url, admin_token=ADMIN_TOKEN)
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            ensure_admin(session, settings)
            host = Host(name="fuzz-host", queue="host.fuzz-host", status="online")
            session.add(host)
            session.flush()
            session.add(Device(host_id=host.id, index=0, device_type="cpu", model="cpu"))
            job_token = new_token(JOB_TOKEN_PREFIX)
            spec = {"name": "seed"}
            session.add(
                Job(
                    name="seed",
                    spec=spec,
                    status="running",
                    algorithm="flow_grpo",
                    executor="native",
                    model_family="sd3",
                    device_type="cpu",
                    devices=1,
                    attempt=1,
                    owner_id=1,
                    team_id=1,
                    token_hash=hash_token(job_token),
                )
            )
            spare = ApiToken(user_id=1, name="spare", token_hash=hash_token(new_token(USER_TOKEN_PREFIX)))
            session.add(spare)
            session.commit()
            return job_token, spare.id
    finally:
        engine.dispose()


@contextmanager
def live_server(database_url: str, home: Path, env_extra: dict[str, str] | None = None) -> Iterator[LiveServer]:
    """Migrate and seed the database, then run uvicorn with create_app in a process of its own (with
    `env_extra` added to its environment)."""
    upgrade(database_url)
    job_token, spare_id = _seed(database_url)
    port = _free_port()
    env = {
        **os.environ,
        "SFUMATO_DATABASE_URL": database_url,
        "SFUMATO_HOME": str(home),
        "SFUMATO_SECRET_KEY": secrets.token_hex(32),
        "SFUMATO_MAX_BODY_BYTES": "1000000",
        **(env_extra or {}),
    }
    log = home / "server.log"
    home.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "uvicorn", "--factory", "sfumato.app:create_app", "--port", str(port)]
    argv.append("--no-proxy-headers")  # as `sfumato server` runs it: the app decides whom to believe
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, proc, log)
        yield LiveServer(url, job_token, spare_id, log)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _check(report: FuzzReport, label: str, response: schemathesis.Response) -> None:
    report.requests += 1
    report.by_status[response.status_code] = report.by_status.get(response.status_code, 0) + 1
    if response.status_code >= 500:
        report.failures.append(f"{label}: {response.status_code} {response.text[:200]}")
    elif response.status_code >= 400 and " HEAD " not in label:  # a HEAD answer has no body (RFC 9110 9.3.2)
        content_type = response.headers.get("content-type", [""])[0]
        try:
            body = response.json()
        except ValueError:
            body = None
        if not content_type.startswith("application/json") or not isinstance(body, dict) or "detail" not in body:
            report.failures.append(f"{label}: {response.status_code} without a JSON error body: {response.text[:200]}")


def _fuzz_operation(
    report: FuzzReport, server: LiveServer, operation: APIOperation, mode: GenerationMode, examples: int
) -> None:
    token = server.job_token if operation.path.startswith("/api/v1/ingest/") else ADMIN_TOKEN
    headers = {"Authorization": f"Bearer {token}"}
    # Revoking must not hit the token the fuzz itself uses: valid requests revoke a spare one.
    pinned = {"token_id": server.spare_token_id} if "{token_id}" in operation.path else None
    label = f"{mode.value} {operation.label}"

    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=pinned))
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    def run(case: schemathesis.Case) -> None:
        _check(report, label, case.call(base_url=server.url, headers=headers, timeout=30))

    with suppress(Unsatisfiable):  # nothing to make invalid: an operation without parameters, in negative mode
        run()


def fuzz(server: LiveServer, examples: int) -> FuzzReport:
    """Positive and negative cases for every operation of /openapi.json; never raises on a bad answer."""
    # The schema is built on its first request: up to 60 s on a busy host (schemathesis's default is 10 s).
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json", timeout=60)
    report = FuzzReport()
    for result in schema.get_all_operations():
        for mode in GenerationMode:
            _fuzz_operation(report, server, result.ok(), mode, examples)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=100, help="cases per operation and mode")
    args = parser.parse_args()
    server_url = os.environ.get("SFUMATO_TEST_POSTGRES_URL")
    if not server_url:
        print("SFUMATO_TEST_POSTGRES_URL is not set: the fuzz needs PostgreSQL")
        return 2
    with scratch_postgres_database(server_url, "sfumato_fuzz") as database_url, tempfile.TemporaryDirectory() as home:
        with live_server(database_url, Path(home)) as server:
            started = time.monotonic()
            report = fuzz(server, args.examples)
            elapsed = time.monotonic() - started
        for failure in report.failures[:50]:
            print("FAIL", failure)
        print(f"fuzz: {report.summary()} in {elapsed:.0f} s")
        for trace in server.log.read_text().split("Traceback (most recent call last):")[1:4]:
            print("server traceback:", trace[-3000:])
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
