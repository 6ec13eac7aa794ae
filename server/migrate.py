"""Run Alembic from code, so `sfumato db upgrade`, the embedded platform and the tests migrate the same way."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import make_url

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config that needs no alembic.ini; no `url` means the settings' database."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["url"] = url
    return config


def ensure_sqlite_folder(url: str) -> None:
    """SQLite creates the file but not its folder; a fresh SFUMATO_HOME has neither."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)


def upgrade(url: str | None = None, revision: str = "head") -> None:
    """Bring the database at `url` to `revision` (creating it from nothing when empty)."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str | None, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)
