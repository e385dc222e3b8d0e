"""Stores that change under a running process: the next call notices and makes the schema again.

A SQLite file deleted (with its -wal and -shm) or replaced by another store's file, a
PostgreSQL schema or a whole database dropped and created again: the store's engines live on,
but what they reach is not the database any more. The next call opens the database again and
makes its schema, so a summary reported ``summarized`` is always a row a fresh connection can
read; when the database cannot be made again, the call reports the store as the cause.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg
import pytest
from _store_support import (
    STORE_BACKENDS,
    call,
    pg_admin,
    pg_schema,
    pg_server_url,
    summary_fields,
)
from conversations import CompactionGraph, chat, graph_input
from fakes import RecordingSummarizer
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.errors import SummaryStoreError, ThreadDeletedError
from langgraph_compaction.store.summary_store import plumbing

CONFIG: dict[str, Any] = {
    "context_window": 3000,
    "trigger": {"type": "tokens", "value": 2000},
    "keep": {"type": "messages", "value": 6},
}
CHANGES = ("sqlite-deleted", "sqlite-replaced", "postgres-schema", "postgres-database")
assert {change.split("-")[0] for change in CHANGES} == set(STORE_BACKENDS)


@dataclass
class Change:
    """A database and a way to take it away under the store, then read what it really holds."""

    url: str
    change: Callable[[], None]
    """Delete, replace, or drop and create again (blocking: call it off the loop)."""
    summaries: Callable[[str], list[str]]
    """The summaries of a thread as a new connection reads them (blocking too)."""
    holds: str | None = None
    """A thread the database that takes the old one's place holds a summary of."""


def _sqlite_summaries(path: Path) -> Callable[[str], list[str]]:
    def read(thread: str) -> list[str]:
        if not path.exists():
            return []
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            rows = conn.execute(
                "SELECT summary FROM compaction_summaries WHERE thread_id = ? ORDER BY version",
                (thread,),
            )
            return [row[0] for row in rows]

    return read


def _remove_sqlite(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _pg_summaries(url: str, schema: str | None) -> Callable[[str], list[str]]:
    def read(thread: str) -> list[str]:
        table = "compaction_summaries" if schema is None else f'"{schema}".compaction_summaries'
        with psycopg.connect(url.split("?")[0]) as conn:
            rows = conn.execute(
                f"SELECT summary FROM {table} WHERE thread_id = %s ORDER BY version", (thread,)
            )
            return [row[0] for row in rows]

    return read


@contextmanager
def _pg_database() -> Iterator[tuple[str, str]]:
    """A new database of its own on the test server (its URL and name), dropped after."""
    name = f"lgc_change_{uuid4().hex[:12]}"
    base = pg_server_url()
    with pg_admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{base.rsplit('/', 1)[0]}/{name}", name
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _recreate_database(name: str) -> None:
    with pg_admin() as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        admin.execute(f'DROP DATABASE "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')


def _recreate_schema(schema: str) -> None:
    with pg_admin() as admin:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        admin.execute(f'CREATE SCHEMA "{schema}"')


@pytest.fixture(params=CHANGES)
def change(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Change]:
    kind = request.param
    if kind.startswith("sqlite"):
        path = tmp_path / "store.db"
        if kind == "sqlite-deleted":
            yield Change(f"sqlite:///{path}", lambda: _remove_sqlite(path), _sqlite_summaries(path))
            return
        other = tmp_path / "other.db"
        with SummaryStore(f"sqlite:///{other}") as store:  # another store's file, closed
            plumbing(store).add_summary(**summary_fields("other-thread", "default", 1))

        def replace() -> None:
            _remove_sqlite(path)
            shutil.copy(other, path)

        yield Change(f"sqlite:///{path}", replace, _sqlite_summaries(path), "other-thread")
    elif kind == "postgres-schema":
        with pg_schema() as url:
            schema = url.rsplit("%3D", 1)[1]
            yield Change(url, lambda: _recreate_schema(schema), _pg_summaries(url, schema))
    else:
        with _pg_database() as (url, name):
            yield Change(url, lambda: _recreate_database(name), _pg_summaries(url, None))


@pytest.fixture
async def changing_store(change: Change) -> AsyncIterator[SummaryStore]:
    store = SummaryStore(change.url)
    yield store
    await store.aclose()


async def _change(change: Change) -> None:
    await asyncio.to_thread(change.change)


async def _on_disk(change: Change, thread: str) -> list[str]:
    return await asyncio.to_thread(change.summaries, thread)


# -- the store ----------------------------------------------------------------------------------


async def test_the_next_write_lands_in_the_database_that_is_there_now(
    change: Change, changing_store: SummaryStore, is_async: bool
) -> None:
    def run(name: str, *args: Any, **kwargs: Any) -> Awaitable[Any]:
        return call(changing_store, is_async, name, *args, **kwargs)

    before = await run("add_summary", **summary_fields("t1", "default", 1))
    assert await _on_disk(change, "t1") == [before.summary]
    await run("record_failure", "t1", "default", message_count=3, error="boom")

    await _change(change)

    after = await run("add_summary", **summary_fields("t2", "default", 1, summary="After."))
    assert await _on_disk(change, "t2") == ["After."]  # a new connection reads it
    assert await run("list_summaries", "t2") == [after]
    assert await run("list_summaries", "t1") == []  # it went with the database
    assert (await run("thread_state", "t1", "default")).consecutive_failures == 0
    if change.holds is not None:  # another store's file: read as it is
        assert len(await run("list_summaries", change.holds)) == 1
    assert await run("check_integrity") == []


async def test_a_deletion_made_after_the_schema_came_back_stays_final(
    change: Change, changing_store: SummaryStore, is_async: bool
) -> None:
    def run(name: str, *args: Any, **kwargs: Any) -> Awaitable[Any]:
        return call(changing_store, is_async, name, *args, **kwargs)

    await run("add_summary", **summary_fields("t", "default", 1))
    read = await run("thread_state", "t", "default")
    await _change(change)

    await run("delete_thread", "t")  # the first call on the new database: made again, then run
    with pytest.raises(ThreadDeletedError):
        await run("add_summary", **summary_fields("t", "default", 2), generation=read.generation)
    assert await _on_disk(change, "t") == []
    now = await run("thread_state", "t", "default")
    assert now.generation == read.generation + 1
    await run("add_summary", **summary_fields("t", "default", 3), generation=now.generation)
    assert len(await _on_disk(change, "t")) == 1


async def test_a_schema_that_cannot_be_made_again_fails_the_call_and_recovers_later(
    pg_url: str, is_async: bool
) -> None:
    schema = pg_url.rsplit("%3D", 1)[1]
    store = SummaryStore(pg_url)
    try:
        await call(store, is_async, "add_summary", **summary_fields("t", "default", 1))
        await asyncio.to_thread(_drop_schema, schema)
        with pytest.raises(SummaryStoreError, match="summary store postgresql"):
            await call(store, is_async, "list_summaries", "t")
        await asyncio.to_thread(_create_schema, schema)
        assert await call(store, is_async, "list_summaries", "t") == []
    finally:
        await store.aclose()


def _drop_schema(schema: str) -> None:
    with pg_admin() as admin:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _create_schema(schema: str) -> None:
    with pg_admin() as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')


# -- through the graph --------------------------------------------------------------------------


async def _invoke(
    graph: CompactionGraph, thread: str, is_async: bool, turns: int = 20
) -> dict[str, Any]:
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    if is_async:
        return dict(await graph.ainvoke(graph_input(chat(turns)), config))
    return dict(await asyncio.to_thread(graph.invoke, graph_input(chat(turns)), config))


async def test_a_graph_reports_summarized_only_for_a_row_in_the_database(
    change: Change, changing_store: SummaryStore, is_async: bool
) -> None:
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(CONFIG, model=summarizer, store=changing_store)
    first = (await _invoke(graph, "before", is_async))["compaction"]
    assert first.action == "summarized"
    assert len(await _on_disk(change, "before")) == 1

    await _change(change)

    for thread in ("after-1", "after-2"):
        report = (await _invoke(graph, thread, is_async))["compaction"]
        assert (report.action, report.error) == ("summarized", None)
        (stored,) = await _on_disk(change, thread)
        assert (await changing_store.alist_summaries(thread))[0].summary == stored
    assert summarizer.call_count == 3


async def test_a_graph_reports_the_store_when_the_schema_cannot_be_made(
    pg_url: str, is_async: bool
) -> None:
    schema = pg_url.rsplit("%3D", 1)[1]
    store = SummaryStore(pg_url)
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    try:
        assert (await _invoke(graph, "a", is_async))["compaction"].action == "summarized"
        await asyncio.to_thread(_drop_schema, schema)

        gone = (await _invoke(graph, "b", is_async))["compaction"]
        assert gone.action == "failed"
        assert gone.error is not None and "summary store unavailable" in gone.error
        assert summarizer.call_count == 1  # nothing paid for that cannot be stored

        await asyncio.to_thread(_create_schema, schema)
        back = (await _invoke(graph, "c", is_async))["compaction"]
        assert back.action == "summarized"
        assert len(await asyncio.to_thread(_pg_summaries(pg_url, schema), "c")) == 1
    finally:
        await store.aclose()


async def test_a_graph_reports_the_store_when_the_file_cannot_be_made_again(
    tmp_path: Path, is_async: bool
) -> None:
    folder = tmp_path / "data"
    await asyncio.to_thread(folder.mkdir)
    store = SummaryStore(f"sqlite:///{folder / 'store.db'}")
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    try:
        assert (await _invoke(graph, "a", is_async))["compaction"].action == "summarized"
        await asyncio.to_thread(shutil.rmtree, folder)  # the file, its -wal and -shm, the folder

        gone = (await _invoke(graph, "b", is_async))["compaction"]
        assert gone.action == "failed"
        assert gone.error is not None and "summary store unavailable" in gone.error
        assert summarizer.call_count == 1

        await asyncio.to_thread(folder.mkdir)
        back = (await _invoke(graph, "c", is_async))["compaction"]
        assert back.action == "summarized"
        assert len(await asyncio.to_thread(_sqlite_summaries(folder / "store.db"), "c")) == 1
    finally:
        await store.aclose()
