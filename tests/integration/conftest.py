"""The `start_platform` fixture: a whole platform in real processes, stopped after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from platform_harness import Platform, launch_platform, launch_up


@pytest.fixture
def start_platform(tmp_path: Path, tiny_model: Path) -> Iterator[Callable[[str, str], Platform]]:
    """Start a platform on a database URL and a broker URL (empty: the embedded SQLite broker)."""
    started: list[Platform] = []

    def start(database_url: str, broker_url: str) -> Platform:
        platform = launch_platform(tmp_path, database_url, broker_url, tiny_model)
        started.append(platform)
        return platform

    yield start
    for platform in started:
        platform.stop()


@pytest.fixture
def sfumato_up(tmp_path: Path, tiny_model: Path) -> Iterator[Platform]:
    """`sfumato up` on the embedded defaults (SQLite database, SQLite broker) under a temporary home."""
    platform = launch_up(tmp_path, tiny_model)
    yield platform
    platform.stop()
