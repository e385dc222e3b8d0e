"""The engines and transactions behind one SummaryStore, and its errors.

The sync engine is built, and the schema created or migrated, on the first sync call; the
async path does the same through the sync engine in a worker thread (``asyncio.to_thread``),
since Alembic reads its scripts from disk and building an engine imports drivers: nothing of
that runs on the event loop. Only a new in-memory database, which the sync engine cannot
reach, gets its tables on the loop, from the declared metadata (no file read).

Nothing failed is kept: an engine whose schema could not be made is disposed, and the next
call builds it again, so a store recovers once the cause (a folder not writable yet, a server
down, a lock held too long) is gone. A database that goes away under a running store (a
SQLite file deleted or replaced, a PostgreSQL database or schema dropped and created again)
is opened again on the next call, its schema made anew (``store.db.reopen`` says how it is noticed).
Every error reaches the caller as SummaryStoreError naming the store and what to do, its
cause chained.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    contextmanager,
    nullcontext,
)
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store.db.control_reader import ControlReader
from langgraph_compaction.store.db.engine import (
    WRITE_OPTION,
    allow_long_migration,
    build_async_engine,
    build_sync_engine,
    database_identity,
    derive_urls,
    describe_error,
    dispose_at_loop_shutdown,
    dispose_from_other_loop,
    is_memory,
    mask_url,
    timed_out,
)
from langgraph_compaction.store.db.locks import AsyncBoundedLock, BoundedLock
from langgraph_compaction.store.db.reopen import FileId, file_id, schema_missing, sqlite_path
from langgraph_compaction.store.db.write_queue import WriteQueue, write_queue
from langgraph_compaction.store.records import SummaryRecord, ThreadControls, record_from_row
from langgraph_compaction.store.schema.migrate import (
    MIGRATION_LOCK,
    create_head_schema,
    ensure_schema,
    schema_is_current,
)
from langgraph_compaction.store.sql import controls as control_sql
from langgraph_compaction.store.sql import summaries as summary_sql

__all__ = ["Database"]

T = TypeVar("T")
_MEMORY = "the in-memory database"


class Database:
    """A sync and an async engine on one URL, built on first use and rebuilt after a failure."""

    def __init__(self, url: str, busy_timeout: float) -> None:
        self.where = mask_url(url)
        self.busy_timeout = busy_timeout
        self.sync_url, self.async_url = derive_urls(url)
        self.identity = database_identity(self.sync_url)
        self._lock = threading.Lock()  # swaps engines; never held around I/O
        self._build = BoundedLock(busy_timeout, "the engine's build (its schema migration)")
        self._migration = BoundedLock(busy_timeout, "the process's migration", MIGRATION_LOCK)
        # A shared :memory: connection cannot run two transactions at once.
        self.memory = is_memory(self.sync_url)
        self._serial: AbstractContextManager[Any] = (
            BoundedLock(busy_timeout, _MEMORY) if self.memory else nullcontext()
        )
        # Writers of one process to one file take turns here, not in SQLite's busy handler.
        sqlite_file = not self.memory and self.sync_url.get_backend_name() == "sqlite"
        self.writes: WriteQueue | None = write_queue(self.identity) if sqlite_file else None
        self._engine: Engine | None = None
        self._aengine: AsyncEngine | None = None
        self._aloop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._acloser: AsyncGenerator[None, None] | None = None
        """Keeps the loop-shutdown hook of the current async engine alive."""
        self._aserial: AsyncBoundedLock | None = None
        self._aschema_ready = False
        self._file = sqlite_path(self.sync_url)
        self._engine_file: FileId | None = None
        """The SQLite file the sync engine made the schema in (device, inode)."""
        self._aengine_file: FileId | None = None
        """The same for the async engine."""
        self._controls: ControlReader | None = None
        """The per-call control read's own connection, made from the sync engine."""

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn every failure but a rejected value into SummaryStoreError naming this store."""
        try:
            yield
        except SummaryStoreError as exc:  # raised by an operation, which does not know the URL
            raise type(exc)(f"summary store {self.where}: {exc}") from exc
        except UnicodeError as exc:  # a ValueError, but the text's fault, not the caller's
            raise SummaryStoreError(describe_error(exc, self.where, self.busy_timeout)) from exc
        except ValueError:
            raise  # a value the caller passed was refused; nothing reached the database
        except Exception as exc:  # SQLAlchemy's, a driver's, the file system's
            raise SummaryStoreError(describe_error(exc, self.where, self.busy_timeout)) from exc

    def not_created(self) -> bool:
        """Whether this is a SQLite file that no engine opened and that does not exist: a read
        would create it, only to find nothing (one stat, allowed on an event loop)."""
        if self._file is None or self._engine is not None or self._aengine is not None:
            return False
        return file_id(self._file) is None

    # -- sync ----------------------------------------------------------------------------------

    def sync_engine(self) -> Engine:
        """The sync engine, with the schema created or migrated on its first build."""
        if self._engine is not None:  # the common case, without taking the lock
            return self._engine
        with self._build:  # a migration may take long: other threads wait busy_timeout at most
            if self._engine is None:
                engine = build_sync_engine(self.sync_url, busy_timeout=self.busy_timeout)
                try:
                    with self._serial, engine.connect() as conn:
                        if not schema_is_current(conn):
                            conn.rollback()  # end the read; migrate under the write lock
                            conn.execution_options(**{WRITE_OPTION: True})
                            with self._migration, self._write_turn(True), conn.begin():
                                allow_long_migration(conn)
                                ensure_schema(conn)
                except BaseException:
                    engine.dispose()  # nothing half-made is kept: the next call starts over
                    raise
                self._engine_file = None if self._file is None else file_id(self._file)
                self._engine = engine
            return self._engine

    def _moved(self, opened: FileId | None) -> bool:
        """Whether the SQLite file is gone, or another file, since an engine opened it."""
        return self._file is not None and file_id(self._file) != opened

    def _sync_engine_on_file(self, reopen: bool = False) -> Engine:
        """The sync engine, built again (with the schema) when its database went away."""
        engine = self.sync_engine()
        if reopen or self._moved(self._engine_file):
            with self._lock:
                if self._engine is engine:  # not reopened by another thread meanwhile
                    self._engine = None
            engine.dispose()
            engine = self.sync_engine()
        return engine

    def options(self, write: bool, single: bool) -> dict[str, Any]:
        """Execution options of one operation's connection."""
        # A lookup is one statement, consistent on its own: on PostgreSQL it runs without
        # BEGIN/COMMIT, two round trips fewer (SQLite reads skip BEGIN in the begin hook).
        if single and not write and self.sync_url.get_backend_name() == "postgresql":
            return {WRITE_OPTION: False, "isolation_level": "AUTOCOMMIT"}
        return {WRITE_OPTION: write}

    def _write_turn(self, write: bool) -> AbstractContextManager[None]:
        """This process's turn at the file's write lock, held for one write transaction.

        Taken before a pooled connection is, so waiting writers hold no connection.
        Readers never queue (WAL); PostgreSQL and :memory: have locks of their own.
        """
        if write and self.writes is not None:
            return self.writes.hold(self.busy_timeout)
        return nullcontext()

    def _awrite_turn(self, write: bool) -> AbstractAsyncContextManager[None]:
        """:meth:`_write_turn` for a task: it waits without blocking its event loop."""
        if write and self.writes is not None:
            return self.writes.ahold(self.busy_timeout)
        return nullcontext()

    def run(
        self,
        op: Callable[[Connection], T],
        *,
        write: bool = False,
        attempts: int = 1,
        single: bool = True,
    ) -> T:
        """Run ``op`` in one transaction of the sync engine (once more if the tables were gone)."""
        with self.errors():
            engine, attempt, reopened = self._sync_engine_on_file(), 1, False
            while True:
                try:
                    with self._serial, self._write_turn(write), engine.connect() as conn:
                        conn.execution_options(**self.options(write, single))
                        with conn.begin():
                            return op(conn)
                except IntegrityError:
                    if attempt >= attempts:
                        raise
                    attempt += 1
                except DBAPIError as exc:
                    if reopened or not schema_missing(exc):
                        raise
                    engine, reopened = self._sync_engine_on_file(reopen=True), True

    def read_controls(self, thread_id: str, namespace: str) -> ThreadControls:
        """The thread's controls (``control_sql.thread_controls``), read on every model call:
        on the control reader's connection (``store.db.control_reader``), not through a transaction
        of the engine; through one when that fails (the engine's path reports the error, or
        reopens a database that went away) or the database is in memory."""
        reader = self._reader()
        if reader is not None:
            try:
                return control_sql.controls_from_row(reader.read(thread_id, namespace))
            except Exception as exc:  # the engine's path below says what failed, except
                self._raise_timeout(exc)  # after a timeout: once is as long as a call waits
        return self.run(lambda c: control_sql.thread_controls(c, thread_id, namespace))

    async def aread_controls(self, thread_id: str, namespace: str) -> ThreadControls:
        """:meth:`read_controls` for a task: in one worker thread (a stat, maybe an engine
        build, one statement), not through the async engine's several hops; an in-memory
        database, which only the async engine reaches, through that engine."""
        if self.memory:
            return await self.arun(lambda c: control_sql.thread_controls(c, thread_id, namespace))
        return await asyncio.to_thread(self.read_controls, thread_id, namespace)

    def latest_summaries(self, thread_id: str, namespace: str, limit: int) -> list[SummaryRecord]:
        """``summary_sql.latest_summaries`` on the control reader's connection (a restarted
        worker's first call reads it), through the engine as :meth:`read_controls` falls back."""
        reader = self._reader()
        if reader is not None:
            try:
                rows = reader.read_rows("latest", thread_id, namespace, limit)
            except Exception as exc:
                self._raise_timeout(exc)
            else:
                return [record_from_row(row) for row in rows]
        return self.run(lambda c: summary_sql.latest_summaries(c, thread_id, namespace, limit))

    async def alatest_summaries(
        self, thread_id: str, namespace: str, limit: int
    ) -> list[SummaryRecord]:
        """:meth:`latest_summaries` for a task, in one worker thread (as :meth:`aread_controls`)."""
        if self.memory:
            return await self.arun(
                lambda c: summary_sql.latest_summaries(c, thread_id, namespace, limit)
            )
        return await asyncio.to_thread(self.latest_summaries, thread_id, namespace, limit)

    def _raise_timeout(self, exc: Exception) -> None:  # not waiting twice on the engine
        if timed_out(exc):
            with self.errors():
                raise exc

    def _reader(self) -> ControlReader | None:
        """The control reader of the current engine; None for a database in memory."""
        if self.memory:
            return None
        with self.errors():
            engine = self._sync_engine_on_file()
        reader = self._controls
        if reader is None or reader.engine is not engine:
            reader = self._control_reader(engine)
        return reader

    def _control_reader(self, engine: Engine) -> ControlReader:
        with self._lock:
            stale, reader = self._controls, self._controls
            if reader is None or reader.engine is not engine:
                reader = self._controls = ControlReader(
                    engine,
                    control_sql.CONTROLS,
                    {"latest": summary_sql.NEWEST_FIRST},
                    busy_timeout=self.busy_timeout,
                )
        if stale is not None and stale is not reader:
            stale.close()
        return reader

    # -- async ---------------------------------------------------------------------------------

    def _engine_for(self, loop: asyncio.AbstractEventLoop) -> AsyncEngine | None:
        engine, aloop = self._aengine, self._aloop
        if engine is not None and aloop is not None and aloop() is loop:
            return engine
        return None

    async def async_engine(self) -> AsyncEngine:
        """The async engine of the running loop, its schema ready; nothing blocks the loop."""
        loop = asyncio.get_running_loop()
        engine = self._engine_for(loop)
        if engine is None:
            built = await asyncio.to_thread(
                build_async_engine, self.async_url, busy_timeout=self.busy_timeout
            )
            with self._lock:
                engine = self._engine_for(loop)
                stale = None
                if engine is None:  # no other task of this loop installed one meanwhile
                    stale, self._aengine, engine = self._aengine, built, built
                    self._aloop, self._aschema_ready = weakref.ref(loop), False
                    self._aserial = (
                        AsyncBoundedLock(self.busy_timeout, _MEMORY) if self.memory else None
                    )
            if engine is not built:
                await built.dispose()
            else:
                self._acloser = dispose_at_loop_shutdown(built)
                await anext(self._acloser)
            if stale is not None:
                await dispose_from_other_loop(stale)
        if not self._aschema_ready:
            if self.memory:
                await self._create_memory_schema(engine)
            else:
                await asyncio.to_thread(self.sync_engine)
            self._aengine_file, self._aschema_ready = self._engine_file, True
        return engine

    async def _async_engine_on_file(self, reopen: bool = False) -> AsyncEngine:
        """The async engine, built again (the sync one and the schema too, off the loop) when
        its database went away."""
        engine = await self.async_engine()
        # One stat of a local file, a few microseconds (langgraph dev allows os.stat on the loop).
        if reopen or self._moved(self._aengine_file):
            with self._lock:
                if self._aengine is engine:
                    self._aengine = None  # async_engine() builds the next one
            await engine.dispose()
            await asyncio.to_thread(self._sync_engine_on_file, reopen)
            engine = await self.async_engine()
        return engine

    async def _create_memory_schema(self, engine: AsyncEngine) -> None:
        async with self._aserial or nullcontext(), engine.connect() as conn:
            if not await conn.run_sync(schema_is_current):
                await conn.rollback()
                await conn.execution_options(**{WRITE_OPTION: True})
                async with conn.begin():
                    await conn.run_sync(create_head_schema)

    async def arun(
        self,
        op: Callable[[Connection], T],
        *,
        write: bool = False,
        attempts: int = 1,
        single: bool = True,
    ) -> T:
        """Run ``op`` in one transaction of the async engine (``run_sync``), as :meth:`run`."""
        with self.errors():
            engine, attempt, reopened = await self._async_engine_on_file(), 1, False
            while True:
                try:
                    async with (
                        self._aserial or nullcontext(),
                        self._awrite_turn(write),
                        engine.connect() as conn,
                    ):
                        await conn.execution_options(**self.options(write, single))
                        async with conn.begin():
                            return await conn.run_sync(op)
                except IntegrityError:
                    if attempt >= attempts:
                        raise
                    attempt += 1
                except DBAPIError as exc:
                    if reopened or not schema_missing(exc):
                        raise
                    engine, reopened = await self._async_engine_on_file(reopen=True), True

    # -- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the sync engine's pooled connections; it is rebuilt on next use."""
        with self._lock:
            engine, self._engine = self._engine, None
            reader, self._controls = self._controls, None
        if reader is not None:
            reader.close()
        if engine is not None:
            engine.dispose()

    async def aclose(self) -> None:
        """Close both engines' connections (the sync one off the loop)."""
        with self._lock:
            engine, self._aengine = self._aengine, None
        if engine is not None:
            await engine.dispose()
        if self._engine is not None or self._controls is not None:
            await asyncio.to_thread(self.close)
