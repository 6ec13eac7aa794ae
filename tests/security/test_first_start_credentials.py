"""The first start's credentials: two processes starting at once make one admin, one team and one printed token
(issue 34, item 5: the admin-creation race), and the audit log records every credential the start makes."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from server.config import Settings
from server.db import make_engine
from server.models import ApiToken, AuditEvent, Membership, Team, User
from server.services.auth import ensure_admin

PASSWORD = "correct horse battery"


@pytest.fixture
def sessions(migrated_database_url: str) -> Iterator[sessionmaker[Session]]:
    """A migrated database with no admin yet, SQLite and PostgreSQL."""
    engine = make_engine(migrated_database_url)
    yield sessionmaker(bind=engine, expire_on_commit=False)
    engine.dispose()


def _count(sessions: sessionmaker[Session], model: type) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


def test_two_first_starts_at_once_make_one_admin_team_and_token(
    sessions: sessionmaker[Session], migrated_database_url: str
) -> None:
    settings = Settings(database_url=migrated_database_url)
    start = threading.Barrier(2)
    printed: list[str | None] = []

    def first_start() -> None:
        with sessions() as session:
            start.wait()
            printed.append(ensure_admin(session, settings))

    threads = [threading.Thread(target=first_start) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(printed) == 2 and len([token for token in printed if token is not None]) == 1
    assert [_count(sessions, model) for model in (User, Team, Membership, ApiToken)] == [1, 1, 1, 1]


def test_the_first_start_records_the_credentials_it_makes(
    sessions: sessionmaker[Session], migrated_database_url: str
) -> None:
    url = migrated_database_url
    with sessions() as session:
        assert ensure_admin(session, Settings(database_url=url)) is not None
        ensure_admin(session, Settings(database_url=url, admin_token="sfu_from-env", admin_password=PASSWORD))
        events = session.execute(select(AuditEvent.action, AuditEvent.actor_name).order_by(AuditEvent.id)).all()
    assert [tuple(event) for event in events] == [
        ("token.create", "first start"),
        ("token.create", "SFUMATO_ADMIN_TOKEN"),
        ("user.password", "SFUMATO_ADMIN_PASSWORD"),
    ]
