"""The async store never blocks the event loop, checked as ``langgraph dev`` checks it.

Every async method runs under ``blocking_guard()`` (blockbuster configured exactly as LangGraph's
in-memory runtime configures it) on a fresh store, on an existing one, on one that needs a
migration, and in memory, on SQLite and PostgreSQL. The first test shows the guard catches
what the store used to do: migrate through ``run_sync`` on the loop (``os.access``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _blocking import BlockingError, blocking_guard
from _store_support import summary_fields
from alembic import command
from sqlalchemy import create_engine

from langgraph_compaction.store import SummaryStore
from langgraph_compaction.store.db.engine import build_async_engine, derive_urls
from langgraph_compaction.store.schema.migrate import alembic_config, ensure_schema
from langgraph_compaction.store.summary_store import plumbing


async def every_async_method(store: SummaryStore) -> None:
    """Each async method once, as a compaction and its upkeep would call them."""
    t, ns = "t", "default"
    state = await store.athread_state(t, ns)
    assert await store.alatest_summaries(t, ns) == []
    assert await plumbing(store).afind_summary(t, ns, "prefix-1") is None
    lease = await plumbing(store).aacquire_lease(t, ns, "prefix-1")
    assert lease is not None
    record = await plumbing(store).aadd_summary(
        **summary_fields(t, ns, 1), generation=state.generation
    )
    await plumbing(store).arelease_lease(lease)
    assert [r.id for r in await store.alist_summaries(t, ns)] == [record.id]
    await plumbing(store).arecord_failure(
        t, ns, message_count=3, error="x", generation=state.generation
    )
    await plumbing(store).areset_failures(t, ns, generation=state.generation)
    await plumbing(store).aset_calibration(t, ns, 1.2, generation=state.generation)
    assert await store.acheck_integrity() == []
    assert await store.adelete_thread(t) == 1
    await store.aclose()


def run_guarded(store: SummaryStore) -> None:
    with blocking_guard():
        asyncio.run(every_async_method(store))


def test_the_guard_catches_a_migration_on_the_loop(store_url: str) -> None:
    # What the store did before: Alembic read its scripts on the loop, through run_sync.
    async def migrate_on_the_loop() -> None:
        engine = await asyncio.to_thread(build_async_engine, derive_urls(store_url)[1])
        try:
            async with engine.connect() as conn, conn.begin():
                await conn.run_sync(ensure_schema)
        finally:
            await engine.dispose()

    with blocking_guard(), pytest.raises(BlockingError, match=r"os\.access"):
        asyncio.run(migrate_on_the_loop())


def test_every_async_method_on_a_fresh_store(store_url: str) -> None:
    run_guarded(SummaryStore(store_url))


def test_every_async_method_on_an_existing_store(store_url: str) -> None:
    with SummaryStore(store_url) as first:  # made outside the guard, by the sync path
        plumbing(first).add_summary(**summary_fields("other", "default", 1))
    run_guarded(SummaryStore(store_url))


def test_every_async_method_on_a_store_that_needs_a_migration(store_url: str) -> None:
    with SummaryStore(store_url) as first:
        first.list_summaries("t")
    engine = create_engine(derive_urls(store_url)[0])
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0002")
    engine.dispose()
    run_guarded(SummaryStore(store_url))


def test_every_async_method_on_a_memory_store() -> None:
    run_guarded(SummaryStore("sqlite:///:memory:"))


def test_a_sync_call_on_the_loop_is_caught(tmp_path: Path) -> None:
    # The control: the guard is live in these tests, so a blocking store call would fail them.
    store = SummaryStore(f"sqlite:///{tmp_path / 'store.db'}")

    async def sync_on_the_loop() -> None:
        store.list_summaries("t")

    with blocking_guard(), pytest.raises(Exception, match="Blocking call"):
        asyncio.run(sync_on_the_loop())
    store.close()
