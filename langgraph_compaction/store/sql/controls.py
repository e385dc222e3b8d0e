"""What people and agents ask of a thread: the control version, compaction requests, pins.

The control version and the pending request live on the thread's ``compaction_threads`` row,
so :func:`thread_controls`, which runs on every model call of a thread, is one lookup by
primary key. Pins are rows of ``compaction_pins``, one per message id. Every write here
runs in a write transaction under the thread's lock (``lock_thread``), so a request is
consumed exactly once, however many processes race for it.

Like ``store.sql.summaries``, every SQL operation is a plain function over a sync ``Connection``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, select, update

from langgraph_compaction.store.db.locks import lock_thread
from langgraph_compaction.store.db.storable_text import storable
from langgraph_compaction.store.records import CompactionRequest, ThreadControls, message_ids
from langgraph_compaction.store.sql.summaries import (
    ALL_NAMESPACES,
    dialect_insert,
    generations,
    pins,
    threads,
)

__all__ = [
    "CONTROLS",
    "bump_controls",
    "check_instruction",
    "check_thread_id",
    "consume_request",
    "controls_from_row",
    "hold_request",
    "pending_request",
    "pin_ids",
    "pin_messages",
    "pinned_messages",
    "request_compaction",
    "thread_controls",
    "unpin_messages",
]

_GENERATION_SHIFT = 32
"""The control version carries the thread's deletion generation above these bits: the
counter starts again at 0 when a deletion removes the thread's row, and a process that
held, say, version 3 from before the deletion must not take a new version 3 for the same."""

_GENERATION = (
    select(func.coalesce(func.sum(generations.c.generation), 0))
    .where(
        generations.c.thread_id == bindparam("thread_id"),
        generations.c.namespace.in_([bindparam("namespace"), ALL_NAMESPACES]),
    )
    .scalar_subquery()
)
_THREAD_ROW = (
    threads.c.thread_id == bindparam("thread_id"),
    threads.c.namespace == bindparam("namespace"),
)
# Built once with bound parameters: one statement, four lookups by primary key, whether
# or not the thread has a row (most threads never have one). ``store.db.control_reader`` runs it on
# every model call, compiled once.
CONTROLS = select(
    select(threads.c.controls).where(*_THREAD_ROW).scalar_subquery(),
    select(threads.c.requested_at.is_not(None)).where(*_THREAD_ROW).scalar_subquery(),
    _GENERATION,
    select(threads.c.calibration).where(*_THREAD_ROW).scalar_subquery(),
)


def check_thread_id(thread_id: object) -> str:
    """The thread id, if it is a non-empty str.

    Raises:
        ValueError: it is not.
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError(f"thread_id must be a non-empty str, got {thread_id!r}")
    return thread_id


def check_instruction(instruction: object) -> str | None:
    """The instruction as stored: None for None or blank text.

    Raises:
        ValueError: it is neither None nor a str.
    """
    if instruction is None:
        return None
    if not isinstance(instruction, str):
        raise ValueError(f"instruction must be a str or None, got {instruction!r}")
    return storable(instruction.strip()) or None


def pin_ids(ids: Sequence[str]) -> tuple[str, ...]:
    """The message ids as stored, each once, in order.

    Raises:
        ValueError: ``ids`` is one string, or an id is not a non-empty str.
    """
    if isinstance(ids, str):
        raise ValueError("message_ids must be a sequence of ids, not one string")
    for message_id in ids:
        if not isinstance(message_id, str) or not message_id:
            raise ValueError(f"message_ids holds {message_id!r}; pass non-empty str ids")
    return tuple(dict.fromkeys(message_ids(ids)))


def thread_controls(conn: Connection, thread_id: str, namespace: str) -> ThreadControls:
    """The thread's control version and whether a request is pending: one statement."""
    params = {"thread_id": thread_id, "namespace": namespace}
    return controls_from_row(tuple(conn.execute(CONTROLS, params).one()))


def controls_from_row(row: Sequence[Any]) -> ThreadControls:
    """The controls of :data:`CONTROLS`' row, as the engine or a raw cursor returns it."""
    controls, requested, generation, calibration = row
    version = (int(generation) << _GENERATION_SHIFT) + (controls or 0)
    return ThreadControls(version, bool(requested), calibration)


def bump_controls(conn: Connection, thread_id: str, namespace: str) -> None:
    """Raise the thread's control version by one, creating its row if needed."""
    now = datetime.now(UTC)
    stmt = dialect_insert(conn, threads).values(
        thread_id=thread_id, namespace=namespace, consecutive_failures=0, controls=1, updated_at=now
    )
    conn.execute(
        stmt.on_conflict_do_update(
            index_elements=[threads.c.thread_id, threads.c.namespace],
            set_={"controls": threads.c.controls + 1, "updated_at": now},
        )
    )


def request_compaction(
    conn: Connection, thread_id: str, namespace: str, instruction: str | None
) -> None:
    """File a request, or join ``instruction`` to the one pending; bump the control version."""
    lock_thread(conn, thread_id)
    bump_controls(conn, thread_id, namespace)
    where = (threads.c.thread_id == thread_id, threads.c.namespace == namespace)
    row = conn.execute(select(threads.c.requested_at, threads.c.request_instruction).where(*where))
    requested_at, pending = row.one()
    if requested_at is None:
        requested_at, pending = datetime.now(UTC), None
    joined = "\n\n".join(text for text in (pending, instruction) if text) or None
    conn.execute(
        update(threads).where(*where).values(requested_at=requested_at, request_instruction=joined)
    )


def pending_request(conn: Connection, thread_id: str, namespace: str) -> CompactionRequest | None:
    """The thread's pending request, left pending: it is consumed with what it asked for."""
    where = (
        threads.c.thread_id == thread_id,
        threads.c.namespace == namespace,
        threads.c.requested_at.is_not(None),
    )
    row = conn.execute(select(threads.c.requested_at, threads.c.request_instruction).where(*where))
    found = row.first()
    if found is None:
        return None
    return CompactionRequest(instruction=found.request_instruction, requested_at=found.requested_at)


def consume_request(
    conn: Connection, thread_id: str, namespace: str, request: CompactionRequest
) -> bool:
    """Clear the thread's request if it is still ``request``, in the caller's write
    transaction (the one that stores its summary, or answers its review).

    A request joined since (another instruction) is a new one: it stays for the next call.
    """
    lock_thread(conn, thread_id)
    instruction = threads.c.request_instruction
    where = (
        threads.c.thread_id == thread_id,
        threads.c.namespace == namespace,
        threads.c.requested_at == request.requested_at,
        instruction.is_(None)
        if request.instruction is None
        else instruction == request.instruction,
    )
    cleared = conn.execute(
        update(threads).where(*where).values(requested_at=None, request_instruction=None)
    )
    return cleared.rowcount == 1


def hold_request(conn: Connection, thread_id: str, namespace: str, instruction: str | None) -> None:
    """Keep a forced call's pending review findable: file a request with the call's
    instruction unless one is pending already (the resumed run, forced by it, finds the draft)."""
    lock_thread(conn, thread_id)
    if pending_request(conn, thread_id, namespace) is None:
        request_compaction(conn, thread_id, namespace, instruction)


def pin_messages(conn: Connection, thread_id: str, namespace: str, ids: tuple[str, ...]) -> None:
    """Pin the ids not pinned yet; bump the control version when one was new."""
    if not ids:
        return
    lock_thread(conn, thread_id)
    now = datetime.now(UTC)
    rows = [
        {"thread_id": thread_id, "namespace": namespace, "message_id": i, "pinned_at": now}
        for i in ids
    ]
    key = [pins.c.thread_id, pins.c.namespace, pins.c.message_id]
    # RETURNING, not rowcount: psycopg reports -1 for a multi-row INSERT ... ON CONFLICT.
    insert = dialect_insert(conn, pins).values(rows).on_conflict_do_nothing(index_elements=key)
    if conn.execute(insert.returning(pins.c.message_id)).first() is not None:
        bump_controls(conn, thread_id, namespace)


def unpin_messages(conn: Connection, thread_id: str, namespace: str, ids: tuple[str, ...]) -> None:
    """Unpin the ids; bump the control version when one was pinned."""
    if not ids:
        return
    lock_thread(conn, thread_id)
    removed = conn.execute(
        delete(pins)
        .where(
            pins.c.thread_id == thread_id,
            pins.c.namespace == namespace,
            pins.c.message_id.in_(ids),
        )
        .returning(pins.c.message_id)
    )
    if removed.first() is not None:
        bump_controls(conn, thread_id, namespace)


_PINNED = select(pins.c.message_id).where(
    pins.c.thread_id == bindparam("thread_id"), pins.c.namespace == bindparam("namespace")
)


def pinned_messages(conn: Connection, thread_id: str, namespace: str) -> frozenset[str]:
    """The ids of the thread's pinned messages."""
    params = {"thread_id": thread_id, "namespace": namespace}
    return frozenset(conn.scalars(_PINNED, params))
