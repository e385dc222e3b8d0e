"""The per-call control read, without the engine's per-call costs.

Every model call of a thread reads its control version (``thread_controls``), so that a
request, pin, edit or revoke made by any process reaches the next call. Through the engine
that one lookup pays a pool checkout (a ping on PostgreSQL), a transaction's bookkeeping and
the result's processing: more than the rest of a warm call. Here it runs as SQL compiled once,
on one DBAPI connection kept for it (taken from the engine, so its connect hooks ran, and
detached from the pool), under a lock: one round trip on PostgreSQL (autocommit, prepared by
the driver after a few uses).

On a SQLite file the connection first asks ``PRAGMA data_version``, which changes whenever
any other connection, of this process or another, commits to the file. While it stays put
nothing can have changed, so the rows read since are served again without a query; this
connection only reads, so its own statements never move it. What is read is the same either
way: a stale row is never served.

The same connection serves a second statement, the thread's newest summaries
(``read_rows``), which a restarted worker's first call reads: its rows go through the
columns' result processors (a timestamp's text becomes a datetime) as the engine's would.

Any failure closes the connection and gives the caller the error to fall back on (the
engine's path, which knows how to report it and to reopen a database that went away). The
async path runs the same read in a worker thread (``Database.aread_controls``).

A read waits for the lock at most ``busy_timeout`` (then SummaryStoreError): a statement that
hangs under it (another session holding a table, past the session's own timeouts) holds up
the other calls of the process no longer than that (DESIGN 6.9).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.sql import Select

from langgraph_compaction.store.db.locks import BoundedLock

__all__ = ["ControlReader"]

_PARAMETERS = ("thread_id", "namespace", "limit")
"""Parameters a read binds; a statement's other parameters are constants."""
_MAX_ROWS = 4096
"""Rows kept per data version (SQLite); past it the oldest half is dropped."""


@dataclass(frozen=True, slots=True)
class _Statement:
    """A statement compiled once for the engine's dialect."""

    sql: str
    constants: Mapping[str, Any]
    order: Any
    processors: tuple[Callable[[Any], Any] | None, ...]

    @classmethod
    def compile(cls, engine: Engine, statement: Select[Any]) -> _Statement:
        dialect = engine.dialect
        compiled = statement.compile(dialect=dialect)
        constants = {k: v for k, v in compiled.params.items() if k not in _PARAMETERS}
        processors = tuple(
            column.type.result_processor(dialect, None) for column in statement.selected_columns
        )
        order = compiled.positiontup if dialect.positional else None
        return cls(compiled.string, constants, order, processors)

    def parameters(self, values: Mapping[str, Any]) -> Any:
        bound = {**self.constants, **values}
        return bound if self.order is None else tuple(bound[name] for name in self.order)

    def processed(self, row: Any) -> tuple[Any, ...]:
        if not any(self.processors):
            return tuple(row)
        return tuple(
            value if process is None else process(value)
            for process, value in zip(self.processors, row, strict=True)
        )


class ControlReader:
    """Statements run on a DBAPI connection of its own; rows cached on SQLite while no
    other connection commits."""

    def __init__(
        self,
        engine: Engine,
        statement: Select[Any],
        rows: Mapping[str, Select[Any]] = {},
        *,
        busy_timeout: float,
    ) -> None:
        self.engine = engine
        self._control = _Statement.compile(engine, statement)
        self._statements = {name: _Statement.compile(engine, s) for name, s in rows.items()}
        self._sqlite = engine.dialect.name == "sqlite"
        self._lock = BoundedLock(busy_timeout, "the control reader's connection")
        self._close_soon = False
        """Set by a :meth:`close` that could not wait for the read in flight."""
        self._proxy: Any = None
        self._cursor: Any = None
        self._pid = 0
        self._data_version: object = None
        self._rows: dict[tuple[Any, ...], Any] = {}

    @property
    def connection(self) -> Any:
        """The DBAPI connection it reads on (None until the first read); for tests."""
        return self._cursor.connection if self._cursor is not None else None

    def read(self, thread_id: str, namespace: str) -> tuple[Any, ...]:
        """The statement's one row for these parameters.

        Raises:
            SummaryStoreError: another read held the connection for over ``busy_timeout``.
            Exception: whatever the driver raised; the connection is closed, and the next
                read opens another.
        """
        values = {"thread_id": thread_id, "namespace": namespace}
        row: tuple[Any, ...] = self._read(None, self._control, values, single=True)
        return row

    def read_rows(
        self, name: str, thread_id: str, namespace: str, limit: int
    ) -> list[tuple[Any, ...]]:
        """The rows of the statement ``name`` (given at construction) for these parameters.

        Raises:
            Exception: as :meth:`read`.
        """
        values = {"thread_id": thread_id, "namespace": namespace, "limit": limit}
        rows: list[tuple[Any, ...]] = self._read(name, self._statements[name], values)
        return list(rows)

    def _read(
        self,
        name: str | None,
        statement: _Statement,
        values: Mapping[str, Any],
        single: bool = False,
    ) -> Any:
        key = (name, *values.values())
        with self._lock:
            try:
                cursor = self._open()
                if self._sqlite:
                    cursor.execute("PRAGMA data_version")
                    version = cursor.fetchone()[0]
                    if version != self._data_version:
                        self._rows.clear()
                        self._data_version = version
                    found = self._rows.get(key)
                    if found is not None:
                        return found
                cursor.execute(statement.sql, statement.parameters(values))
                if single:
                    result: Any = statement.processed(cursor.fetchone())
                else:
                    result = tuple(statement.processed(row) for row in cursor.fetchall())
                if self._sqlite:
                    if len(self._rows) >= _MAX_ROWS:
                        for old in list(self._rows)[: _MAX_ROWS // 2]:
                            del self._rows[old]
                    self._rows[key] = result
                return result
            except BaseException:
                self._close()
                raise
            finally:
                if self._close_soon:
                    self._close_soon = False
                    self._close()

    def _open(self) -> Any:
        if self._cursor is not None and self._pid == os.getpid():
            return self._cursor
        self._cursor = self._proxy = None  # a forked child never uses its parent's connection
        proxy = self.engine.raw_connection()
        connection: Any = proxy.driver_connection
        proxy.detach()  # ours alone: never handed back to the pool
        if not self._sqlite:
            connection.autocommit = True  # one statement, consistent on its own: no BEGIN
        self._proxy, self._cursor, self._pid = proxy, connection.cursor(), os.getpid()
        self._data_version, self._rows = None, {}
        return self._cursor

    def _close(self) -> None:
        proxy, self._proxy, self._cursor = self._proxy, None, None
        self._data_version, self._rows = None, {}
        if proxy is not None and self._pid == os.getpid():
            with suppress(Exception):  # already broken: nothing more to release
                proxy.close()

    def close(self) -> None:
        """Close the connection (a later read opens another); if a read holds it past
        ``busy_timeout``, that read closes it when it ends."""
        if not self._lock.acquire():
            self._close_soon = True
            return
        try:
            self._close()
        finally:
            self._lock.release()
