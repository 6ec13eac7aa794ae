"""The schema exists only through Alembic, so the migrations must match the models on both databases."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from server.migrate import downgrade, upgrade
from server.models import Base


def _schema_diff(url: str) -> list[object]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_upgrade_creates_a_schema_identical_to_the_models(database_url: str) -> None:
    upgrade(database_url)
    assert _schema_diff(database_url) == []


def test_downgrade_to_base_removes_every_table(database_url: str) -> None:
    upgrade(database_url)
    downgrade(database_url, "base")
    assert _tables(database_url) == set()


def test_upgrade_after_downgrade_restores_the_same_schema(database_url: str) -> None:
    upgrade(database_url)
    downgrade(database_url, "base")
    upgrade(database_url)
    assert _schema_diff(database_url) == []
