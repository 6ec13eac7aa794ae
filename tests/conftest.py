"""Shared fixtures: real PostgreSQL and Redis when their URLs are set, a fresh database per test.

SFUMATO_TEST_POSTGRES_URL / SFUMATO_TEST_REDIS_URL unset (a laptop): those tests skip with a
one-line reason. Set (CI): they run, and an unreachable service fails them loudly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from server.db import make_engine, scratch_postgres_database
from server.models import Host, Job, utcnow
from server.services.hosts import DeviceInfo, register_host

if TYPE_CHECKING:
    from client_harness import TinyJobs
    from platform_harness import Platform

POSTGRES_ENV = "SFUMATO_TEST_POSTGRES_URL"
REDIS_ENV = "SFUMATO_TEST_REDIS_URL"


@pytest.fixture(scope="session")
def postgres_server_url() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"{POSTGRES_ENV} is not set")
    return url


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get(REDIS_ENV)
    if not url:
        pytest.skip(f"{REDIS_ENV} is not set")
    import redis

    url = worker_redis_database(url)
    redis.Redis.from_url(url, socket_connect_timeout=5).ping()  # unreachable → loud failure
    return url


def worker_redis_database(url: str) -> str:
    """Under pytest-xdist each worker gets its own Redis database number (the configured one plus the worker's
    index), so two clusters' Celery queues never meet."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return url
    parts = urlsplit(url)
    database = int(parts.path.strip("/") or 0) + int(worker.removeprefix("gw"))
    return urlunsplit(parts._replace(path=f"/{database}"))


LIVE_PLATFORM_FILES = (
    "test_prometheus.py",
    "test_cli_live.py",
    "test_experiment_cli_live.py",
    "test_client_live.py",
    "test_playground_live.py",
)
CLUSTER_FOLDERS = ("tests/faults/", "tests/integration/")


def xdist_group_of(test_file: str) -> str:
    """The files sharing the session's live platform run on one worker, and so do the tests that start whole
    clusters (one at a time: two at once would starve each other's heartbeats on a 2-core host); any other file
    is a group of its own, so its module fixtures are built once. ``test_file`` is relative to the rootdir."""
    if test_file.rsplit("/", 1)[-1] in LIVE_PLATFORM_FILES:
        return "live_platform"
    if test_file.startswith(CLUSTER_FOLDERS):
        return "clusters"
    return test_file


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`make test` (--dist loadgroup) sends each group of xdist_group_of to one worker. Our own scheduler: xdist's
    loadgroup reads the xdist_group mark through a node id suffix that pytest 9 no longer keeps."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class TestGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group_of(nodeid.split("::", 1)[0])

    return TestGroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The clusters' group, the longest, is collected first so that a worker starts on it at once."""
    items.sort(key=lambda item: xdist_group_of(item.nodeid.split("::", 1)[0]) != "clusters")


@pytest.fixture
def postgres_url(postgres_server_url: str) -> Iterator[str]:
    """A new, empty PostgreSQL database for one test, dropped afterwards."""
    with scratch_postgres_database(postgres_server_url, "sfumato_test") as url:
        yield url


@pytest.fixture(scope="session")
def migrated_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Each database migrated once per session: a SQLite file, and (when configured) a PostgreSQL database
    that migrated_database_url copies. Copying takes milliseconds; migrating took about a second a test."""
    from server.migrate import upgrade

    sqlite = tmp_path_factory.mktemp("migrated") / "template.db"
    upgrade(f"sqlite:///{sqlite}")
    templates = {"sqlite": str(sqlite)}
    server_url = os.environ.get(POSTGRES_ENV)
    if not server_url:
        yield templates
        return
    with scratch_postgres_database(server_url, "sfumato_template") as url:
        upgrade(url)
        yield templates | {"postgres": str(make_url(url).database)}


@pytest.fixture
def migrated_sqlite_url(tmp_path: Path, migrated_templates: dict[str, str]) -> str:
    path = tmp_path / "sfumato.db"
    shutil.copyfile(migrated_templates["sqlite"], path)
    return f"sqlite:///{path}"


@pytest.fixture(params=["sqlite", "postgres"])
def migrated_database_url(request: pytest.FixtureRequest, migrated_templates: dict[str, str]) -> Iterator[str]:
    """Both databases at the latest schema, fresh for each test (database_url, migrated)."""
    if request.param == "sqlite":
        yield request.getfixturevalue("migrated_sqlite_url")
        return
    server_url = request.getfixturevalue("postgres_server_url")
    with scratch_postgres_database(server_url, "sfumato_test", template=migrated_templates["postgres"]) as url:
        yield url


@pytest.fixture
def factory(migrated_database_url: str) -> Iterator[sessionmaker[Session]]:
    """Sessions on a migrated database (both kinds): for tests that build hosts and jobs with add_host / add_job."""
    engine = make_engine(migrated_database_url)
    yield sessionmaker(bind=engine, expire_on_commit=False)
    engine.dispose()


@pytest.fixture
def add_host(factory: sessionmaker[Session]) -> Callable[..., Host]:
    def add(
        name: str,
        devices: int = 2,
        device_type: str = "cpu",
        model: str = "Test CPU",
        heartbeat_age_s: float = 0.0,
    ) -> Host:
        with factory.begin() as session:
            infos = [DeviceInfo(i, device_type, model, None) for i in range(devices)]
            host = register_host(session, name, infos, address="127.0.0.1")
            host.last_heartbeat_at = utcnow() - timedelta(seconds=heartbeat_age_s)
            return host

    return add


@pytest.fixture
def add_job(factory: sessionmaker[Session]) -> Callable[..., Job]:
    def add(
        devices: int = 1,
        device_type: str = "cpu",
        priority: int = 0,
        nodes: int = 1,
        gpu_model: str | None = None,
        pools: dict[str, dict[str, Any]] | None = None,
        exclusive: bool = False,
        **fields: Any,
    ) -> Job:
        """`pools` ({"rollout": {"devices": 1, "gpu_model": ...}, "trainer": {...}}) makes a DigenRL pool job."""
        resources: dict[str, Any] = {"devices": devices, "device_type": device_type, "nodes": nodes}
        if gpu_model is not None:
            resources["gpu_model"] = gpu_model
        if exclusive:
            resources["exclusive"] = True
        if pools is not None:
            devices = resources["devices"] = sum(pool["devices"] for pool in pools.values())
            resources["pools"] = pools
        with factory.begin() as session:
            job = Job(
                name=fields.pop("name", "job"),
                spec={"name": "job", "resources": resources},
                algorithm="flow_grpo",
                executor="native",
                model_family="sd3",
                device_type=device_type,
                devices=devices,
                nodes=nodes,
                priority=priority,
                **fields,
            )
            session.add(job)
            session.flush()
            return job

    return add


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trainer's built-in tiny model, built once per session (in a process of its own)."""
    target = tmp_path_factory.mktemp("tiny") / "builtin-tiny-sd3"
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"from pathlib import Path; from trainer.models.builtin_tiny import ensure_builtin_tiny; "
            f"ensure_builtin_tiny(Path({str(target)!r}))",
        ],
        check=True,
        timeout=300,
    )
    return target


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sfumato.db'}"


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Both databases: SQLite always, PostgreSQL when its URL is set."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sfumato.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture(scope="session")
def live_platform(
    postgres_server_url: str, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Platform]:
    """Server, Celery worker (3 CPU slots) and scheduler on a fresh PostgreSQL database, shared by the
    client, CLI and Prometheus tests."""
    from platform_harness import launch_platform

    with scratch_postgres_database(postgres_server_url, "sfumato_test") as url:
        platform = launch_platform(tmp_path_factory.mktemp("live"), url, "", tiny_model)
        try:
            yield platform
        finally:
            platform.stop()


@pytest.fixture(scope="session")
def tiny_jobs(live_platform: Platform, tmp_path_factory: pytest.TempPathFactory) -> TinyJobs:
    """Two finished tiny jobs on the live platform: native (by the client) and lean_retain (by the CLI)."""
    from client_harness import run_tiny_jobs

    return run_tiny_jobs(live_platform, tmp_path_factory.mktemp("tiny-jobs"))
