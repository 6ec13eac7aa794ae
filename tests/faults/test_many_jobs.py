"""200 jobs submitted at once against 4 devices (two worker hosts of two CPU slots) and two schedulers racing:
every job finishes, no device is ever held by two jobs (checked on the allocation history), and jobs start in
priority order, first come first served within a priority.

The jobs go through the real API, schedulers, broker, workers and supervisor, but the trainer is a stand-in
that exits at once (SFUMATO_TRAINER_PYTHON): a real torchrun of the tiny model costs ~8 CPU-seconds, so 200
would take over 14 minutes on two cores, more than the whole suite's budget, and would test the trainer, not
the placement (docs/scheduling-and-faults.md; every other fault test runs the real trainer).
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fault_harness import Cluster, tiny_spec
from sqlalchemy import create_engine, text

pytestmark = pytest.mark.slow  # real server, scheduler, workers and trainers

JOBS = 200
PRIORITIES = (0, 5, 10)


def stand_in_trainer(folder: Path) -> Path:
    script = folder / "stand-in-python"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    return script


def test_200_jobs_on_4_devices_all_finish_without_sharing_a_device_in_priority_order(
    start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str, tmp_path: Path
):
    cluster = start_cluster(
        postgres_url,
        redis_url,
        {"alpha": 2, "beta": 2},
        SFUMATO_TRAINER_PYTHON=str(stand_in_trainer(tmp_path)),
        SFUMATO_SCHEDULER_INTERVAL_SECONDS="0.1",
        SFUMATO_MAX_QUEUED_PER_USER=str(JOBS),  # one user queues all of them at once, past the default cap of 100
    )
    cluster.start_scheduler("scheduler-2")
    with cluster.platform.client() as http:
        host_ids = [h["id"] for h in http.get("/api/v1/hosts").json()["items"]]
        for host_id in host_ids:  # hold placement until every job is in, so the order is checkable
            assert http.post(f"/api/v1/hosts/{host_id}/drain").is_success
    rng = random.Random(7)
    specs = [tiny_spec(1, resources={"devices": 1, "device_type": "cpu", "priority": rng.choice(PRIORITIES)})
             for _ in range(JOBS)]  # fmt: skip
    with ThreadPoolExecutor(16) as pool:
        job_ids = list(pool.map(cluster.submit, specs))
    assert len(set(job_ids)) == JOBS

    with cluster.platform.client() as http:
        for host_id in host_ids:
            assert http.post(f"/api/v1/hosts/{host_id}/enable").is_success

    engine = create_engine(postgres_url)

    def all_finished() -> bool:
        with engine.connect() as conn:
            return conn.execute(text("SELECT count(*) FROM jobs WHERE status = 'succeeded'")).scalar() == JOBS

    cluster.wait_for(f"{JOBS} jobs to succeed", all_finished, timeout=240)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM jobs WHERE status <> 'succeeded' OR attempt <> 1")).scalar() == 0
        history = conn.execute(
            text("SELECT device_id, created_at, released_at FROM allocations ORDER BY device_id, created_at")
        ).all()
        started = conn.execute(
            text("SELECT j.id, j.priority FROM job_events e JOIN jobs j ON j.id = e.job_id "
                 "WHERE e.status = 'scheduled' ORDER BY e.id")
        ).all()  # fmt: skip
    engine.dispose()

    assert len(history) == JOBS
    by_device: dict[int, list[tuple[object, object]]] = defaultdict(list)
    for device_id, created_at, released_at in history:
        assert released_at is not None
        by_device[device_id].append((created_at, released_at))
    assert len(by_device) == 4
    for device_id, spans in by_device.items():
        for (_, released), (taken, _) in itertools.pairwise(spans):
            assert taken >= released, f"device {device_id} taken at {taken} while held until {released}"
    assert [job_id for job_id, _ in started] == [job_id for job_id, _ in sorted(started, key=lambda r: (-r[1], r[0]))]
