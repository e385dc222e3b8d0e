"""The per-call control read on its own connection (store/_control_reads.py).

What it must keep: every change made by any process reaches the next read (on SQLite and
PostgreSQL), a database that went away is read anew, and a broken connection costs one fallback
to the engine, never a wrong answer. What it buys: on SQLite, a read when nothing was committed
since is one ``PRAGMA data_version`` and no query.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_compaction import SummaryStore
from langgraph_compaction.store.records import ThreadControls
from langgraph_compaction.store.summary_store import plumbing

_REQUEST = """
import sys
from langgraph_compaction import SummaryStore
with SummaryStore(sys.argv[1]) as store:
    store.request_compaction(sys.argv[2], instruction="Оставь идентификаторы как есть")
"""


def _request_from_another_process(url: str, thread_id: str) -> None:
    subprocess.run([sys.executable, "-c", _REQUEST, url, thread_id], check=True, timeout=60)


@pytest.mark.slow  # another process: seconds
def test_changes_from_any_process_reach_the_next_read(store_url: str) -> None:
    reader, writer = SummaryStore(store_url), SummaryStore(store_url)
    thread = "线程-1"
    try:
        assert plumbing(reader).thread_controls(thread, "default") == ThreadControls(0, False)
        writer.request_compaction(thread)  # another connection of this process
        assert plumbing(reader).thread_controls(thread, "default") == ThreadControls(1, True)
        pending = plumbing(writer).pending_request(thread, "default")
        assert pending is not None
        assert plumbing(writer).consume_request(thread, "default", pending)
        assert plumbing(reader).thread_controls(thread, "default") == ThreadControls(1, False)
        _request_from_another_process(store_url, thread)
        assert plumbing(reader).thread_controls(thread, "default") == ThreadControls(2, True)
        reader.pin_messages(thread, ["رسالة-1"])  # this store's own write
        assert plumbing(reader).thread_controls(thread, "default") == ThreadControls(3, True)
        writer.delete_thread(thread)
        after = plumbing(reader).thread_controls(thread, "default")
        assert after.version > 3 and not after.requested
    finally:
        reader.close()
        writer.close()


def test_nothing_committed_since_costs_no_query(tmp_path: Path) -> None:
    with SummaryStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
        store.request_compaction("seen")
        assert plumbing(store).thread_controls("seen", "default") == ThreadControls(1, True)
        assert store._db._controls is not None
        statements: list[str] = []
        store._db._controls.connection.set_trace_callback(statements.append)
        for _ in range(3):
            assert plumbing(store).thread_controls("seen", "default") == ThreadControls(1, True)
        assert statements == ["PRAGMA data_version"] * 3
        with SummaryStore(f"sqlite:///{tmp_path / 'store.db'}") as other:
            other.pin_messages("seen", ["m-1"])
        statements.clear()
        assert plumbing(store).thread_controls("seen", "default") == ThreadControls(2, True)
        assert [s.split()[0] for s in statements] == ["PRAGMA", "SELECT"]


def test_a_replaced_file_is_read_anew(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with SummaryStore(f"sqlite:///{path}") as store:
        store.request_compaction("t")
        assert plumbing(store).thread_controls("t", "default") == ThreadControls(1, True)
        with SummaryStore(f"sqlite:///{tmp_path / 'other.db'}") as other:
            for _ in range(3):
                other.pin_messages("t", [f"m-{_}"])
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        os.replace(tmp_path / "other.db", path)
        for suffix in ("-wal", "-shm"):
            Path(f"{tmp_path / 'other.db'}{suffix}").unlink(missing_ok=True)
        assert plumbing(store).thread_controls("t", "default") == ThreadControls(3, False)


def test_a_broken_connection_falls_back_to_the_engine(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        store.request_compaction("t")
        assert plumbing(store).thread_controls("t", "default") == ThreadControls(1, True)
        controls = store._db._controls
        assert controls is not None
        controls.connection.close()  # the server went away, say
        assert plumbing(store).thread_controls("t", "default") == ThreadControls(1, True)
        assert controls.connection is None  # dropped; the next read opens another
        store.request_compaction("t", instruction="second")
        assert plumbing(store).thread_controls("t", "default") == ThreadControls(2, True)
        assert controls.connection is not None


async def test_the_async_read_takes_the_same_connection(store_url: str) -> None:
    reader, writer = SummaryStore(store_url), SummaryStore(store_url)
    thread = "поток-2"
    try:
        await writer.arequest_compaction(thread)
        assert await plumbing(reader).athread_controls(thread, "default") == ThreadControls(1, True)
        assert reader._db._controls is not None  # read in a worker thread, not the async engine
        assert reader._db._controls.connection is not None
        await writer.apin_messages(thread, ["消息-1"])
        assert await plumbing(reader).athread_controls(thread, "default") == ThreadControls(2, True)
    finally:
        await reader.aclose()
        await writer.aclose()
