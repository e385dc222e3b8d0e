"""Alembic migration scripts of the summary store, run by SummaryStore when it opens a database.

Each revision is numbered like the schema version it produces (``0001`` -> 1, ``0002`` -> 2)
and sets ``compaction_meta.schema_version`` to that number, so a release that predates Alembic
still refuses a store it cannot read.
"""
