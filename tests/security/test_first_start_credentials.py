"""The first start's credentials: two processes starting at once make one admin, one team and one printed token
(issue 34, item 5: the admin-creation race), the audit log records every credential the start makes, and each
start applies SFUMATO_ADMIN_TOKEN and SFUMATO_ADMIN_PASSWORD once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import event, func, select
from sqlalchemy.orm import Session, sessionmaker

from server.config import Settings
from server.db import make_engine
from server.models import ApiToken, AuditEvent, Membership, Team, User
from server.services.auth import authenticate_password, ensure_admin

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
        admin_id = session.scalar(select(User.id).where(User.username == "admin"))
        events = session.execute(
            select(AuditEvent.action, AuditEvent.actor_name, AuditEvent.subject_user_id, AuditEvent.detail).order_by(
                AuditEvent.id
            )
        ).all()
    assert [tuple(event) for event in events] == [
        ("token.create", "first start", admin_id, "'bootstrap', printed once"),
        ("token.create", "SFUMATO_ADMIN_TOKEN", admin_id, "accepted from the environment"),
        ("user.password", "SFUMATO_ADMIN_PASSWORD", admin_id, "set from the environment at start"),
    ]


def test_the_first_start_names_its_tokens_after_where_they_came_from(
    sessions: sessionmaker[Session], migrated_database_url: str
) -> None:
    with sessions() as session:
        ensure_admin(session, Settings(database_url=migrated_database_url))
        ensure_admin(session, Settings(database_url=migrated_database_url, admin_token="sfu_from-env"))
        admin_id = session.scalar(select(User.id).where(User.username == "admin"))
        tokens = session.execute(select(ApiToken.name, ApiToken.user_id).order_by(ApiToken.id)).all()
    assert [tuple(token) for token in tokens] == [("bootstrap", admin_id), ("SFUMATO_ADMIN_TOKEN", admin_id)]


def test_a_start_with_an_admin_token_already_stored_adds_no_token_and_no_event(
    sessions: sessionmaker[Session], migrated_database_url: str
) -> None:
    settings = Settings(database_url=migrated_database_url, admin_token="sfu_from-env")
    for _ in range(2):
        with sessions() as session:
            assert ensure_admin(session, settings) is None
    assert (_count(sessions, ApiToken), _count(sessions, AuditEvent)) == (1, 1)


def test_a_start_with_its_admin_token_already_stored_still_sets_its_admin_password(
    sessions: sessionmaker[Session], migrated_database_url: str
) -> None:
    """The token is looked up, not inserted again: a second insert would fail the start's one transaction."""
    url = migrated_database_url
    with sessions() as session:
        ensure_admin(session, Settings(database_url=url, admin_token="sfu_from-env"))
    with sessions() as session:
        ensure_admin(session, Settings(database_url=url, admin_token="sfu_from-env", admin_password=PASSWORD))
    assert _logs_in(sessions, PASSWORD)


def test_the_first_start_joins_the_default_team_that_exists_and_no_other(
    sessions: sessionmaker[Session], migrated_database_url: str
) -> None:
    with sessions() as session:
        session.add_all([Team(name="lab"), Team(name="default")])
        session.commit()
        assert ensure_admin(session, Settings(database_url=migrated_database_url)) is not None
        memberships = session.execute(
            select(Team.name, Membership.role).join(Team, Team.id == Membership.team_id)
        ).all()
    assert [tuple(membership) for membership in memberships] == [("default", "admin")]
    assert _count(sessions, Team) == 2


def _generation(sessions: sessionmaker[Session]) -> int | None:
    with sessions() as session:
        return session.scalar(select(User.session_generation).where(User.username == "admin"))


def _logs_in(sessions: sessionmaker[Session], password: str) -> bool:
    with sessions() as session:
        return authenticate_password(session, "admin", password) is not None


def test_an_admin_password_from_the_environment_is_set_once_and_a_new_one_ends_the_admin_s_sessions(
    sessions: sessionmaker[Session], migrated_database_url: str
) -> None:
    def start(password: str) -> None:
        with sessions() as session:
            ensure_admin(session, Settings(database_url=migrated_database_url, admin_password=password))

    start(PASSWORD)
    assert _logs_in(sessions, PASSWORD) and _generation(sessions) == 1
    start(PASSWORD)  # the same password at the next start: nothing changes, no session ends
    assert _generation(sessions) == 1 and _count(sessions, AuditEvent) == 2
    start("another horse battery")
    assert _generation(sessions) == 2 and _count(sessions, AuditEvent) == 3
    assert _logs_in(sessions, "another horse battery") and not _logs_in(sessions, PASSWORD)


def test_a_start_that_loses_the_admin_race_keeps_the_other_start_s_admin_and_says_so(
    sessions: sessionmaker[Session], migrated_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The other start commits its admin after this one looked for it and before this one writes its own."""
    with sessions() as session:
        connection = session.connection()

        @event.listens_for(connection, "after_cursor_execute", once=True)
        def other_start_commits(*_: object) -> None:
            with sessions() as other:
                other.add(User(username="admin", is_admin=True))
                other.commit()

        with caplog.at_level(logging.INFO, logger="server.services.auth"):
            assert ensure_admin(session, Settings(database_url=migrated_database_url)) is None
    assert "another process created the admin at the same time; keeping theirs" in caplog.messages
    assert [_count(sessions, model) for model in (User, Team, Membership, ApiToken)] == [1, 0, 0, 0]
