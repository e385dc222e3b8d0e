"""``latest_summaries`` on the control reader's connection (store/_control_reads.py).

A restarted worker's first call reads the thread's newest summaries; on the reader's own
connection that read skips the engine's pool checkout and transaction. It must give exactly
what the engine's read gives (timestamps as aware datetimes, revoked rows left out, the limit
kept) and see every write of any store object at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from langgraph_compaction import SummaryStore
from langgraph_compaction.store.records import SummaryRecord
from langgraph_compaction.store.sql import summaries as summary_sql
from langgraph_compaction.store.summary_store import plumbing

TEXTS = ("Пользователь просил отчёт", "用户要求一份报告", "طلب المستخدم تقريرا", "report v4")


def _add(store: SummaryStore, thread: str, version: int, parent: SummaryRecord | None) -> Any:
    return plumbing(store).add_summary(
        thread_id=thread,
        namespace="default",
        parent_id=None if parent is None else parent.id,
        boundary_message_id=f"m-{version}",
        covered_messages=version * 10,
        prefix_hash=f"hash-{version}",
        summary=TEXTS[(version - 1) % len(TEXTS)],
        summary_tokens=20,
        source_tokens=200,
        kind="initial" if parent is None else "update",
        model="fake",
        rescued_message_ids=[f"рез-{version}"],
        input_tokens=100 if version % 2 else None,
    )


def _through_engine(store: SummaryStore, thread: str, limit: int) -> list[SummaryRecord]:
    return store._db.run(lambda c: summary_sql.latest_summaries(c, thread, "default", limit))


def test_it_reads_what_the_engine_reads_and_sees_every_write(store_url: str) -> None:
    reader, writer = SummaryStore(store_url), SummaryStore(store_url)
    thread = "ветка-1"
    try:
        assert reader.latest_summaries(thread, "default", 8) == []
        previous = None
        for version in range(1, 5):
            previous = _add(writer, thread, version, previous)
            read = reader.latest_summaries(thread, "default", 3)
            assert read == _through_engine(writer, thread, 3)
            assert [r.version for r in read] == list(range(version, max(0, version - 3), -1))
        assert read[0].created_at.tzinfo is not None
        assert read[0].rescued_message_ids == ("рез-4",)
        writer.revoke_summary(thread, version=4)
        assert [r.version for r in reader.latest_summaries(thread, "default", 8)] == [3, 2, 1]
        read = asyncio.run(reader.alatest_summaries(thread, "default", 2))
        assert read == _through_engine(writer, thread, 2)
    finally:
        reader.close()
        writer.close()


def test_it_does_not_go_through_the_engine(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with SummaryStore(store_url) as store:
        first = _add(store, "t", 1, None)
        expected = store.latest_summaries("t", "default", 8)

        def no_engine(*_: Any, **__: Any) -> Any:
            raise AssertionError("read through the engine")

        monkeypatch.setattr(store._db, "run", no_engine)
        assert store.latest_summaries("t", "default", 8) == expected == [first]


def test_a_broken_connection_falls_back_to_the_engine(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        first = _add(store, "t", 1, None)
        assert store.latest_summaries("t", "default", 8) == [first]
        assert store._db._controls is not None
        store._db._controls.connection.close()  # the next read fails on it, then reopens
        _add(store, "t", 2, first)
        assert [r.version for r in store.latest_summaries("t", "default", 8)] == [2, 1]
        assert [r.version for r in store.latest_summaries("t", "default", 8)] == [2, 1]
