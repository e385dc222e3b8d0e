"""Per-thread state, deletion generations, and the process-wide count of deletions.

Deletion is final: ``delete_thread`` bumps the thread's generation in the same transaction
as it deletes the rows, under the thread's write lock, and the generation rows outlive it. A
write that carries the generation its caller read (``generation=``) checks it under that
same lock and writes nothing when it changed, so a summary computed before a deletion never
brings the thread back.

Like ``store.sql.summaries``, every SQL operation is a plain function over a sync ``Connection``.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from langgraph_compaction.errors import ThreadDeletedError
from langgraph_compaction.store.db.locks import lock_thread
from langgraph_compaction.store.records import ThreadState
from langgraph_compaction.store.sql.summaries import (
    ALL_NAMESPACES,
    dialect_insert,
    generations,
    leases,
    messages,
    pins,
    reviews,
    summaries,
    threads,
)

__all__ = [
    "DELETIONS",
    "DeletionEpochs",
    "check_generation",
    "current_generation",
    "delete_thread",
    "record_failure",
    "reset_failures",
    "set_calibration",
    "thread_state",
]

_MAX_ERROR_CHARS = 4000
"""A failure message is stored for people to read, not a traceback archive."""


class DeletionEpochs:
    """How many deletions of each thread this process has made, per database.

    Shared by every SummaryStore of the process, keyed by the database's identity, so a
    deletion through one store object invalidates what the pipeline cached through another.
    Reads are two dict lookups and no lock: an int in a dict is read atomically.
    """

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str, str | None], int] = {}
        self._lock = threading.Lock()

    def epoch(self, database: str, thread_id: str, namespace: str) -> int:
        """Deletions of the thread in ``namespace`` or in all namespaces, made here."""
        counts = self._counts
        return counts.get((database, thread_id, namespace), 0) + counts.get(
            (database, thread_id, None), 0
        )

    def bump(self, database: str, thread_id: str, namespace: str | None) -> None:
        """Count one deletion (``namespace=None``: in every namespace)."""
        key = (database, thread_id, namespace)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1


DELETIONS = DeletionEpochs()
"""The process's one registry."""


def current_generation(conn: Connection, thread_id: str, namespace: str) -> int:
    """How many times the thread was deleted in ``namespace`` (its own and all-namespace rows)."""
    stmt = select(func.coalesce(func.sum(generations.c.generation), 0)).where(
        generations.c.thread_id == thread_id,
        generations.c.namespace.in_([namespace, ALL_NAMESPACES]),
    )
    return int(conn.scalar(stmt) or 0)


def check_generation(
    conn: Connection, thread_id: str, namespace: str, expected: int | None
) -> None:
    """Take the thread's write lock and refuse the write if it was deleted since ``expected``.

    Raises:
        ThreadDeletedError: the thread's generation is no longer ``expected``.
    """
    if expected is None:
        return
    lock_thread(conn, thread_id)
    found = current_generation(conn, thread_id, namespace)
    if found != expected:
        raise ThreadDeletedError(
            f"thread {thread_id!r} in namespace {namespace!r} was deleted after it was read "
            f"(generation {expected}, now {found}); nothing was written: read thread_state() "
            "again to start over"
        )


def thread_state(conn: Connection, thread_id: str, namespace: str) -> ThreadState:
    """The thread's failure count, calibration and generation (zeros for a thread never seen)."""
    stmt = select(threads).where(threads.c.thread_id == thread_id, threads.c.namespace == namespace)
    row = conn.execute(stmt).mappings().first()
    generation = current_generation(conn, thread_id, namespace)
    if row is None:
        return ThreadState(thread_id, namespace, 0, None, None, None, generation)
    return ThreadState(
        thread_id=thread_id,
        namespace=namespace,
        consecutive_failures=row["consecutive_failures"],
        messages_at_last_failure=row["messages_at_last_failure"],
        calibration=row["calibration"],
        last_error=row["last_error"],
        generation=generation,
    )


def _upsert_thread(
    conn: Connection,
    thread_id: str,
    namespace: str,
    inserted: dict[str, Any],
    updated: dict[str, Any],
) -> None:
    """Insert the thread's row with ``inserted``, or apply ``updated`` to the existing row."""
    now = datetime.now(UTC)
    stmt = dialect_insert(conn, threads).values(
        thread_id=thread_id, namespace=namespace, updated_at=now, **inserted
    )
    key = [threads.c.thread_id, threads.c.namespace]
    conn.execute(
        stmt.on_conflict_do_update(index_elements=key, set_={**updated, "updated_at": now})
    )


def record_failure(
    conn: Connection,
    thread_id: str,
    namespace: str,
    message_count: int,
    error: str,
    generation: int | None = None,
) -> ThreadState:
    """Count one more consecutive failure and return the new state."""
    check_generation(conn, thread_id, namespace, generation)
    fields = {
        "messages_at_last_failure": message_count,
        "last_error": error[:_MAX_ERROR_CHARS],
        "last_failure_at": datetime.now(UTC),
    }
    inserted = {**fields, "consecutive_failures": 1}
    updated = {**fields, "consecutive_failures": threads.c.consecutive_failures + 1}
    _upsert_thread(conn, thread_id, namespace, inserted, updated)
    return thread_state(conn, thread_id, namespace)


def reset_failures(
    conn: Connection, thread_id: str, namespace: str, generation: int | None = None
) -> None:
    """Clear the failure count after a success; the last error text stays for inspection."""
    check_generation(conn, thread_id, namespace, generation)
    conn.execute(
        update(threads)
        .where(threads.c.thread_id == thread_id, threads.c.namespace == namespace)
        .values(consecutive_failures=0, messages_at_last_failure=None, updated_at=datetime.now(UTC))
    )


def set_calibration(
    conn: Connection,
    thread_id: str,
    namespace: str,
    ratio: float,
    generation: int | None = None,
) -> None:
    """Store the thread's token calibration ratio (checked by the caller)."""
    check_generation(conn, thread_id, namespace, generation)
    _upsert_thread(conn, thread_id, namespace, {"calibration": ratio}, {"calibration": ratio})


def delete_thread(conn: Connection, thread_id: str, namespace: str | None) -> int:
    """Delete the thread's summaries, indexed messages, state (with its control version and
    pending request), pins, reviews and leases; bump its generation.

    ``namespace=None`` deletes in every namespace and bumps the all-namespaces generation,
    which also covers namespaces that hold no row yet. Returns how many summaries went.
    """
    lock_thread(conn, thread_id)
    scope = ALL_NAMESPACES if namespace is None else namespace
    now = datetime.now(UTC)
    bump = dialect_insert(conn, generations).values(
        thread_id=thread_id, namespace=scope, generation=1, deleted_at=now
    )
    conn.execute(
        bump.on_conflict_do_update(
            index_elements=[generations.c.thread_id, generations.c.namespace],
            set_={"generation": generations.c.generation + 1, "deleted_at": now},
        )
    )
    deleted = 0
    for table in (leases, threads, messages, pins, reviews, summaries):  # summaries last
        where = [table.c.thread_id == thread_id]
        if namespace is not None:
            where.append(table.c.namespace == namespace)
        deleted = conn.execute(delete(table).where(*where)).rowcount
    return deleted
