"""Write locks of the store's transactions: the schema's and one per thread.

SQLite has one writer at a time (``BEGIN IMMEDIATE`` takes the database's write lock), so these
hold only on PostgreSQL, as transaction-scoped advisory locks released at commit or rollback.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

__all__ = ["lock_schema", "lock_thread"]

_LOCK_CLASS = 7_261_300
"""First key of PostgreSQL advisory locks taken here (second key: 0 for DDL, else a thread)."""


def _pg_lock(conn: Connection, key: str | None) -> None:
    """Serialize PostgreSQL writers on one key until commit (SQLite: BEGIN IMMEDIATE does it)."""
    if conn.dialect.name != "postgresql":
        return
    if key is None:
        conn.execute(text("SELECT pg_advisory_xact_lock(:cls, 0)"), {"cls": _LOCK_CLASS})
    else:
        lock = text("SELECT pg_advisory_xact_lock(:cls, hashtext(:key))")
        conn.execute(lock, {"cls": _LOCK_CLASS, "key": key})


def lock_schema(conn: Connection) -> None:
    """Hold the schema lock until the transaction ends (SQLite: its write transaction does)."""
    _pg_lock(conn, None)


def lock_thread(conn: Connection, thread_id: str) -> None:
    """Hold the thread's write lock until the transaction ends (SQLite: its write lock does).

    One key per thread id, whatever the namespace: a deletion in every namespace and a write
    in one namespace then exclude each other, so a generation read under it stays true.
    """
    _pg_lock(conn, f"thread/{thread_id}")
