"""SummaryStore: one URL serving the sync and the async graph path.

The sync and the async engine are derived from the same URL and created on first use, so a
store used only synchronously never starts an async driver. Every operation is one function
of ``_tables`` over a sync connection; an async method runs that same function through
``AsyncConnection.run_sync``, so each public method stays a line or two.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import TracebackType
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from langgraph_compaction._exceptions import SummaryStoreError
from langgraph_compaction.store import _tables
from langgraph_compaction.store._check import find_problems
from langgraph_compaction.store._engine import (
    WRITE_OPTION,
    build_async_engine,
    build_sync_engine,
    derive_urls,
    describe_error,
    dispose_at_loop_shutdown,
    dispose_from_other_loop,
    is_memory,
    mask_url,
)
from langgraph_compaction.store._migrate import ensure_schema, schema_is_current
from langgraph_compaction.store._records import (
    NewSummary,
    SummaryKind,
    SummaryRecord,
    ThreadState,
    check_calibration,
    message_ids,
)

__all__ = ["SummaryStore"]

T = TypeVar("T")

_ADD_ATTEMPTS = 5
"""Tries of one add_summary when a writer outside this package takes the same version."""


class SummaryStore:
    """Summaries and per-thread state in a SQLite file or a PostgreSQL database.

    One object serves the sync and the async graph path, is safe to share across threads
    (the sync engine's connection pool), and creates or upgrades its tables on first use
    (Alembic migrations shipped in the package; a store written by a newer release is refused
    with SummaryStoreError naming both schema versions).

    ```python
    store = SummaryStore("sqlite:///compaction.db", retention=20)
    store.list_summaries("thread-1")
    await store.alist_summaries("thread-1")
    ```

    The async engine belongs to the event loop that first used it. Used from another loop
    later (one loop after another, as in tests), the store closes it and builds a new one;
    using one store from two loops *at the same time* is not supported. Call ``aclose()``
    before a loop ends. With ``sqlite:///:memory:`` the sync and the async path each get their
    own database, not shared.
    """

    def __init__(
        self, url: str = "sqlite:///compaction.db", *, retention: int | None = None
    ) -> None:
        """Prepare the store at ``url``; nothing connects until the first call.

        Args:
            url: ``sqlite:///path.db``, ``sqlite:///:memory:`` or ``postgresql://...``; the
                async driver is derived from it.
            retention: keep only this many newest versions per thread; None keeps all. The
                oldest kept row's ``parent_id`` may then name a deleted row.

        Raises:
            SummaryStoreError: the URL cannot be parsed or names an unsupported database.
            ValueError: retention is not a positive integer.
        """
        if retention is not None and (isinstance(retention, bool) or retention < 1):
            raise ValueError(f"retention must be a positive integer or None, got {retention!r}")
        self._url = url
        self._where = mask_url(url)
        self._retention = retention
        self._sync_url, self._async_url = derive_urls(url)
        self._lock = threading.Lock()
        # A shared :memory: connection cannot run two transactions at once.
        memory = is_memory(self._sync_url)
        self._serial: AbstractContextManager[Any] = threading.Lock() if memory else nullcontext()
        self._engine: Engine | None = None
        self._aengine: AsyncEngine | None = None
        self._aloop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._acloser: AsyncGenerator[None, None] | None = None
        """Keeps the loop-shutdown hook of the current async engine alive."""
        self._aserial: asyncio.Lock | None = None
        self._aschema_ready = False

    @property
    def url(self) -> str:
        """The URL as given, password included (``repr`` masks it)."""
        return self._url

    @property
    def retention(self) -> int | None:
        """How many newest versions per thread are kept; None keeps all."""
        return self._retention

    def __repr__(self) -> str:
        return f"SummaryStore({self._where!r}, retention={self._retention!r})"

    # -- engines and transactions ------------------------------------------------------------

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn database and driver errors into SummaryStoreError naming this store."""
        try:
            yield
        except SummaryStoreError as exc:  # raised by an operation, which does not know the URL
            raise SummaryStoreError(f"summary store {self._where}: {exc}") from exc
        except (SQLAlchemyError, ImportError) as exc:
            raise SummaryStoreError(describe_error(exc, self._where)) from exc

    def _sync_engine(self) -> Engine:
        if self._engine is not None:  # the common case, without taking the lock
            return self._engine
        with self._lock:
            if self._engine is None:
                engine = build_sync_engine(self._sync_url)
                try:
                    with self._serial, engine.connect() as conn:
                        if not schema_is_current(conn):
                            conn.rollback()  # end the read; migrate under the write lock
                            conn.execution_options(**{WRITE_OPTION: True})
                            with conn.begin():
                                ensure_schema(conn)
                except BaseException:
                    engine.dispose()
                    raise
                self._engine = engine
            return self._engine

    async def _async_engine(self) -> AsyncEngine:
        loop = asyncio.get_running_loop()
        with self._lock:
            stale, built = None, False
            if self._aengine is not None and (self._aloop is None or self._aloop() is not loop):
                stale, self._aengine = self._aengine, None
            if self._aengine is None:
                self._aengine, built = build_async_engine(self._async_url), True
                self._aloop, self._aschema_ready = weakref.ref(loop), False
                self._aserial = asyncio.Lock() if is_memory(self._async_url) else None
            engine = self._aengine
        if built:
            self._acloser = dispose_at_loop_shutdown(engine)
            await anext(self._acloser)
        if stale is not None:
            await dispose_from_other_loop(stale)
        if not self._aschema_ready:
            async with self._aserial or nullcontext(), engine.connect() as conn:
                if not await conn.run_sync(schema_is_current):
                    await conn.rollback()  # end the read; migrate under the write lock
                    await conn.execution_options(**{WRITE_OPTION: True})
                    async with conn.begin():
                        await conn.run_sync(ensure_schema)
            self._aschema_ready = True
        return engine

    def _options(self, write: bool, single: bool) -> dict[str, Any]:
        # A lookup is one statement, consistent on its own: on PostgreSQL it runs without
        # BEGIN/COMMIT, two round trips fewer (SQLite reads skip BEGIN in the begin hook).
        if single and not write and self._sync_url.get_backend_name() == "postgresql":
            return {WRITE_OPTION: False, "isolation_level": "AUTOCOMMIT"}
        return {WRITE_OPTION: write}

    def _run(
        self,
        op: Callable[[Connection], T],
        *,
        write: bool = False,
        attempts: int = 1,
        single: bool = True,
    ) -> T:
        with self._errors():
            engine = self._sync_engine()
            for attempt in range(1, attempts + 1):
                try:
                    with self._serial, engine.connect() as conn:
                        conn.execution_options(**self._options(write, single))
                        with conn.begin():
                            return op(conn)
                except IntegrityError:
                    if attempt == attempts:
                        raise
        raise AssertionError("attempts must be >= 1")

    async def _arun(
        self,
        op: Callable[[Connection], T],
        *,
        write: bool = False,
        attempts: int = 1,
        single: bool = True,
    ) -> T:
        with self._errors():
            engine = await self._async_engine()
            for attempt in range(1, attempts + 1):
                try:
                    async with self._aserial or nullcontext(), engine.connect() as conn:
                        await conn.execution_options(**self._options(write, single))
                        async with conn.begin():
                            return await conn.run_sync(op)
                except IntegrityError:
                    if attempt == attempts:
                        raise
        raise AssertionError("attempts must be >= 1")

    def close(self) -> None:
        """Close the sync engine's pooled connections; the store reopens on next use."""
        with self._lock:
            engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()

    async def aclose(self) -> None:
        """Close the async and the sync engine's connections; the store reopens on next use."""
        with self._lock:
            engine, self._aengine = self._aengine, None
        if engine is not None:
            await engine.dispose()
        self.close()

    def __enter__(self) -> SummaryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> SummaryStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- summaries ---------------------------------------------------------------------------

    def list_summaries(self, thread_id: str, namespace: str = "default") -> list[SummaryRecord]:
        """Every stored summary of the thread, oldest (lowest version) first."""
        return self._run(lambda c: _tables.list_summaries(c, thread_id, namespace))

    async def alist_summaries(
        self, thread_id: str, namespace: str = "default"
    ) -> list[SummaryRecord]:
        """Async :meth:`list_summaries`."""
        return await self._arun(lambda c: _tables.list_summaries(c, thread_id, namespace))

    def latest_summaries(
        self, thread_id: str, namespace: str = "default", limit: int = 8
    ) -> list[SummaryRecord]:
        """The newest ``limit`` summaries of the thread, newest first: the reuse candidates."""
        return self._run(lambda c: _tables.latest_summaries(c, thread_id, namespace, limit))

    async def alatest_summaries(
        self, thread_id: str, namespace: str = "default", limit: int = 8
    ) -> list[SummaryRecord]:
        """Async :meth:`latest_summaries`."""
        return await self._arun(lambda c: _tables.latest_summaries(c, thread_id, namespace, limit))

    def find_summary(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> SummaryRecord | None:
        """The thread's summary of exactly this prefix, or None."""
        return self._run(lambda c: _tables.find_summary(c, thread_id, namespace, prefix_hash))

    async def afind_summary(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> SummaryRecord | None:
        """Async :meth:`find_summary`."""
        return await self._arun(
            lambda c: _tables.find_summary(c, thread_id, namespace, prefix_hash)
        )

    def add_summary(
        self,
        *,
        thread_id: str,
        namespace: str,
        parent_id: str | None,
        boundary_message_id: str,
        covered_messages: int,
        prefix_hash: str,
        summary: str,
        summary_tokens: int,
        source_tokens: int,
        kind: SummaryKind,
        model: str | None,
        rescued_message_ids: Sequence[str],
    ) -> SummaryRecord:
        """Store a summary as the thread's next version, in one transaction.

        If the thread already holds a summary of this ``prefix_hash`` (say another worker just
        wrote it), nothing is written and that row is returned. With ``retention`` set, the
        versions beyond it are deleted in the same transaction.

        Returns:
            The stored row, with its id, version and created_at.

        Raises:
            ValueError: the summary is blank or a field invalid; nothing is stored.
            SummaryStoreError: the database failed; nothing is stored.
        """
        new = NewSummary(
            thread_id=thread_id,
            namespace=namespace,
            parent_id=parent_id,
            boundary_message_id=boundary_message_id,
            covered_messages=covered_messages,
            prefix_hash=prefix_hash,
            summary=summary,
            summary_tokens=summary_tokens,
            source_tokens=source_tokens,
            kind=kind,
            model=model,
            rescued_message_ids=message_ids(rescued_message_ids),
        )
        return self._run(self._insert(new), write=True, attempts=_ADD_ATTEMPTS)

    async def aadd_summary(
        self,
        *,
        thread_id: str,
        namespace: str,
        parent_id: str | None,
        boundary_message_id: str,
        covered_messages: int,
        prefix_hash: str,
        summary: str,
        summary_tokens: int,
        source_tokens: int,
        kind: SummaryKind,
        model: str | None,
        rescued_message_ids: Sequence[str],
    ) -> SummaryRecord:
        """Async :meth:`add_summary`."""
        new = NewSummary(
            thread_id=thread_id,
            namespace=namespace,
            parent_id=parent_id,
            boundary_message_id=boundary_message_id,
            covered_messages=covered_messages,
            prefix_hash=prefix_hash,
            summary=summary,
            summary_tokens=summary_tokens,
            source_tokens=source_tokens,
            kind=kind,
            model=model,
            rescued_message_ids=message_ids(rescued_message_ids),
        )
        return await self._arun(self._insert(new), write=True, attempts=_ADD_ATTEMPTS)

    def _insert(self, new: NewSummary) -> Callable[[Connection], SummaryRecord]:
        return lambda conn: _tables.insert_summary(conn, new, self._retention)

    # -- per-thread state --------------------------------------------------------------------

    def thread_state(self, thread_id: str, namespace: str) -> ThreadState:
        """The thread's failure count and calibration."""
        return self._run(lambda c: _tables.thread_state(c, thread_id, namespace))

    async def athread_state(self, thread_id: str, namespace: str) -> ThreadState:
        """Async :meth:`thread_state`."""
        return await self._arun(lambda c: _tables.thread_state(c, thread_id, namespace))

    def record_failure(
        self, thread_id: str, namespace: str, *, message_count: int, error: str
    ) -> ThreadState:
        """Count a failed summary call, made at a history of ``message_count`` messages."""
        return self._run(_failure(thread_id, namespace, message_count, error), write=True)

    async def arecord_failure(
        self, thread_id: str, namespace: str, *, message_count: int, error: str
    ) -> ThreadState:
        """Async :meth:`record_failure`."""
        return await self._arun(_failure(thread_id, namespace, message_count, error), write=True)

    def reset_failures(self, thread_id: str, namespace: str) -> None:
        """Zero the failure count after a successful summary."""
        self._run(lambda c: _tables.reset_failures(c, thread_id, namespace), write=True)

    async def areset_failures(self, thread_id: str, namespace: str) -> None:
        """Async :meth:`reset_failures`."""
        await self._arun(lambda c: _tables.reset_failures(c, thread_id, namespace), write=True)

    def set_calibration(self, thread_id: str, namespace: str, ratio: float) -> None:
        """Store the thread's measured/estimated token ratio (finite, > 0; else ValueError)."""
        self._run(_calibration(thread_id, namespace, ratio), write=True)

    async def aset_calibration(self, thread_id: str, namespace: str, ratio: float) -> None:
        """Async :meth:`set_calibration`."""
        await self._arun(_calibration(thread_id, namespace, ratio), write=True)

    def delete_thread(self, thread_id: str, namespace: str | None = None) -> int:
        """Delete the thread's summaries and state in one namespace (None: in all).

        Returns:
            How many summaries were deleted.
        """
        return self._run(lambda c: _tables.delete_thread(c, thread_id, namespace), write=True)

    async def adelete_thread(self, thread_id: str, namespace: str | None = None) -> int:
        """Async :meth:`delete_thread`."""
        return await self._arun(
            lambda c: _tables.delete_thread(c, thread_id, namespace), write=True
        )

    # -- upkeep ------------------------------------------------------------------------------

    def check_integrity(self) -> list[str]:
        """Check the rows against the store's rules (and, on SQLite, the file's structure).

        Meant for after a crash, or before trusting a restored copy; it reads every row.

        Returns:
            One sentence per problem found; an empty list when the store is sound.
        """
        return self._run(find_problems, single=False)

    async def acheck_integrity(self) -> list[str]:
        """Async :meth:`check_integrity`."""
        return await self._arun(find_problems, single=False)


def _failure(
    thread_id: str, namespace: str, message_count: int, error: str
) -> Callable[[Connection], ThreadState]:
    return lambda conn: _tables.record_failure(conn, thread_id, namespace, message_count, error)


def _calibration(thread_id: str, namespace: str, ratio: float) -> Callable[[Connection], None]:
    check_calibration(ratio)  # before any database work
    return lambda conn: _tables.set_calibration(conn, thread_id, namespace, ratio)
