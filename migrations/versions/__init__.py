"""One file per schema version, applied in order by Alembic."""
