"""Deletion is final: generations checked inside the write, and the process's deletion epochs.

Every write given the generation its caller read refuses to write once the thread was
deleted, on SQLite and PostgreSQL, sync and async; a worker process whose thread is deleted
between its ``thread_state`` read and its ``add_summary`` leaves no row behind. The epoch
that tells the pipeline to drop a cached summary is shared by every store object of a
process on one database, and costs a dict lookup.
"""

from __future__ import annotations

import threading
import time
import timeit
from collections.abc import Iterator
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any
from uuid import uuid4

import _store_workers as workers
import pytest
from _store_support import call, preloaded_forkserver, summary_fields

from langgraph_compaction.errors import SummaryStoreError, ThreadDeletedError
from langgraph_compaction.store import SummaryStore, ThreadState
from langgraph_compaction.store.summary_store import plumbing

TIMEOUT_S = 60


WRITES: dict[str, Any] = {
    "add_summary": lambda t, ns: ((), summary_fields(t, ns, 1)),
    "record_failure": lambda t, ns: ((t, ns), {"message_count": 3, "error": "boom"}),
    "reset_failures": lambda t, ns: ((t, ns), {}),
    "set_calibration": lambda t, ns: ((t, ns, 1.25), {}),
}


@pytest.mark.parametrize("write", sorted(WRITES))
async def test_a_write_with_a_stale_generation_writes_nothing(
    summary_store: SummaryStore, is_async: bool, write: str
) -> None:
    s = summary_store
    t, ns = f"t-{uuid4().hex[:8]}", "default"
    args, kwargs = WRITES[write](t, ns)
    await call(s, is_async, "record_failure", t, ns, message_count=1, error="first")
    before = await call(s, is_async, "thread_state", t, ns)
    assert before.generation == 0

    await call(s, is_async, "delete_thread", t, ns)
    with pytest.raises(ThreadDeletedError, match=r"deleted after it was read \(generation 0"):
        await call(s, is_async, write, *args, **kwargs, generation=before.generation)

    assert await call(s, is_async, "list_summaries", t, ns) == []
    assert await call(s, is_async, "thread_state", t, ns) == ThreadState(
        t, ns, 0, None, None, None, 1
    )
    # A new conversation on the same id reads the new generation and works normally.
    await call(s, is_async, write, *args, **kwargs, generation=1)


async def test_thread_deleted_error_is_a_store_error_naming_the_store(
    summary_store: SummaryStore,
    is_async: bool,
) -> None:
    s = summary_store
    await call(s, is_async, "delete_thread", "t")
    with pytest.raises(SummaryStoreError, match=r"^summary store .*thread 't'") as caught:
        await call(s, is_async, "add_summary", **summary_fields("t", "default", 1), generation=0)
    assert type(caught.value) is ThreadDeletedError


async def test_deleting_every_namespace_covers_namespaces_not_written_yet(
    summary_store: SummaryStore,
    is_async: bool,
) -> None:
    s = summary_store
    t = f"t-{uuid4().hex[:8]}"
    fresh = await call(s, is_async, "thread_state", t, "written-later")
    await call(s, is_async, "add_summary", **summary_fields(t, "a", 1))

    assert await call(s, is_async, "delete_thread", t) == 1
    with pytest.raises(ThreadDeletedError):
        await call(
            s,
            is_async,
            "add_summary",
            **summary_fields(t, "written-later", 1),
            generation=fresh.generation,
        )
    assert (await call(s, is_async, "thread_state", t, "written-later")).generation == 1
    assert await call(s, is_async, "list_summaries", t, "written-later") == []


def test_generation_rows_survive_the_deletion_and_nothing_else(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "store.db"
    with SummaryStore(f"sqlite:///{path}") as store:
        plumbing(store).add_summary(**summary_fields("t", "ns", 1))
        plumbing(store).set_calibration("t", "ns", 1.5)
        lease = plumbing(store).acquire_lease("t", "ns", "p")
        assert lease is not None
        store.delete_thread("t", "ns")
        plumbing(store).release_lease(lease)
    with sqlite3.connect(path) as raw:
        counts = {
            table: raw.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in (
                "compaction_summaries",
                "compaction_threads",
                "compaction_leases",
                "compaction_generations",
            )
        }
    assert counts == {
        "compaction_summaries": 0,
        "compaction_threads": 0,
        "compaction_leases": 0,
        "compaction_generations": 1,
    }


# -- the process-local epoch ---------------------------------------------------------------------


async def test_the_deletion_epoch_is_shared_by_every_store_on_one_database(
    summary_store: SummaryStore, is_async: bool, store_url: str, tmp_path: Path
) -> None:
    s = summary_store
    other = SummaryStore(store_url)  # another object, same database
    elsewhere = SummaryStore(f"sqlite:///{tmp_path / 'elsewhere.db'}")
    t = f"t-{uuid4().hex[:8]}"
    assert plumbing(other).deletion_epoch(t, "a") == 0

    await call(s, is_async, "delete_thread", t, "a")
    assert (plumbing(other).deletion_epoch(t, "a"), plumbing(other).deletion_epoch(t, "b")) == (
        1,
        0,
    )
    await call(s, is_async, "delete_thread", t)  # every namespace
    assert (plumbing(other).deletion_epoch(t, "a"), plumbing(other).deletion_epoch(t, "b")) == (
        2,
        1,
    )
    assert plumbing(elsewhere).deletion_epoch(t, "a") == 0
    assert plumbing(s).deletion_epoch(f"{t}-x", "a") == 0


def test_a_relative_and_an_absolute_sqlite_path_share_the_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    relative, absolute = SummaryStore("sqlite:///s.db"), SummaryStore(f"sqlite:///{tmp_path}/s.db")
    relative.delete_thread("t")
    assert plumbing(absolute).deletion_epoch("t", "default") == 1
    relative.close()
    absolute.close()


def test_the_deletion_epoch_costs_a_dict_lookup(tmp_path: Path) -> None:
    store = SummaryStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.delete_thread("t")
    runs = 200_000
    seconds = min(
        timeit.repeat(lambda: plumbing(store).deletion_epoch("t", "default"), number=runs, repeat=5)
    )
    per_call_us = seconds / runs * 1e6
    print(f"deletion_epoch: {per_call_us:.3f} us per call")
    assert per_call_us < 2.0  # about 0.2 us here; generous for a shared machine
    store.close()


# -- across processes ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def forkserver() -> Iterator[ForkServerContext]:
    yield from preloaded_forkserver()


@pytest.mark.slow
@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_deletion_between_a_workers_read_and_its_write_leaves_no_row(
    forkserver: Any, store_url: str, use_async: bool
) -> None:
    read, deleted, results = forkserver.Event(), forkserver.Event(), forkserver.Queue()
    worker = forkserver.Process(
        target=workers.run_and_report,
        args=(results, 0, workers.add_after_deletion, store_url, "t", read, deleted, use_async),
    )
    worker.start()
    try:
        assert read.wait(TIMEOUT_S), "the worker never read the thread state"
        with SummaryStore(store_url) as store:
            store.delete_thread("t")
        deleted.set()
        _, status, value = results.get(timeout=TIMEOUT_S)
    finally:
        worker.join(timeout=TIMEOUT_S)
        if worker.is_alive():
            worker.kill()
    assert status == "ok", value
    assert value == "ThreadDeletedError"
    with SummaryStore(store_url) as store:
        assert store.list_summaries("t") == []
        assert store.thread_state("t", "default").generation == 1
        assert store.check_integrity() == []


def test_the_worker_body_writes_when_nobody_deletes(store_url: str) -> None:
    # The control of the test above: the same body, no deletion, stores its summary.
    read, deleted = threading.Event(), threading.Event()
    deleted.set()
    started = time.monotonic()
    assert workers.add_after_deletion(store_url, "t", read, deleted, False) == "stored"
    assert time.monotonic() - started < TIMEOUT_S
    with SummaryStore(store_url) as store:
        assert len(store.list_summaries("t")) == 1
