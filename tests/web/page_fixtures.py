"""Test data for the page tests: a temp SQLite platform with users, hosts, jobs, metrics, samples and logs."""

from __future__ import annotations

import io
import math
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from pathlib import Path

import uvicorn
from argon2 import PasswordHasher
from fastapi import FastAPI
from PIL import Image, ImageOps
from sqlalchemy.orm import Session

from server.config import Settings
from server.migrate import upgrade
from server.models import (
    Advice,
    Allocation,
    ApiToken,
    Device,
    Host,
    Job,
    JobAttempt,
    JobEvent,
    LogLine,
    Membership,
    RewardService,
    Sample,
    Team,
    User,
    utcnow,
)
from server.services import metric_blocks
from server.services.current_points import record_first_step
from server.services.tokens import USER_TOKEN_PREFIX, hash_token, new_token
from sfumato.app import create_app
from tests.spec.advice_fixture import REPORT as PROBE_REPORT
from tests.spec.advice_fixture import SPEC as ADVISED_SPEC
from trainer.spec.ingest import MetricStep

PASSWORD = "correct horse battery"
# How the worker records a trainer that died on a traceback (services.job_runs).
HOSTILE_ERROR = (
    "trainer exited with code 1 on gpu-node-1 (node 0)\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/sfumato/trainer/models/loading.py", line 88, in load_pipeline\n'
    '    raise OSError(f"cannot reach the model hub: {reason}")\n'
    "OSError: cannot reach the model hub: name or service not known"
)
XSS = "<script>alert('x')</script>"
SPEC_BASE = {
    "name": "job",
    "model": {"family": "sd3", "path": "builtin:tiny"},
    "algorithm": {"name": "flow_grpo", "total_steps": 40, "group_size": 4},
    "executor": {"name": "native"},
    "reward": [{"name": "brightness"}, {"name": "colorfulness", "weight": 0.5}],
    "resources": {"device_type": "cuda", "devices": 2},
}


def csrf_of(html: str) -> str:
    """The CSRF token a page carries in its meta tag."""
    match = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert match, "no CSRF meta tag"
    return match.group(1)


def make_app(home: Path) -> FastAPI:
    """The real app (create_app) on the SQLite database and artifact folder under `home`."""
    return create_app(Settings(home=home, database_url=f"sqlite:///{home / 'sfumato.db'}"))


@contextmanager
def served(app: FastAPI) -> Iterator[str]:
    """`app` under a live uvicorn on a free port, in a thread; yields its URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def build_home(home: Path) -> World:
    """Migrate a database under `home` and fill it (and the artifact folder) with the test world."""
    app = make_app(home)
    upgrade(app.state.settings.database_url)
    with app.state.sessionmaker() as session:
        world = seed_world(session, app.state.settings.resolved_artifact_root())
    app.state.engine.dispose()
    return world


@dataclass
class World:
    admin: User
    member: User
    token: str
    running: Job
    finished: list[Job] = field(default_factory=list)
    hostile: Job | None = None
    queued: list[Job] = field(default_factory=list)
    advice: Advice | None = None  # answered from the hand-computed probe report; lean_retain's job came from it


@cache
def png(color: tuple[int, int, int], size: int = 64) -> bytes:
    """A small PNG: a vertical gradient from a darker shade of `color` to `color`."""
    dark = tuple(int(c * 0.6) for c in color)
    image = ImageOps.colorize(Image.linear_gradient("L").resize((size, size)), dark, color)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def make_job(session: Session, owner: User, team: Team | None, name: str, executor: str, **fields: object) -> Job:
    spec = {**SPEC_BASE, "name": name, "executor": {"name": executor}}
    if "algorithm" in fields:  # the spec names the algorithm the job's column says
        spec["algorithm"] = {**SPEC_BASE["algorithm"], "name": fields["algorithm"]}
    values: dict[str, object] = {
        "algorithm": "flow_grpo",
        "executor": executor,
        "model_family": "sd3",
        "device_type": "cuda",
        "devices": 2,
        "total_steps": 40,
        **fields,
    }
    job = Job(name=name, spec=spec, owner_id=owner.id, team_id=team.id if team else None, **values)
    session.add(job)
    session.flush()
    if job.started_at is not None:  # its attempt ran from its start to its end, as the worker records it
        ended = job.finished_at
        session.add(JobAttempt(job_id=job.id, attempt=job.attempt, started_at=job.started_at, last_seen_at=ended,
                               ended_at=ended, ended_by="finished" if ended else None))  # fmt: skip
    return job


def add_metrics(session: Session, job: Job, steps: range, speed: float = 1.0, attempt: int = 1) -> None:
    """Metric rows shaped like the trainer's: a rising reward, falling loss, a step-time split."""
    start = 1_732_870_000.0
    reported: list[MetricStep] = []
    for step in steps:
        wall = start + step * 6.0 / speed
        reward = 0.3 + 0.4 * (1 - math.exp(-step / 15)) + 0.02 * math.sin(step * speed)
        values = {
            "reward/mean": reward,
            "reward/std": 0.08 + 0.02 * math.cos(step / 3),
            "reward/brightness": reward + 0.05,
            "reward/colorfulness": reward - 0.07,
            "loss": 0.5 * math.exp(-step / 20) + 0.01,
            "kl": 0.002 * step / 40,
            "clip_frac": 0.1 + 0.05 * math.sin(step / 4),
            "time/rollout": 3.0 / speed,
            "time/reward": 0.4,
            "time/train": 2.2 / speed,
            "time/sync": 0.3,
            "time/step": 5.9 / speed + 0.7,
            "throughput/samples_per_s": 1.3 * speed,
            "memory/peak_bytes": (6 + speed) * 2**30,
            f"executor/{job.executor}_overlap": 0.2 * speed,
        }
        reported.append(MetricStep(step=step, wall_time=wall, values=values))
    if reported:
        record_first_step(session, job.id, attempt, steps[0])
        metric_blocks.store(session, job.id, attempt, metric_blocks.BatchPoints.of_steps(reported)[0])


def add_samples(session: Session, job: Job, artifact_root: Path, steps: list[int], prompts: list[str]) -> None:
    colors = [(220, 60, 50), (40, 90, 210), (60, 170, 90), (230, 180, 40)]
    folder = artifact_root / "jobs" / str(job.id) / "samples"
    folder.mkdir(parents=True, exist_ok=True)
    for step in steps:
        for p, prompt in enumerate(prompts):
            for seed in range(2):
                base = colors[(p + step // 5 + seed) % len(colors)]
                name = f"s{step}-p{p}-seed{seed}.png"
                (folder / name).write_bytes(png(base))
                session.add(
                    Sample(
                        job_id=job.id,
                        attempt=1,
                        step=step,
                        kind="eval",
                        prompt=prompt,
                        seed=seed,
                        reward=0.3 + step / 100 + seed / 50,
                        image_path=f"jobs/{job.id}/samples/{name}",
                        width=64,
                        height=64,
                    )
                )


def add_history(session: Session, job: Job) -> None:
    """The job's status events up to its status, timed by its started_at and finished_at where set."""
    history = ["queued", "scheduled", "running", job.status] if job.status != "queued" else ["queued"]
    times = {"running": job.started_at} | ({job.status: job.finished_at} if job.finished_at else {})
    session.add_all(
        JobEvent(
            job_id=job.id,
            attempt=1,
            status=status,
            message=f"{status} by the tests",
            created_at=times.get(status) or utcnow(),
        )
        for status in dict.fromkeys(history)
    )


def add_services(session: Session, creator: User, team: Team, device: Device) -> None:
    """A healthy reward service holding `device`, with two scrapes of its metrics, and one waiting for devices."""
    now = utcnow()
    buckets = [["0.01", 10.0], ["0.025", 90.0], ["0.05", 118.0], ["0.1", 120.0], ["+Inf", 120.0]]
    earlier = {"launch": 1, "scraped_at": (now - timedelta(seconds=2)).isoformat(), "requests": 100, "images": 1600}
    healthy = RewardService(
        name="pickscore-a",
        team_id=team.id,
        reward="pickscore",
        path="/models/pickscore",
        device_type="cuda",
        devices=1,
        state="healthy",
        generation=1,
        host_id=device.host_id,
        url="http://10.0.0.11:41234",
        restarts=1,
        last_health_at=now,
        created_by_id=creator.id,
        started_at=now - timedelta(minutes=20),
        metrics={"launch": 1, "scraped_at": now.isoformat(), "requests": 120, "images": 1920, "errors": 1,
                 "latency_buckets": buckets},
        recent_metrics=[earlier | {"errors": 1, "latency_buckets": buckets}],
    )  # fmt: skip
    waiting = RewardService(
        name="hpsv2-large",
        team_id=team.id,
        reward="hpsv2",
        path="/models/hpsv2",
        device_type="cuda",
        devices=8,
        state="pending",
        wait_reason="needs 8 cuda device(s) on one host; the largest free host has 1",
        created_by_id=creator.id,
    )
    session.add_all([healthy, waiting])
    session.flush()
    session.add(Allocation(service_id=healthy.id, attempt=1, device_id=device.id, host_id=device.host_id))


def seed_world(session: Session, artifact_root: Path) -> World:
    """Two users in one team, a host with GPUs, and jobs in every interesting state."""
    hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)  # cheap for tests; verify reads them
    team = Team(name="vision")
    admin = User(username="ada", password_hash=hasher.hash(PASSWORD), is_admin=True)
    member = User(username="bob", password_hash=hasher.hash(PASSWORD))
    session.add_all([team, admin, member])
    session.flush()
    session.add_all(
        [Membership(user_id=admin.id, team_id=team.id, role="admin"), Membership(user_id=member.id, team_id=team.id)]
    )
    token = new_token(USER_TOKEN_PREFIX)
    session.add(ApiToken(user_id=admin.id, name="tests", token_hash=hash_token(token)))

    host = Host(name="gpu-node-1", queue="host.gpu-node-1", address="10.0.0.11")
    session.add(host)
    session.flush()
    devices = [
        Device(host_id=host.id, index=i, device_type="cuda", model="NVIDIA H200", memory_bytes=141 * 2**30)
        for i in range(4)
    ]
    session.add_all(devices)
    session.flush()

    now = utcnow()
    earlier = now - timedelta(minutes=25)
    running = make_job(
        session,
        admin,
        team,
        "sd3-brightness-native",
        "native",
        status="running",
        attempt=1,
        step=30,
        last_reward=0.68,
        started_at=now - timedelta(minutes=3),
    )
    session.add_all(Allocation(job_id=running.id, attempt=1, device_id=d.id, host_id=host.id) for d in devices[:2])
    add_metrics(session, running, range(0, 30))
    add_samples(session, running, artifact_root, [0, 5, 10, 15, 20, 25], ["a red apple", "a blue ocean", XSS])
    session.add_all(
        LogLine(job_id=running.id, attempt=1, text=text, stream=stream)
        for text, stream in [
            ("loading builtin:tiny", "stdout"),
            (f"prompt {XSS}", "stdout"),
            ("warning: slow step", "stderr"),
        ]
    )
    finished = []
    for executor, speed in (("lean_retain", 1.6), ("lean_reweight", 1.4)):
        job = make_job(
            session,
            member,
            team,
            f"sd3-brightness-{executor}",
            executor,
            status="succeeded",
            attempt=1,
            step=40,
            last_reward=0.7,
            started_at=earlier,
            finished_at=earlier + timedelta(minutes=4 / speed),
        )
        add_metrics(session, job, range(0, 40), speed=speed)
        add_samples(session, job, artifact_root, list(range(0, 40, 5)), ["a red apple", "a blue ocean", XSS])
        finished.append(job)
    hostile = make_job(session, member, team, XSS, "native", status="failed", attempt=3, error=HOSTILE_ERROR)
    queued = [
        make_job(
            session,
            member,
            team,
            "waiting-big",
            "native",
            devices=8,
            wait_reason="needs 8 cuda devices; largest host has 4",
        ),
        make_job(session, admin, team, "waiting-urgent", "native", priority=5, wait_reason="devices busy"),
    ]
    for job in [running, *finished, hostile, *queued]:
        add_history(session, job)
    add_services(session, admin, team, devices[2])
    advised = ADVISED_SPEC.model_dump(mode="json")
    advised["resources"]["device_type"] = "cuda"  # as POST /advise stores it for the host class
    advice = Advice(spec=advised, budget_bytes=16 * 2**30, host_class="cuda")
    advice.state, advice.probe = "answered", PROBE_REPORT.model_dump(mode="json")
    advice.owner_id, advice.team_id, advice.answered_at = admin.id, team.id, now
    session.add(advice)
    session.flush()
    finished[0].advice_id = advice.id
    session.commit()
    return World(admin, member, token, running, finished, hostile, queued, advice)
