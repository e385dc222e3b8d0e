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

Any failure closes the connection and gives the caller the error to fall back on (the
engine's path, which knows how to report it and to reopen a database that went away). The
async path runs the same read in a worker thread (``Database.aread_controls``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.sql import Select

__all__ = ["ControlReader"]

_PARAMETERS = ("thread_id", "namespace")
"""The statement's bound parameters; its other parameters are constants."""
_MAX_ROWS = 4096
"""Rows kept per data version (SQLite); past it the oldest half is dropped."""


class ControlReader:
    """One statement, run on a DBAPI connection of its own; rows cached on SQLite while no
    other connection commits."""

    def __init__(self, engine: Engine, statement: Select[Any]) -> None:
        self.engine = engine
        compiled = statement.compile(dialect=engine.dialect)
        self._sql = compiled.string
        self._constants: Mapping[str, Any] = {
            name: value for name, value in compiled.params.items() if name not in _PARAMETERS
        }
        self._order = compiled.positiontup if engine.dialect.positional else None
        self._sqlite = engine.dialect.name == "sqlite"
        self._lock = threading.Lock()
        self._proxy: Any = None
        self._cursor: Any = None
        self._pid = 0
        self._data_version: object = None
        self._rows: dict[tuple[str, str], tuple[Any, ...]] = {}

    @property
    def connection(self) -> Any:
        """The DBAPI connection it reads on (None until the first read); for tests."""
        return self._cursor.connection if self._cursor is not None else None

    def read(self, thread_id: str, namespace: str) -> tuple[Any, ...]:
        """The statement's one row for these parameters.

        Raises:
            Exception: whatever the driver raised; the connection is closed, and the next
                read opens another.
        """
        key = (thread_id, namespace)
        with self._lock:
            try:
                cursor = self._open()
                if self._sqlite:
                    cursor.execute("PRAGMA data_version")
                    version = cursor.fetchone()[0]
                    if version != self._data_version:
                        self._rows.clear()
                        self._data_version = version
                    row = self._rows.get(key)
                    if row is not None:
                        return row
                cursor.execute(self._sql, self._parameters(thread_id, namespace))
                row = tuple(cursor.fetchone())
                if self._sqlite:
                    if len(self._rows) >= _MAX_ROWS:
                        for old in list(self._rows)[: _MAX_ROWS // 2]:
                            del self._rows[old]
                    self._rows[key] = row
                return row
            except BaseException:
                self._close()
                raise

    def _parameters(self, thread_id: str, namespace: str) -> Any:
        values = {**self._constants, "thread_id": thread_id, "namespace": namespace}
        if self._order is None:
            return values
        return tuple(values[name] for name in self._order)

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
        """Close the connection (a later read opens another)."""
        with self._lock:
            self._close()
