"""SummaryStore's steering methods: compaction requests, pins, and the control version.

A mixin, like ``_leasing``, so that the store's module stays one screenful per concern; it
needs only the store's ``_db``. The SQL is in ``_controls``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import Connection

from langgraph_compaction.store.database import Database
from langgraph_compaction.store.records import CompactionRequest, ThreadControls
from langgraph_compaction.store.sql import controls as control_sql
from langgraph_compaction.store.sql.controls import check_instruction, check_thread_id, pin_ids

__all__ = ["ControlMethods"]

_UNSTEERED = ThreadControls(0, False)


class ControlMethods:
    """``request_compaction``, ``take_compaction_request``, ``thread_controls``, the pins,
    and their async twins."""

    _db: Database

    def request_compaction(
        self, thread_id: str, *, namespace: str = "default", instruction: str | None = None
    ) -> None:
        """Ask that the thread's next compaction call compact as if forced, then forget it.

        A second request before that call keeps one request, its instruction both texts
        joined by a blank line (blank ones left out). Bumps the thread's control version.

        Raises:
            ValueError: ``thread_id`` is not a non-empty str, or ``instruction`` not a str.
        """
        self._db.run(_request(thread_id, namespace, instruction), write=True)

    async def arequest_compaction(
        self, thread_id: str, *, namespace: str = "default", instruction: str | None = None
    ) -> None:
        """Async :meth:`request_compaction`."""
        await self._db.arun(_request(thread_id, namespace, instruction), write=True)

    def take_compaction_request(self, thread_id: str, namespace: str) -> CompactionRequest | None:
        """Consume the thread's pending request: exactly one caller gets it, whatever the
        processes racing for it; None when none is pending."""
        return self._db.run(_take(thread_id, namespace), write=True)

    async def atake_compaction_request(
        self, thread_id: str, namespace: str
    ) -> CompactionRequest | None:
        """Async :meth:`take_compaction_request`."""
        return await self._db.arun(_take(thread_id, namespace), write=True)

    def thread_controls(self, thread_id: str, namespace: str) -> ThreadControls:
        """The thread's control version and whether a request is pending, in one statement.

        ``ThreadControls(0, False)`` for a thread never steered nor deleted. The version
        changes with every request, pin, unpin, edit, revoke and deletion of the thread. It
        runs before every model call, also those that pass through: on a SQLite file that does
        not exist yet it creates nothing (nobody can have steered a thread there).
        """
        if self._db.not_created():
            return _UNSTEERED
        return self._db.read_controls(thread_id, namespace)

    async def athread_controls(self, thread_id: str, namespace: str) -> ThreadControls:
        """Async :meth:`thread_controls`."""
        if self._db.not_created():
            return _UNSTEERED
        return await self._db.aread_controls(thread_id, namespace)

    def pin_messages(
        self, thread_id: str, message_ids: Sequence[str], *, namespace: str = "default"
    ) -> None:
        """Pin messages by id: compaction never evicts nor prunes them. Pinning twice is a
        no-op; a new pin bumps the thread's control version.

        Raises:
            ValueError: ``thread_id`` empty, ``message_ids`` one string, or an id not a
                non-empty str.
        """
        self._db.run(_pins(control_sql.pin_messages, thread_id, message_ids, namespace), write=True)

    async def apin_messages(
        self, thread_id: str, message_ids: Sequence[str], *, namespace: str = "default"
    ) -> None:
        """Async :meth:`pin_messages`."""
        op = _pins(control_sql.pin_messages, thread_id, message_ids, namespace)
        await self._db.arun(op, write=True)

    def unpin_messages(
        self, thread_id: str, message_ids: Sequence[str], *, namespace: str = "default"
    ) -> None:
        """Unpin messages by id (ids not pinned are ignored); bumps the control version when
        one was pinned.

        Raises:
            ValueError: as :meth:`pin_messages`.
        """
        op = _pins(control_sql.unpin_messages, thread_id, message_ids, namespace)
        self._db.run(op, write=True)

    async def aunpin_messages(
        self, thread_id: str, message_ids: Sequence[str], *, namespace: str = "default"
    ) -> None:
        """Async :meth:`unpin_messages`."""
        op = _pins(control_sql.unpin_messages, thread_id, message_ids, namespace)
        await self._db.arun(op, write=True)

    def pinned_messages(self, thread_id: str, *, namespace: str = "default") -> frozenset[str]:
        """The ids of the thread's pinned messages."""
        return self._db.run(lambda c: control_sql.pinned_messages(c, thread_id, namespace))

    async def apinned_messages(
        self, thread_id: str, *, namespace: str = "default"
    ) -> frozenset[str]:
        """Async :meth:`pinned_messages`."""
        return await self._db.arun(lambda c: control_sql.pinned_messages(c, thread_id, namespace))


def _request(
    thread_id: str, namespace: str, instruction: str | None
) -> Callable[[Connection], None]:
    check_thread_id(thread_id)  # before any database work
    text = check_instruction(instruction)
    return lambda conn: control_sql.request_compaction(conn, thread_id, namespace, text)


def _take(thread_id: str, namespace: str) -> Callable[[Connection], CompactionRequest | None]:
    return lambda conn: control_sql.take_request(conn, thread_id, namespace)


def _pins(
    write: Callable[[Connection, str, str, tuple[str, ...]], None],
    thread_id: str,
    message_ids: Sequence[str],
    namespace: str,
) -> Callable[[Connection], None]:
    check_thread_id(thread_id)
    ids = pin_ids(message_ids)
    return lambda conn: write(conn, thread_id, namespace, ids)
