"""Write locks of the store's transactions, and the bound on the process's own locks.

SQLite has one writer at a time (``BEGIN IMMEDIATE`` takes the database's write lock), so the
schema's and the threads' locks hold only on PostgreSQL, as transaction-scoped advisory locks
released at commit or rollback; waiting for one is bounded by the session's ``lock_timeout``.

A lock of this process held around a statement is held as long as the statement hangs, so it
is taken with a bound (DESIGN 6.9): :class:`BoundedLock` and :class:`AsyncBoundedLock` give up
after ``busy_timeout`` with SummaryStoreError, which the pipeline treats as an outage. Locks
held only for a few operations on fields (never around I/O) are plain locks.
"""

from __future__ import annotations

import asyncio
import threading

from sqlalchemy import Connection, text

from langgraph_compaction.errors import SummaryStoreError

__all__ = ["AsyncBoundedLock", "BoundedLock", "lock_schema", "lock_thread"]

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


def _waited_too_long(what: str, timeout: float) -> SummaryStoreError:
    return SummaryStoreError(
        f"{what} stayed taken for over {timeout:g} s (busy_timeout): a statement of this "
        "process under it hangs; the next call tries again"
    )


class BoundedLock:
    """A thread lock whose ``with`` waits at most ``timeout`` seconds, then raises.

    Raises:
        SummaryStoreError: on entering, when the lock did not come within ``timeout``.
    """

    def __init__(self, timeout: float, what: str, lock: threading.Lock | None = None) -> None:
        self.timeout = timeout
        self.what = what
        """What the lock guards, for the error (``"the control reader"``)."""
        self.lock = threading.Lock() if lock is None else lock

    def acquire(self) -> bool:
        """Take the lock, waiting at most ``timeout``; whether it came."""
        return self.lock.acquire(timeout=self.timeout)

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> None:
        if not self.acquire():
            raise _waited_too_long(self.what, self.timeout)

    def __exit__(self, *_exc: object) -> None:
        self.lock.release()


class AsyncBoundedLock:
    """:class:`BoundedLock` for the tasks of one event loop (``async with``)."""

    def __init__(self, timeout: float, what: str) -> None:
        self.timeout = timeout
        self.what = what
        self.lock = asyncio.Lock()

    async def __aenter__(self) -> None:
        try:
            async with asyncio.timeout(self.timeout):
                await self.lock.acquire()
        except TimeoutError:
            raise _waited_too_long(self.what, self.timeout) from None

    async def __aexit__(self, *_exc: object) -> None:
        self.lock.release()
