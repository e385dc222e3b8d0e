"""A hung store statement holds the agent's call no longer than busy_timeout (DESIGN 6.9).

Issue 25: another session held ``compaction_threads`` locked for 40 s, and a pass-through call
waited all of it, with ``busy_timeout=3``: nothing bounded the wait of a PostgreSQL statement,
nor the process's lock around the per-call control read. Here another session holds a table
in ACCESS EXCLUSIVE mode for as long as the call under test runs; the call must come back
within ``_BOUND`` (busy_timeout is 1 s), with the model input made: the messages as they are
under the trigger, the outage fallback over it. Every wait is itself bounded (a thread join,
``asyncio.wait_for``), so the code before the fix fails here instead of hanging the suite.

A half-open connection cannot be made on demand; what is checked instead is that every
connection the store opens (pooled, sync and async, and the control reader's) carries the
timeouts and TCP keepalives, down to the socket's options.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
import pytest
from conversations import chat
from fakes import RecordingSummarizer
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph
from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store.db.engine import allow_long_migration
from langgraph_compaction.store.summary_store import plumbing

pytestmark = pytest.mark.slow  # each waits out a timeout on a locked table: seconds

T = TypeVar("T")

_BOUND = 15.0
"""Seconds a call may take while a table stays locked (busy_timeout=1: a few store calls)."""
CONFIG: dict[str, Any] = {
    "context_window": 3000,
    "trigger": {"type": "tokens", "value": 2000},
    "keep": {"type": "messages", "value": 6},
}
THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
UNDER, OVER = chat(3), chat(20)
"""Under the trigger (passed through as is) and over it (the store is needed)."""
LOCKED = pytest.mark.parametrize(
    ("table", "messages"),
    [("compaction_threads", UNDER), ("compaction_threads", OVER), ("compaction_summaries", OVER)],
    ids=["threads-under-trigger", "threads-over-trigger", "summaries-over-trigger"],
)
"""A locked table and a call that reads it (a call under the trigger reads no summary)."""


class TableLock:
    """Another session holding ``table`` in ACCESS EXCLUSIVE mode until :meth:`release`."""

    def __init__(self, url: str, table: str) -> None:
        self.conn = psycopg.connect(url)
        self.conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")

    def wait_for_a_waiter(self) -> None:
        """Return once some session waits for a lock (the statement under test hangs)."""
        deadline = time.monotonic() + _BOUND
        with psycopg.connect(self.conn.info.dsn, autocommit=True) as probe:
            while time.monotonic() < deadline:
                found = probe.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
                if found is not None and found[0] > 0:
                    return
                time.sleep(0.05)
        pytest.fail(f"no statement waited for the lock within {_BOUND} s")

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


@contextmanager
def locked(url: str, table: str) -> Iterator[TableLock]:
    holder = TableLock(url, table)
    try:
        yield holder
    finally:
        holder.release()


def within(bound: float, call: Callable[[], T]) -> T:
    """``call()`` in a thread of its own; fails the test if it has not returned in ``bound``."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(bound)
    if worker.is_alive():
        pytest.fail(f"still waiting for the store after {bound} s (busy_timeout=1)")
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value


def _values(graph: Any, messages: list[BaseMessage]) -> tuple[Any, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    for mode, chunk in graph.stream(
        {"messages": messages}, THREAD, stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
        else:
            values = chunk
    return values, events


async def _avalues(graph: Any, messages: list[BaseMessage]) -> tuple[Any, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    async for mode, chunk in graph.astream(
        {"messages": messages}, THREAD, stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
        else:
            values = chunk
    return values, events


def _assert_went_ahead(
    run: tuple[Any, list[dict[str, Any]]], messages: list[BaseMessage]
) -> CompactionReport:
    """The call made its model input: as is under the trigger, the outage fallback over it."""
    values, events = run
    output, report = values["llm_input_messages"], values["compaction"]
    assert isinstance(report, CompactionReport)
    assert output[-1] == messages[-1]
    if messages is UNDER:
        assert output == messages
        return report
    if report.action == "failed":  # what was locked was needed
        assert report.error and "busy_timeout" in report.error
        failed = [e for e in events if e["type"] == "context_compaction_failed"]
        assert failed and failed[0]["cause"] == "store"
    assert report.gauge.budget is not None and report.tokens_after <= report.gauge.budget
    return report


@LOCKED
def test_a_locked_table_holds_a_call_no_longer_than_busy_timeout(
    pg_url: str, table: str, messages: list[BaseMessage]
) -> None:
    store = SummaryStore(pg_url, busy_timeout=1)
    graph = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    try:
        assert _values(graph, UNDER)[0]["compaction"].action == "passthrough"  # schema made
        with locked(pg_url, table):
            report = _assert_went_ahead(within(_BOUND, lambda: _values(graph, messages)), messages)
        if messages is OVER and table == "compaction_threads":
            assert report.action == "failed"  # the control read itself timed out
        # the lock released, the store works again by itself
        assert _values(graph, OVER)[0]["compaction"].action == "summarized"
    finally:
        store.close()


@LOCKED
async def test_a_locked_table_holds_an_async_call_no_longer_than_busy_timeout(
    pg_url: str, table: str, messages: list[BaseMessage]
) -> None:
    store = SummaryStore(pg_url, busy_timeout=1)
    graph = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    try:
        assert (await _avalues(graph, UNDER))[0]["compaction"].action == "passthrough"
        holder = await asyncio.to_thread(TableLock, pg_url, table)
        try:
            run = await asyncio.wait_for(_avalues(graph, messages), _BOUND)
        except TimeoutError:
            pytest.fail(f"still waiting for the store after {_BOUND} s (busy_timeout=1)")
        finally:
            await asyncio.to_thread(holder.release)
        _assert_went_ahead(run, messages)
        assert (await _avalues(graph, OVER))[0]["compaction"].action == "summarized"
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    ("table", "read"),
    [
        ("compaction_threads", lambda s: s.thread_state("t", "default")),
        ("compaction_threads", lambda s: plumbing(s).thread_controls("t", "default")),
        ("compaction_summaries", lambda s: s.latest_summaries("t")),
    ],
    ids=["thread_state", "thread_controls", "latest_summaries"],
)
def test_store_reads_on_a_locked_table_raise_within_the_bound(
    pg_url: str, table: str, read: Callable[[SummaryStore], object]
) -> None:
    store = SummaryStore(pg_url, busy_timeout=1)
    try:
        store.request_compaction("t")  # the schema and the thread's row exist
        with locked(pg_url, table), pytest.raises(SummaryStoreError) as raised:
            within(_BOUND, lambda: read(store))
        message = str(raised.value)
        assert "busy_timeout" in message
        assert "lock_timeout" in message or "statement_timeout" in message
        read(store)  # works again
    finally:
        store.close()


async def test_async_store_reads_on_a_locked_table_raise_within_the_bound(pg_url: str) -> None:
    store = SummaryStore(pg_url, busy_timeout=1)
    try:
        await store.arequest_compaction("t")
        holder = await asyncio.to_thread(TableLock, pg_url, "compaction_threads")
        try:
            with pytest.raises(SummaryStoreError, match="busy_timeout"):
                await asyncio.wait_for(store.athread_state("t", "default"), _BOUND)
            with pytest.raises(SummaryStoreError, match="busy_timeout"):
                await asyncio.wait_for(plumbing(store).athread_controls("t", "default"), _BOUND)
        finally:
            await asyncio.to_thread(holder.release)
        assert (await plumbing(store).athread_controls("t", "default")).requested
    finally:
        await store.aclose()


def test_the_control_readers_lock_is_taken_with_a_bound(pg_url: str) -> None:
    """With the session's timeouts lifted (the URL's own options win), a read hangs for as
    long as the table stays locked: the next read waits for the reader's lock busy_timeout at
    most, and goes ahead as on an outage."""
    url = pg_url.replace(
        "?options=", "?options=-c%20lock_timeout%3D0%20-c%20statement_timeout%3D0%20"
    )
    store = SummaryStore(url, busy_timeout=1)
    store.request_compaction("t")
    hung: dict[str, BaseException] = {}

    def hang() -> None:
        try:
            plumbing(store).thread_controls("t", "default")
        except BaseException as exc:  # once the lock is released, it ends; report anything
            hung["error"] = exc

    first = threading.Thread(target=hang, daemon=True)
    try:
        with locked(url, "compaction_threads") as holder:
            first.start()
            holder.wait_for_a_waiter()  # the first read hangs holding the reader's lock
            with pytest.raises(SummaryStoreError, match=r"control reader.*busy_timeout"):
                within(_BOUND, lambda: plumbing(store).thread_controls("t", "default"))
        first.join(_BOUND)
        assert not first.is_alive() and not hung
        assert plumbing(store).thread_controls("t", "default").requested
    finally:
        store.close()


def test_a_migration_waiting_for_another_sessions_schema_lock_gives_up(pg_url: str) -> None:
    """A store that must migrate while another process migrates (holds the schema's advisory
    lock) fails the call after busy_timeout, and migrates on a later call."""
    store = SummaryStore(pg_url, busy_timeout=1)
    other = psycopg.connect(pg_url)
    try:
        try:
            other.execute("SELECT pg_advisory_xact_lock(7261300, 0)")  # lock_schema's key
            with pytest.raises(SummaryStoreError, match="lock_timeout"):
                within(_BOUND, lambda: plumbing(store).thread_controls("t", "default"))
        finally:
            other.close()  # its transaction ends, the lock with it
        assert not plumbing(store).thread_controls("t", "default").requested
    finally:
        store.close()


def test_a_migration_may_run_longer_than_busy_timeout(pg_url: str) -> None:
    """Its transaction lifts statement_timeout (a big table may take long to rewrite); the
    session's own returns after it."""
    store = SummaryStore(pg_url, busy_timeout=1)
    try:
        with store._db.sync_engine().connect() as conn:
            with conn.begin():
                allow_long_migration(conn)
                conn.exec_driver_sql("SELECT pg_sleep(1.5)")
            assert conn.exec_driver_sql("SHOW statement_timeout").scalar() == "1s"
    finally:
        store.close()


def _socket_options(fileno: int) -> dict[str, int]:
    sock = socket.socket(fileno=fileno)  # the driver's socket, not closed here
    try:
        tcp = socket.IPPROTO_TCP
        return {
            "keepalive": sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
            "idle": sock.getsockopt(tcp, socket.TCP_KEEPIDLE),
            "interval": sock.getsockopt(tcp, socket.TCP_KEEPINTVL),
            "count": sock.getsockopt(tcp, socket.TCP_KEEPCNT),
            "user_timeout": sock.getsockopt(tcp, socket.TCP_USER_TIMEOUT),
        }
    finally:
        sock.detach()


def _assert_bounded(driver: Any) -> None:
    """The psycopg connection's session timeouts and keepalives (busy_timeout=4)."""
    if isinstance(driver, psycopg.Connection):
        shown = [
            driver.execute(f"SHOW {name}").fetchone()
            for name in ("lock_timeout", "statement_timeout")
        ]
        assert shown == [("4s",), ("4s",)]
    parameters = driver.info.get_parameters()
    assert parameters["keepalives_idle"] == "2" and parameters["keepalives_count"] == "3"
    if sys.platform.startswith("linux"):
        assert _socket_options(driver.pgconn.socket) == {
            "keepalive": 1,
            "idle": 2,
            "interval": 1,
            "count": 3,
            "user_timeout": 4000,
        }


def test_every_connection_carries_the_timeouts_and_keepalives(pg_url: str) -> None:
    store = SummaryStore(pg_url, busy_timeout=4)
    try:
        plumbing(store).thread_controls("t", "default")  # opens the control reader's connection
        assert store._db._controls is not None
        _assert_bounded(store._db._controls.connection)
        engine = store._db.sync_engine()
        with engine.connect() as first, engine.connect() as second:  # not only the first
            for conn in (first, second):
                _assert_bounded(conn.connection.driver_connection)
    finally:
        store.close()


async def test_every_async_connection_carries_the_timeouts_and_keepalives(pg_url: str) -> None:
    store = SummaryStore(pg_url, busy_timeout=4)
    try:
        engine = await store._db.async_engine()
        async with engine.connect() as first, engine.connect() as second:
            for conn in (first, second):
                shown = await conn.exec_driver_sql("SHOW statement_timeout")
                assert shown.scalar() == "4s"
                assert (await conn.exec_driver_sql("SHOW lock_timeout")).scalar() == "4s"
                raw = await conn.get_raw_connection()
                _assert_bounded(raw.driver_connection)
    finally:
        await store.aclose()
