"""A database that went away under a running store: how the store notices it.

Two ways a store can lose its tables while its engines live on. A SQLite file deleted or
replaced (a restore, a cleanup job) leaves the pooled connections writing to the old file,
which nothing can read any more; so the store remembers the file's device and inode when it
opens it and compares them at the start of every transaction (one ``stat``, a microsecond or
two, the price of never reporting a summary that is not on disk). A PostgreSQL database or
schema dropped and created again leaves the connections working but the tables gone; so an
"undefined table" error (SQLite's "no such table" alike) makes the store build its engine
and schema again and run the operation once more. ``store.database`` does both.

Whoever replaces a SQLite file must remove its ``-wal`` and ``-shm`` with it (or checkpoint
first): SQLite reads the ``-wal`` at a path as part of whatever file is there, in this process
as in any other.
"""

from __future__ import annotations

import os

from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from langgraph_compaction.store.db.engine import is_memory

__all__ = ["FileId", "file_id", "schema_missing", "sqlite_path"]

FileId = tuple[int, int]
"""A file's device and inode: another file at the same path has another."""

_UNDEFINED_TABLE = "42P01"
"""PostgreSQL's SQLSTATE for a relation that does not exist."""


def sqlite_path(url: URL) -> str | None:
    """The absolute path of the SQLite file ``url`` names; None for PostgreSQL or :memory:."""
    if url.get_backend_name() != "sqlite" or is_memory(url):
        return None
    return os.path.abspath(url.database or "")


def file_id(path: str) -> FileId | None:
    """The file's device and inode, or None when no file is there."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def schema_missing(exc: BaseException) -> bool:
    """Whether the error says one of the store's tables does not exist (any more)."""
    if not isinstance(exc, DBAPIError):
        return False
    if getattr(exc.orig, "sqlstate", None) == _UNDEFINED_TABLE:
        return True
    return "no such table: compaction_" in str(exc.orig)
