"""Whether a job's remote reward servers answer: asked once, after the job is stored, outside any request.

A submitted job gets a pending `reward_probes` row per remote reward (when SFUMATO_REMOTE_REWARD_PROBE is on).
The scheduler process answers pending rows in batches: GET <url>/healthz through the checked client
(server.services.outgoing_http, so the destination rule holds for every address the host resolves to), then
"reachable" for a 200 and "unreachable" for anything else. The batch's answers are written together, no sooner
than PROBE_WINDOW_S after the batch began: a closed port, a silent listener, a database or the platform itself
all read "unreachable", at the same moment. The job is queued whatever the answer; its trainer retries the
server, and fails the step naming the reward if it never answers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from server.config import Settings
from server.db import session_scope
from server.models import Job, RewardProbe
from server.schemas.jobs import RewardReachability
from server.services.outgoing_http import get_status
from server.states import Reachability
from trainer.spec import REMOTE_REWARD
from trainer.spec.reward_protocol import HEALTH_PATH
from trainer.spec.sections import check_reward_url

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 1.0  # per phase (connect, write, read): a probe ends within about three of them
PROBE_WINDOW_S = 4.0  # a batch's answers appear this long after it began, however soon they were known
PROBE_BATCH = 8  # probes asked at once, each on its own thread


def queue_reward_probes(session: Session, jobs: Sequence[Job], settings: Settings) -> None:
    """A pending probe for each remote reward of the (flushed) jobs, in the caller's unit of work; none when
    probing is off."""
    if not settings.remote_reward_probe:
        return
    for job in jobs:
        for index, reward in enumerate(job.spec.get("reward", [])):
            if reward.get("name") == REMOTE_REWARD:
                session.add(RewardProbe(job_id=job.id, reward_index=index))


def job_reward_reachability(session: Session, job_id: int) -> list[RewardReachability]:
    """What the job's answer shows: one line per remote reward, by its spec field."""
    rows = session.execute(
        select(RewardProbe.reward_index, RewardProbe.state)
        .where(RewardProbe.job_id == job_id)
        .order_by(RewardProbe.reward_index)
    )
    return [RewardReachability(field=f"reward.{index}.url", state=Reachability(state)) for index, state in rows]


def answer_pending_probes(factory: sessionmaker[Session], settings: Settings, stop: threading.Event) -> int:
    """Probe one batch of pending rows and record their answers; the number of rows answered (0: none pending)."""
    started = time.monotonic()
    with session_scope(factory) as session:
        pending = session.execute(
            select(RewardProbe.id, RewardProbe.reward_index, Job.spec)
            .join(Job, Job.id == RewardProbe.job_id)
            .where(RewardProbe.state == Reachability.PENDING)
            .order_by(RewardProbe.id)
            .limit(PROBE_BATCH)
        ).all()
    if not pending:
        return 0
    urls = [_reward_url(spec, index) for _, index, spec in pending]
    with ThreadPoolExecutor(max_workers=PROBE_BATCH, thread_name_prefix="reward-probe") as pool:
        states = list(pool.map(lambda url: reachability(url, settings.allow_private_urls), urls))
    stop.wait(max(0.0, started + PROBE_WINDOW_S - time.monotonic()))
    with session_scope(factory) as session:
        for (probe_id, _, _), state in zip(pending, states, strict=True):
            session.execute(
                update(RewardProbe)
                .where(RewardProbe.id == probe_id, RewardProbe.state == Reachability.PENDING)
                .values(state=state)
            )
    return len(pending)


def reachability(url: str | None, allow_private: bool) -> Reachability:
    """REACHABLE when GET <url>/healthz answers 200 from an address the destination rule allows; else UNREACHABLE,
    whatever the reason (a URL stored under older rules is checked again first)."""
    try:
        checked = check_reward_url(url or "", allow_private)
    except ValueError:
        return Reachability.UNREACHABLE
    status = get_status(checked + HEALTH_PATH, allow_private=allow_private, timeout_s=PROBE_TIMEOUT_S)
    return Reachability.REACHABLE if status == 200 else Reachability.UNREACHABLE


def run_reward_prober(factory: sessionmaker[Session], settings: Settings, stop: threading.Event) -> None:
    """The scheduler process's prober thread: answer pending probes until `stop` is set, resting between
    empty passes for the scheduler's interval."""
    while not stop.is_set():
        try:
            answered = answer_pending_probes(factory, settings, stop)
        except Exception:  # a database hiccup must not end the thread; the next pass retries
            log.exception("reward probe pass failed")
            answered = 0
        if not answered:
            stop.wait(settings.scheduler_interval_seconds)


def _reward_url(spec: dict[str, object], index: int) -> str | None:
    rewards = spec.get("reward")
    if not isinstance(rewards, list) or index >= len(rewards) or not isinstance(rewards[index], dict):
        return None
    url = rewards[index].get("url")
    return url if isinstance(url, str) else None
