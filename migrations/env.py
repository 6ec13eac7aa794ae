"""Alembic environment: the URL comes from the caller or the Sfumato settings, the schema from server.models."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection

from server.config import get_settings
from server.db import make_engine
from server.migrate import ensure_sqlite_folder
from server.models import Base

config = context.config
if config.config_file_name:  # the `alembic` command line; programs configure their own logging
    fileConfig(config.config_file_name, disable_existing_loggers=False)
target_metadata = Base.metadata


def _configure(connection: Connection | None = None, url: str | None = None) -> None:
    dialect = connection.dialect.name if connection is not None else (url or "").split(":")[0].split("+")[0]
    context.configure(
        connection=connection,
        url=url,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things; batch mode copies the table instead.
        render_as_batch=dialect == "sqlite",
        compare_type=True,
        literal_binds=connection is None,
    )


def _url() -> str:
    return (
        config.attributes.get("url")
        or config.get_main_option("sqlalchemy.url")
        or (get_settings().resolved_database_url())
    )


def run_offline() -> None:
    _configure(url=_url())
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    url = _url()
    ensure_sqlite_folder(url)
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            if connection.dialect.name == "sqlite":
                # Batch mode copies a table and drops the old one; with foreign keys on, that drop cascades into
                # every table that references it (copying `jobs` deleted every metric block). Off while migrating.
                connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
                connection.commit()
            _configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
