"""SummaryStore's per-thread state: failure counts (the circuit breaker) and calibration.

A mixin, like ``_leasing``, so that the store's module stays one screenful per concern; it
needs only the store's ``_db``. The SQL is in ``_threads``.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from langgraph_compaction.store.database import Database
from langgraph_compaction.store.records import ThreadState, check_calibration
from langgraph_compaction.store.sql import threads as thread_sql

__all__ = ["ThreadStateMethods"]


class ThreadStateMethods:
    """``thread_state``, ``record_failure``, ``reset_failures``, ``set_calibration`` and
    their async twins."""

    _db: Database

    def thread_state(self, thread_id: str, namespace: str) -> ThreadState:
        """The thread's failure count, calibration and current generation."""
        return self._db.run(lambda c: thread_sql.thread_state(c, thread_id, namespace))

    async def athread_state(self, thread_id: str, namespace: str) -> ThreadState:
        """Async :meth:`thread_state`."""
        return await self._db.arun(lambda c: thread_sql.thread_state(c, thread_id, namespace))

    def record_failure(
        self,
        thread_id: str,
        namespace: str,
        *,
        message_count: int,
        error: str,
        generation: int | None = None,
    ) -> ThreadState:
        """Count a failed summary call, made at a history of ``message_count`` messages.

        Raises:
            ThreadDeletedError: ``generation`` given and the thread deleted since.
        """
        op = _failure(thread_id, namespace, message_count, error, generation)
        return self._db.run(op, write=True)

    async def arecord_failure(
        self,
        thread_id: str,
        namespace: str,
        *,
        message_count: int,
        error: str,
        generation: int | None = None,
    ) -> ThreadState:
        """Async :meth:`record_failure`."""
        op = _failure(thread_id, namespace, message_count, error, generation)
        return await self._db.arun(op, write=True)

    def reset_failures(
        self, thread_id: str, namespace: str, *, generation: int | None = None
    ) -> None:
        """Zero the failure count after a successful summary (see ``generation`` above)."""
        self._db.run(_reset(thread_id, namespace, generation), write=True)

    async def areset_failures(
        self, thread_id: str, namespace: str, *, generation: int | None = None
    ) -> None:
        """Async :meth:`reset_failures`."""
        await self._db.arun(_reset(thread_id, namespace, generation), write=True)

    def set_calibration(
        self, thread_id: str, namespace: str, ratio: float, *, generation: int | None = None
    ) -> None:
        """Store the thread's measured/estimated token ratio (finite, > 0; else ValueError)."""
        self._db.run(_calibration(thread_id, namespace, ratio, generation), write=True)

    async def aset_calibration(
        self, thread_id: str, namespace: str, ratio: float, *, generation: int | None = None
    ) -> None:
        """Async :meth:`set_calibration`."""
        await self._db.arun(_calibration(thread_id, namespace, ratio, generation), write=True)


def _failure(
    thread_id: str, namespace: str, message_count: int, error: str, generation: int | None
) -> Callable[[Connection], ThreadState]:
    return lambda conn: thread_sql.record_failure(
        conn, thread_id, namespace, message_count, error, generation
    )


def _reset(thread_id: str, namespace: str, generation: int | None) -> Callable[[Connection], None]:
    return lambda conn: thread_sql.reset_failures(conn, thread_id, namespace, generation)


def _calibration(
    thread_id: str, namespace: str, ratio: float, generation: int | None
) -> Callable[[Connection], None]:
    check_calibration(ratio)  # before any database work
    return lambda conn: thread_sql.set_calibration(conn, thread_id, namespace, ratio, generation)
