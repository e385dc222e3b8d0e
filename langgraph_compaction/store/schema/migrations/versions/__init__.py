"""One module per schema version; Alembic loads them by file, never by import."""
