"""Writers of one process to one SQLite file take turns in-process, never in the busy handler.

The busy handler is observed by turning it off: a hook gives every write transaction's
connection ``PRAGMA busy_timeout = 0``, so a writer that meets another's lock at ``BEGIN
IMMEDIATE`` fails at once with "database is locked" instead of waiting. With the process's
write queue, no writer ever meets one. Assertions are on counts and order, never on time.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from _store_support import STORE_BACKENDS, store_database, summary_fields
from conversations import chat, graph_input
from fakes import RecordingSummarizer
from langchain_core.runnables import RunnableConfig
from sqlalchemy import Connection, Engine, event, text
from sqlalchemy.engine import make_url

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.pipeline.state import CompactionInput
from langgraph_compaction.store.db.engine import WRITE_OPTION, build_sync_engine, database_identity
from langgraph_compaction.store.db.write_queue import WriteQueue, write_queue
from langgraph_compaction.store.summary_store import plumbing

WRITERS, WRITES = 6, 15


def _forbid_busy_waits(engine: Engine) -> None:
    """Write transactions of ``engine`` fail at once on a held lock instead of waiting."""

    def before_begin(conn: Connection) -> None:
        write = bool(conn.get_execution_options().get(WRITE_OPTION, False))
        conn.exec_driver_sql(f"PRAGMA busy_timeout = {0 if write else 30_000}")

    event.listen(engine, "begin", before_begin, insert=True)  # before BEGIN IMMEDIATE


async def _strict_store(url: str) -> SummaryStore:
    """A store on ``url`` whose sync and async engines never wait in the busy handler."""
    store = SummaryStore(url)
    await asyncio.to_thread(store.list_summaries, "warm-up")  # the schema, before the hook
    _forbid_busy_waits(store._db.sync_engine())
    _forbid_busy_waits((await store._db.async_engine()).sync_engine)
    return store


def _identity(url: str) -> str:
    return database_identity(make_url(url))


async def _wait_for_waiters(queue: WriteQueue, count: int) -> None:
    """Until ``count`` writers wait in ``queue``; a generous bound, so a failure never hangs."""
    async with asyncio.timeout(60):
        while queue.waiting < count:
            await asyncio.sleep(0.001)


@pytest.mark.slow
async def test_sync_and_async_writers_of_one_file_never_meet_in_the_busy_handler(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    threads_store, tasks_store = await _strict_store(url), await _strict_store(url)
    start = threading.Barrier(WRITERS)

    def sync_writer(n: int) -> None:
        start.wait()
        for i in range(WRITES):
            plumbing(threads_store).record_failure(f"sync-{n}", "ns", message_count=i, error="boom")
            plumbing(threads_store).set_calibration(f"sync-{n}", "ns", 1.0 + i / 100)

    async def async_writer(n: int) -> None:
        for i in range(WRITES):
            await plumbing(tasks_store).arecord_failure(
                f"async-{n}", "ns", message_count=i, error="boom"
            )
            fields = summary_fields(f"async-{n}", "ns", i + 1)
            await plumbing(tasks_store).aadd_summary(**fields)

    try:
        await asyncio.gather(
            *(asyncio.to_thread(sync_writer, n) for n in range(WRITERS)),
            *(async_writer(n) for n in range(WRITERS)),
        )
        for n in range(WRITERS):
            state = await tasks_store.athread_state(f"sync-{n}", "ns")
            assert state.consecutive_failures == WRITES
            assert len(await tasks_store.alist_summaries(f"async-{n}", "ns")) == WRITES
            assert (
                await tasks_store.athread_state(f"async-{n}", "ns")
            ).consecutive_failures == WRITES
    finally:
        await threads_store.aclose()
        await tasks_store.aclose()


async def test_sync_and_async_writers_take_their_turns_in_arrival_order() -> None:
    queue = WriteQueue("order")
    await queue.aacquire(timeout=60)
    order: list[str] = []
    workers: list[threading.Thread] = []
    tasks: list[asyncio.Task[None]] = []

    def thread_writer(name: str) -> None:
        with queue.hold(timeout=60):
            order.append(name)

    async def task_writer(name: str) -> None:
        async with queue.ahold(timeout=60):
            order.append(name)

    arrivals = [f"{kind}-{i}" for i in range(4) for kind in ("thread", "task")]
    for position, name in enumerate(arrivals, start=1):
        if name.startswith("thread"):
            workers.append(threading.Thread(target=thread_writer, args=(name,)))
            workers[-1].start()
        else:
            tasks.append(asyncio.create_task(task_writer(name)))
        await _wait_for_waiters(queue, position)
    queue.release()
    await asyncio.gather(*tasks)
    for worker in workers:
        await asyncio.to_thread(worker.join)
    assert order == arrivals
    assert not queue.locked() and queue.waiting == 0


async def test_stores_on_one_file_share_the_queue_and_other_files_do_not(
    tmp_path: Path,
) -> None:
    await asyncio.to_thread((tmp_path / "sub").mkdir)
    same = f"sqlite:///{tmp_path / 'sub' / '..' / 'a.db'}"  # another spelling of a.db
    first, second = SummaryStore(f"sqlite:///{tmp_path / 'a.db'}"), SummaryStore(same)
    other = SummaryStore(f"sqlite:///{tmp_path / 'b.db'}")
    for store in (first, second, other):
        await asyncio.to_thread(store.list_summaries, "warm-up")
    queue = write_queue(_identity(first.url))
    await queue.aacquire(timeout=60)
    try:
        # Another file's writer goes ahead while a.db's lock is held.
        await asyncio.to_thread(
            plumbing(other).record_failure, "t", "ns", message_count=1, error="x"
        )
        assert queue.waiting == 0
        # The second store's sync and async writers wait in the first one's queue.
        blocked = asyncio.gather(
            asyncio.to_thread(
                plumbing(second).record_failure, "t", "ns", message_count=1, error="x"
            ),
            plumbing(second).arecord_failure("t", "ns", message_count=2, error="x"),
        )
        await _wait_for_waiters(queue, 2)
        assert (await first.athread_state("t", "ns")).consecutive_failures == 0
    finally:
        queue.release()
    await blocked
    assert (await first.athread_state("t", "ns")).consecutive_failures == 2
    assert not queue.locked()
    for store in (first, second, other):
        await store.aclose()


async def test_a_cancelled_waiter_never_keeps_the_lock() -> None:
    queue = WriteQueue("cancel")
    await queue.aacquire(timeout=60)

    # Cancelled while it waits: it leaves the queue.
    waiting = asyncio.create_task(queue.aacquire(timeout=60))
    await _wait_for_waiters(queue, 1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert queue.waiting == 0 and queue.locked()

    # Cancelled after the lock was handed to it, before it woke: it passes the lock on.
    handed = asyncio.create_task(queue.aacquire(timeout=60))
    await _wait_for_waiters(queue, 1)
    queue.release()  # the task now owns the lock, but has not run yet
    handed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await handed
    assert not queue.locked() and queue.waiting == 0
    async with queue.ahold(timeout=60):
        assert queue.locked()
    assert not queue.locked()


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_writer_waits_in_the_queue_at_most_busy_timeout(
    tmp_path: Path, is_async: bool
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = SummaryStore(url, busy_timeout=0.05)
    await asyncio.to_thread(store.list_summaries, "warm-up")
    queue = write_queue(_identity(url))
    await queue.aacquire(timeout=60)

    async def write(count: int) -> None:
        if is_async:
            await plumbing(store).arecord_failure("t", "ns", message_count=count, error="x")
        else:
            await asyncio.to_thread(
                plumbing(store).record_failure, "t", "ns", message_count=count, error="x"
            )

    try:
        with pytest.raises(SummaryStoreError, match=r"write lock .*busy_timeout") as failed:
            await write(1)
        assert str(tmp_path / "store.db") in str(failed.value)
        assert queue.waiting == 0
    finally:
        queue.release()
    assert not queue.locked()
    await write(2)
    assert (await store.athread_state("t", "ns")).consecutive_failures == 1
    await store.aclose()


def _run_conversations(
    invoke: Callable[[CompactionInput, RunnableConfig], None], threads: int, turns: int
) -> list[str]:
    """``threads`` workers, one conversation each, ``turns`` calls per conversation."""
    histories = [chat(turns, prefix=f"c{n}-") for n in range(threads)]
    errors: list[str] = []
    start = threading.Barrier(threads)

    def work(n: int) -> None:
        start.wait()
        config: RunnableConfig = {"configurable": {"thread_id": f"conversation-{n}"}}
        for turn in range(turns):
            try:  # the history up to this turn's question, as an agent calls its model
                invoke(graph_input(histories[n][: 2 + 2 * turn]), config)
            except Exception as exc:
                errors.append(repr(exc))

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return errors


def _duplicates(engine: Engine) -> tuple[int, int]:
    """Summary rows, and prefixes of a thread stored more than once."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT count(*) FROM compaction_summaries")).scalar_one()
        duplicates = conn.execute(
            text(
                "SELECT count(*) FROM (SELECT 1 FROM compaction_summaries "
                "GROUP BY thread_id, namespace, prefix_hash HAVING count(*) > 1) AS d"
            )
        ).scalar_one()
    return int(rows), int(duplicates)


@pytest.mark.slow
@pytest.mark.parametrize("database", STORE_BACKENDS)
def test_threads_driving_conversations_store_one_summary_per_prefix(
    tmp_path: Path, database: str
) -> None:
    summarizer = RecordingSummarizer()
    with store_database(database, tmp_path) as url:
        store = SummaryStore(url)
        store.list_summaries("warm-up")
        if database == "sqlite":
            _forbid_busy_waits(store._db.sync_engine())
        config = {
            "trigger": {"type": "tokens", "value": 1200},
            "keep": {"type": "messages", "value": 4},
        }
        graph = create_compaction_graph(config, model=summarizer, store=store)
        actions: list[str] = []

        def invoke(state: CompactionInput, run_config: RunnableConfig) -> None:
            report = graph.invoke(state, run_config)["compaction"]
            assert report is not None
            actions.append(report.action)

        errors = _run_conversations(invoke, threads=4, turns=30)
        rows, duplicates = _duplicates(store._db.sync_engine())
        store.close()
        assert errors == []
        assert "failed" not in actions
        assert actions.count("summarized") == rows == summarizer.call_count
        assert rows >= 8  # every conversation was summarized more than once
        assert duplicates == 0
        check = subprocess.run(
            [sys.executable, "-m", "langgraph_compaction.store", "check", "--url", url],
            capture_output=True,
            text=True,
            check=False,
        )
        assert check.returncode == 0, check.stdout + check.stderr


async def test_sqlite_commits_wait_for_the_disk_only_at_checkpoints_in_wal(
    tmp_path: Path,
) -> None:
    store = SummaryStore(f"sqlite:///{tmp_path / 'store.db'}")
    await asyncio.to_thread(store.list_summaries, "warm-up")
    async with (await store._db.async_engine()).connect() as conn:
        assert (await conn.exec_driver_sql("PRAGMA synchronous")).scalar_one() == 1  # NORMAL

    def sync_pragmas() -> tuple[object, object]:
        with store._db.sync_engine().connect() as conn:
            mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar_one()
            return mode, conn.exec_driver_sql("PRAGMA synchronous").scalar_one()

    assert await asyncio.to_thread(sync_pragmas) == ("wal", 1)
    await store.aclose()

    # A file left in rollback-journal mode (the inspect CLI never switches it) keeps FULL.
    def rollback_file_pragma() -> object:
        engine = build_sync_engine(make_url(f"sqlite:///{tmp_path / 'other.db'}"), wal=False)
        try:
            with engine.connect() as conn:
                return conn.exec_driver_sql("PRAGMA synchronous").scalar_one()
        finally:
            engine.dispose()

    assert await asyncio.to_thread(rollback_file_pragma) == 2  # FULL


def _write_in_child(url: str) -> None:
    """A forked child's write: exit code 0 if it went through."""
    store = SummaryStore(url, busy_timeout=5)
    try:
        plumbing(store).record_failure("child", "ns", message_count=1, error="x")
    except SummaryStoreError:
        os._exit(1)
    os._exit(0)


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="no fork on this platform")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_child_forked_while_a_thread_holds_the_lock_can_write(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = SummaryStore(url)
    store.list_summaries("warm-up")
    held, done = threading.Event(), threading.Event()

    def holder() -> None:
        with write_queue(_identity(url)).hold(timeout=60):
            held.set()
            done.wait(60)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(60)
        child = multiprocessing.get_context("fork").Process(target=_write_in_child, args=(url,))
        child.start()
        child.join(60)
        assert child.exitcode == 0  # the holder thread did not follow it into the child
    finally:
        done.set()
        thread.join()
    assert store.thread_state("child", "ns").consecutive_failures == 1
    store.close()
