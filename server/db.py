"""Engine and sessions. SQLite gets WAL and a busy timeout so several processes can share it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from server.config import get_settings

# Connections per process, kept open so no request opens one. The server runs one process per core
# (`sfumato server --workers`), so 16 trainers posting at once on 2 cores need about 8 per process; the
# overflow covers one process taking more than its share. 2 x (10 + 10) stays well below PostgreSQL's 100.
POOL_SIZE = 10
POOL_OVERFLOW = 10


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"timeout": 30, "check_same_thread": False},
            pool_size=POOL_SIZE,
            max_overflow=POOL_OVERFLOW,
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(url, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW, pool_pre_ping=True)


@lru_cache
def get_engine() -> Engine:
    settings = get_settings()
    if settings.database_url.startswith("sqlite") or not settings.database_url:
        settings.home.mkdir(parents=True, exist_ok=True)
    return make_engine(settings.resolved_database_url())


@lru_cache
def get_sessionmaker() -> sessionmaker[Session]:
    return sessionmaker(bind=get_engine(), expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session] | None = None) -> Iterator[Session]:
    """The unit of work, for every writer outside a request (scheduler, worker, CLI): commit on success, roll
    back on error. On SQLite the transaction is `BEGIN IMMEDIATE`, which takes the database's write lock from the
    first statement, so a read-then-write never fails on a stale snapshot while other processes write too.
    `factory` defaults to the configured database's."""
    session = (factory or get_sessionmaker())()
    try:
        if session.get_bind().dialect.name == "sqlite":
            session.execute(text("BEGIN IMMEDIATE"))
        yield session
        session.commit()
    except Exception:
        session.rollback()
        raise
    finally:
        session.close()


@contextmanager
def scratch_postgres_database(
    server_url: str, prefix: str = "sfumato_scratch", template: str | None = None
) -> Iterator[str]:
    """A new PostgreSQL database on `server_url`, dropped afterwards: for tests and benchmarks. Empty, or a
    copy of the database named `template` (which nobody may be connected to)."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
