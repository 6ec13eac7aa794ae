"""A migrated database (SQLite and PostgreSQL, tests/conftest.py) and builders for hosts and jobs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from server.db import make_engine
from server.models import Host, Job, utcnow
from server.services.hosts import DeviceInfo, register_host


@pytest.fixture
def factory(migrated_database_url: str) -> Iterator[sessionmaker[Session]]:
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
