"""SummaryStore on every backend: one test body for SQLite and PostgreSQL, sync and async.

The PostgreSQL cases use the server at 127.0.0.1:5432 (see ``_store_support``) inside a
schema made for this session and dropped afterwards; they are skipped, saying why, when no
server answers (and fail under CI).
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from _store_support import Backend, summary_fields
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.exc import IntegrityError

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store import SummaryRecord, SummaryStore, ThreadState
from langgraph_compaction.store import database as database_module
from langgraph_compaction.store.cli.inspect import load_report
from langgraph_compaction.store.cli.inspect import main as inspect_main
from langgraph_compaction.store.db.engine import derive_urls
from langgraph_compaction.store.schema.migrate import SCHEMA_VERSION
from langgraph_compaction.store.sql import summaries as _tables
from langgraph_compaction.store.summary_store import plumbing

# -- fixtures: `backend`, `sqlite_backend` and `store_url` come from conftest.py ----------------


def fields(b: Backend, n: int, **overrides: Any) -> dict[str, Any]:
    """add_summary arguments for the n-th summary of the backend's thread."""
    return {**summary_fields(b.thread, b.ns, n, model="gpt-4o-mini"), **overrides}


async def add_chain(
    b: Backend, count: int, store: SummaryStore | None = None
) -> list[SummaryRecord]:
    """Add ``count`` summaries, each the update of the one before."""
    call = b.on(store or b.store)
    records: list[SummaryRecord] = []
    for n in range(1, count + 1):
        parent = records[-1].id if records else None
        records.append(await call("add_summary", **fields(b, n, parent_id=parent)))
    return records


@contextmanager
def raw_sqlite(path: Path | str) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection, as a person with a SQLite browser would open the file."""
    with closing(sqlite3.connect(path)) as raw, raw:
        yield raw


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "langgraph_compaction.store", "inspect", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


# -- summaries ----------------------------------------------------------------------------------


async def test_round_trip_keeps_every_field(backend: Backend) -> None:
    before = datetime.now(UTC)
    text = "Goal: ship v2.\n- keep `/srv/app.py` verbatim; ünïcode ✓"
    added = await backend.add_summary(
        **fields(backend, 1, summary=text, rescued_message_ids=["m-3", "m-7"])
    )
    plain = await backend.add_summary(**fields(backend, 2, parent_id=added.id, model=None))

    [stored, stored_plain] = await backend.list_summaries(backend.thread, backend.ns)
    assert (stored, stored_plain) == (added, plain)
    assert re.fullmatch(r"[0-9a-f]{32}", stored.id)
    assert stored.thread_id == backend.thread and stored.namespace == backend.ns
    assert (stored.version, stored.parent_id) == (1, None)
    assert (stored.boundary_message_id, stored.covered_messages) == ("msg-1", 10)
    assert (stored.prefix_hash, stored.summary) == ("prefix-1", text)
    assert (stored.summary_tokens, stored.source_tokens) == (21, 1000)
    assert (stored.kind, stored.model) == ("initial", "gpt-4o-mini")
    assert stored.rescued_message_ids == ("m-3", "m-7")
    assert stored.created_at.utcoffset() == timedelta(0)
    assert before <= stored.created_at <= datetime.now(UTC)
    assert (stored_plain.version, stored_plain.parent_id) == (2, added.id)
    assert (stored_plain.kind, stored_plain.model) == ("update", None)
    assert stored_plain.rescued_message_ids == ()
    assert await backend.find_summary(backend.thread, backend.ns, "prefix-1") == added


async def test_list_is_oldest_first_and_latest_newest_first(backend: Backend) -> None:
    await add_chain(backend, 4)

    listed = await backend.list_summaries(backend.thread, backend.ns)
    assert [r.version for r in listed] == [1, 2, 3, 4]
    latest = await backend.latest_summaries(backend.thread, backend.ns, limit=2)
    assert [r.version for r in latest] == [4, 3]
    assert await backend.latest_summaries(backend.thread, backend.ns) == listed[::-1]
    assert await backend.find_summary(backend.thread, backend.ns, "no-such-prefix") is None
    assert await backend.list_summaries("no-such-thread", backend.ns) == []


async def test_duplicate_prefix_is_a_no_op_returning_the_existing_row(backend: Backend) -> None:
    first = await backend.add_summary(**fields(backend, 1))
    again = await backend.add_summary(
        **fields(backend, 1, summary="Different text.", summary_tokens=999, model="other")
    )

    assert again == first
    assert await backend.list_summaries(backend.thread, backend.ns) == [first]
    following = await backend.add_summary(**fields(backend, 2, parent_id=first.id))
    assert following.version == 2  # the duplicate did not use up a version


async def test_versions_increase_with_parent_lineage(backend: Backend) -> None:
    chain = await add_chain(backend, 3)

    assert [r.version for r in chain] == [1, 2, 3]
    assert [r.parent_id for r in chain] == [None, chain[0].id, chain[1].id]
    # Each namespace, and the thread-less "" thread, numbers its own versions.
    other_ns = await backend.add_summary(**fields(backend, 1, namespace=f"{backend.ns}-b"))
    no_thread = await backend.add_summary(**fields(backend, 1, thread_id=""))
    assert (other_ns.version, no_thread.version) == (1, 1)
    assert await backend.find_summary("", backend.ns, "prefix-1") == no_thread


@pytest.mark.parametrize(
    "override",
    [
        {"summary": ""},
        {"summary": "  \n\t "},
        {"kind": "final"},
        {"prefix_hash": ""},
        {"summary_tokens": -1},
        {"rescued_message_ids": "msg-1"},
    ],
    ids=["empty", "whitespace", "bad-kind", "no-prefix", "negative-tokens", "ids-string"],
)
async def test_invalid_summary_is_rejected_and_nothing_stored(
    backend: Backend, override: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match=next(iter(override))):
        await backend.add_summary(**fields(backend, 1, **override))

    assert await backend.list_summaries(backend.thread, backend.ns) == []


# -- per-thread state ---------------------------------------------------------------------------


async def test_failures_reset_and_calibration(backend: Backend) -> None:
    t, ns = backend.thread, backend.ns
    assert await backend.thread_state(t, ns) == ThreadState(t, ns, 0, None, None, None)

    first = await backend.record_failure(t, ns, message_count=30, error="timeout")
    second = await backend.record_failure(t, ns, message_count=34, error="blank summary")
    assert (first.consecutive_failures, first.messages_at_last_failure) == (1, 30)
    assert second == ThreadState(t, ns, 2, 34, None, "blank summary")

    await backend.set_calibration(t, ns, 1.25)
    assert await backend.thread_state(t, ns) == ThreadState(t, ns, 2, 34, 1.25, "blank summary")
    await backend.reset_failures(t, ns)
    assert await backend.thread_state(t, ns) == ThreadState(t, ns, 0, None, 1.25, "blank summary")

    other = f"{ns}-b"
    assert await backend.thread_state(t, other) == ThreadState(t, other, 0, None, None, None)
    await backend.reset_failures("never-seen", ns)  # a no-op, not an error
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="calibration"):
            await backend.set_calibration(t, ns, bad)
    assert (await backend.thread_state(t, ns)).calibration == 1.25


async def test_delete_thread(backend: Backend) -> None:
    t, ns, ns_b = backend.thread, backend.ns, f"{backend.ns}-b"
    await add_chain(backend, 2)
    await backend.record_failure(t, ns, message_count=5, error="boom")
    await backend.add_summary(**fields(backend, 1, namespace=ns_b))
    await backend.add_summary(**fields(backend, 1, thread_id=f"{t}-other"))

    assert await backend.delete_thread(t, ns) == 2
    assert await backend.list_summaries(t, ns) == []
    # Deletion is counted: the state is gone, the generation went up (only in ns).
    assert await backend.thread_state(t, ns) == ThreadState(t, ns, 0, None, None, None, 1)
    assert (await backend.thread_state(t, ns_b)).generation == 0
    assert len(await backend.list_summaries(t, ns_b)) == 1
    assert await backend.delete_thread(t) == 1  # every namespace
    assert await backend.list_summaries(t, ns_b) == []
    assert len(await backend.list_summaries(f"{t}-other", ns)) == 1
    assert await backend.delete_thread(t) == 0
    # Every namespace, also one never written: ns 1 + 2, ns_b 2, a new one 2.
    assert (await backend.thread_state(t, ns)).generation == 3
    assert (await backend.thread_state(t, ns_b)).generation == 2
    assert (await backend.thread_state(t, "never-used")).generation == 2
    assert (await backend.thread_state(f"{t}-other", ns)).generation == 0


async def test_retention_keeps_only_the_newest_versions(backend: Backend) -> None:
    kept = backend.open(retention=2)
    chain = await add_chain(backend, 4, store=kept)

    listed = await backend.on(kept)("list_summaries", backend.thread, backend.ns)
    assert [r.version for r in listed] == [3, 4]
    # The oldest kept row still names its parent, which retention deleted.
    assert listed[0].parent_id == chain[1].id
    assert await backend.find_summary(backend.thread, backend.ns, "prefix-2") is None
    fifth = await backend.on(kept)("add_summary", **fields(backend, 5, parent_id=chain[3].id))
    assert fifth.version == 5
    listed = await backend.list_summaries(backend.thread, backend.ns)
    assert [r.version for r in listed] == [4, 5]
    with pytest.raises(ValueError, match="retention"):
        SummaryStore(backend.url, retention=0)


async def test_two_store_objects_see_each_others_rows(backend: Backend) -> None:
    other = backend.open()
    call_other = backend.on(other)

    first = await backend.add_summary(**fields(backend, 1))
    assert await call_other("list_summaries", backend.thread, backend.ns) == [first]
    second = await call_other("add_summary", **fields(backend, 2, parent_id=first.id))
    assert second.version == 2
    assert await backend.latest_summaries(backend.thread, backend.ns) == [second, first]
    assert await call_other("add_summary", **fields(backend, 1)) == first


async def test_concurrent_inserts_get_unique_versions(backend: Backend) -> None:
    stores = [backend.store, backend.open(), backend.open()]
    # 16 distinct prefixes, and 8 of them submitted twice, from three store objects.
    jobs = [(stores[i % 3], i % 16) for i in range(24)]

    if backend.is_async:
        results = await asyncio.gather(
            *(plumbing(s).aadd_summary(**fields(backend, n + 1)) for s, n in jobs)
        )
    else:
        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = [
                pool.submit(plumbing(s).add_summary, **fields(backend, n + 1)) for s, n in jobs
            ]
            results = [f.result() for f in futures]

    listed = await backend.list_summaries(backend.thread, backend.ns)
    assert sorted(r.version for r in listed) == list(range(1, 17))
    by_prefix = {r.prefix_hash: r for r in listed}
    assert all(by_prefix[r.prefix_hash] == r for r in results)


async def test_postgres_lookups_skip_the_transaction_and_writes_keep_it(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not backend.url.startswith("postgresql"):
        pytest.skip("PostgreSQL only: SQLite reads skip BEGIN in the begin hook")
    seen: dict[str, bool] = {}
    real_find, real_insert = _tables.find_summary, _tables.insert_summary

    def find(conn: Any, *args: Any) -> Any:
        seen.setdefault("lookup", conn.connection.dbapi_connection.autocommit)
        return real_find(conn, *args)

    def insert(conn: Any, *args: Any) -> Any:
        seen.setdefault("write", conn.connection.dbapi_connection.autocommit)
        return real_insert(conn, *args)

    monkeypatch.setattr(_tables, "find_summary", find)
    monkeypatch.setattr(_tables, "insert_summary", insert)
    await backend.find_summary(backend.thread, backend.ns, "prefix-1")  # the pool's connection
    await backend.add_summary(**fields(backend, 1))  # the same connection, back from the pool

    assert seen == {"lookup": True, "write": False}


# -- SQLite specifics -----------------------------------------------------------------------------


async def test_sqlite_connections_use_wal_busy_timeout_and_foreign_keys(
    sqlite_backend: Backend,
) -> None:
    await sqlite_backend.add_summary(**fields(sqlite_backend, 1))
    store = sqlite_backend.store
    pragmas = ["PRAGMA journal_mode", "PRAGMA busy_timeout", "PRAGMA foreign_keys"]

    if sqlite_backend.is_async:
        engine = await store._db.async_engine()  # what every pooled connection was given
        async with engine.connect() as conn:
            values = [(await conn.exec_driver_sql(p)).scalar() for p in pragmas]
    else:

        def read_pragmas() -> list[Any]:
            with store._db.sync_engine().connect() as conn:
                return [conn.exec_driver_sql(p).scalar() for p in pragmas]

        values = await asyncio.to_thread(read_pragmas)

    assert values == ["wal", 30_000, 1]


async def test_sqlite_columns_are_plain_readable_values(sqlite_backend: Backend) -> None:
    await sqlite_backend.add_summary(**fields(sqlite_backend, 1, rescued_message_ids=["a", "b"]))
    path = sqlite_backend.url.removeprefix("sqlite:///")

    def read_raw() -> tuple[str, str, str]:
        with raw_sqlite(path) as raw:
            row: tuple[str, str, str] = raw.execute(  # sqlite3 rows are untyped
                "SELECT created_at, rescued_message_ids, kind FROM compaction_summaries"
            ).fetchone()
            assert raw.execute("SELECT value FROM compaction_meta").fetchall() == [
                (str(SCHEMA_VERSION),)
            ]
            with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
                raw.execute("UPDATE compaction_summaries SET kind = 'final'")
            return row

    created, ids, kind = await asyncio.to_thread(read_raw)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", created)
    assert (json.loads(ids), kind) == (["a", "b"], "initial")


def test_a_store_of_a_newer_schema_version_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    first = SummaryStore(url)
    first.list_summaries("t")
    first.close()
    newer = SCHEMA_VERSION + 1
    with raw_sqlite(tmp_path / "store.db") as raw:
        raw.execute(f"UPDATE compaction_meta SET value = '{newer}' WHERE key = 'schema_version'")
        raw.execute("UPDATE compaction_alembic_version SET version_num = '0001'")

    with pytest.raises(
        SummaryStoreError,
        match=rf"store\.db: the store has schema_version {newer}, .* reads up to {SCHEMA_VERSION}",
    ):
        SummaryStore(url).list_summaries("t")


def test_sqlite_writer_waits_for_a_held_lock_instead_of_failing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    b = Backend(url, is_async=False)
    b.store.list_summaries("warm-up")  # creates the tables
    holder = sqlite3.connect(tmp_path / "store.db", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.5, holder.rollback).start()

    started = time.perf_counter()
    record = plumbing(b.store).add_summary(**fields(b, 1))
    waited = time.perf_counter() - started

    assert record.version == 1
    assert waited >= 0.4
    holder.close()
    b.store.close()


def test_switching_a_busy_sqlite_file_to_wal_waits_for_the_lock(tmp_path: Path) -> None:
    # A file in rollback mode whose write lock another process holds: SQLite refuses the WAL
    # switch at once, without its busy handler; the store must wait like any writer.
    path = tmp_path / "store.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE other_app (x)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO other_app VALUES (1)")
    threading.Timer(0.5, holder.rollback).start()

    started = time.perf_counter()
    with SummaryStore(f"sqlite:///{path}") as store:
        assert store.list_summaries("t") == []
    assert time.perf_counter() - started >= 0.4
    holder.close()
    with raw_sqlite(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_tables_are_created_once_when_stores_race(store_url: str) -> None:
    stores = [SummaryStore(store_url) for _ in range(6)]
    start = threading.Barrier(len(stores))

    def first_use(store: SummaryStore) -> list[SummaryRecord]:
        start.wait()
        return store.list_summaries("t")

    with ThreadPoolExecutor(max_workers=len(stores)) as pool:
        assert list(pool.map(first_use, stores)) == [[]] * len(stores)
    report = load_report(store_url)
    assert (report["schema_version"], report["threads"]) == (str(SCHEMA_VERSION), [])
    for store in stores:
        store.close()


async def test_a_version_collision_is_retried(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_insert = _tables.insert_summary
    calls: list[str] = []

    def collide_once(conn: Any, new: Any, retention: Any) -> SummaryRecord:
        calls.append(new.prefix_hash)
        if (new.prefix_hash == "prefix-1" and len(calls) == 1) or new.prefix_hash == "prefix-2":
            raise IntegrityError("INSERT", {}, Exception("duplicate key: version"))
        return real_insert(conn, new, retention)

    monkeypatch.setattr(_tables, "insert_summary", collide_once)

    record = await backend.add_summary(**fields(backend, 1))
    assert (record.version, calls) == (1, ["prefix-1", "prefix-1"])
    with pytest.raises(SummaryStoreError, match="colliding"):
        await backend.add_summary(**fields(backend, 2))  # collides every time
    assert calls.count("prefix-2") == 5
    assert await backend.list_summaries(backend.thread, backend.ns) == [record]


def test_memory_database_serves_every_thread(tmp_path: Path) -> None:
    b = Backend("sqlite:///:memory:", is_async=False)
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda n: plumbing(b.store).add_summary(**fields(b, n)), range(1, 9)))

    listed = b.store.list_summaries(b.thread, b.ns)
    assert [r.version for r in listed] == list(range(1, 9))
    b.store.close()


def test_lookups_use_an_index_and_take_under_a_millisecond(tmp_path: Path) -> None:
    b = Backend(f"sqlite:///{tmp_path / 'store.db'}", is_async=False)
    b.store.list_summaries("warm-up")
    stamp = datetime.now(UTC).isoformat(timespec="microseconds")
    rows = [
        (uuid4().hex, f"t{t}", b.ns, v, None, "m", 1, f"p{v}", "text " * 200, 1, 1, "update",
         None, stamp, "[]", None, None, None, None, None, *[None] * 7)  # integrity: schema 7
        for t in range(200) for v in range(1, 21)
    ]  # fmt: skip
    with raw_sqlite(tmp_path / "store.db") as raw:
        raw.executemany(f"INSERT INTO compaction_summaries VALUES ({','.join('?' * 27)})", rows)
        for stmt in (_tables._NEWEST_FIRST, _tables._BY_PREFIX):
            sql = str(stmt.compile(dialect=sqlite_dialect.dialect()))
            plan = raw.execute(f"EXPLAIN QUERY PLAN {sql}", (1,) * sql.count("?")).fetchall()
            assert "USING INDEX" in str(plan), plan

    def fastest_us(call: Callable[[], object]) -> float:
        # The fastest of many calls: what a lookup costs, without other processes' noise.
        durations = []
        for _ in range(300):
            started = time.perf_counter()
            call()
            durations.append(time.perf_counter() - started)
        return min(durations) * 1e6

    latest = fastest_us(lambda: b.store.latest_summaries("t100", b.ns))
    found = fastest_us(lambda: plumbing(b.store).find_summary("t100", b.ns, "p7"))
    assert len(b.store.latest_summaries("t100", b.ns)) == 8
    assert latest < 1000 and found < 1000, (latest, found)
    b.store.close()


# -- engines, loops and errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "sync", "async_"),
    [
        ("sqlite:///x.db", "sqlite:///x.db", "sqlite+aiosqlite:///x.db"),
        ("sqlite+aiosqlite:///x.db", "sqlite:///x.db", "sqlite+aiosqlite:///x.db"),
        ("postgresql://u@h/db", "postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgresql+psycopg://u@h/d", "postgresql+psycopg://u@h/d", "postgresql+psycopg://u@h/d"),
        ("postgresql+asyncpg://u@h/d", "postgresql+psycopg://u@h/d", "postgresql+psycopg://u@h/d"),
    ],
)
def test_one_url_gives_the_sync_and_the_async_driver(url: str, sync: str, async_: str) -> None:
    derived = derive_urls(url)
    assert tuple(u.render_as_string() for u in derived) == (sync, async_)


def test_sync_use_never_creates_the_async_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(url: object, **options: object) -> None:
        raise AssertionError("the async engine was created")

    monkeypatch.setattr(database_module, "build_async_engine", refuse)
    b = Backend(f"sqlite:///{tmp_path / 'store.db'}", is_async=False)
    plumbing(b.store).add_summary(**fields(b, 1))
    plumbing(b.store).record_failure(b.thread, b.ns, message_count=1, error="x")
    assert len(b.store.list_summaries(b.thread, b.ns)) == 1
    with pytest.raises(SummaryStoreError, match="async engine was created") as caught:
        asyncio.run(b.store.alist_summaries(b.thread, b.ns))
    assert isinstance(caught.value.__cause__, AssertionError)
    b.store.close()


def test_async_methods_work_from_one_event_loop_after_another(store_url: str) -> None:
    b = Backend(store_url, is_async=True)
    first = asyncio.run(plumbing(b.store).aadd_summary(**fields(b, 1)))
    second = asyncio.run(plumbing(b.store).aadd_summary(**fields(b, 2, parent_id=first.id)))

    assert asyncio.run(b.store.alist_summaries(b.thread, b.ns)) == [first, second]
    asyncio.run(b.store.aclose())


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("not a url", "cannot be parsed"),
        ("mysql://user:s3cret@db.example/app", "names 'mysql'"),
    ],
)
def test_an_unusable_url_is_refused_at_once(url: str, expected: str) -> None:
    with pytest.raises(SummaryStoreError, match=expected) as caught:
        SummaryStore(url)
    assert "s3cret" not in str(caught.value)


async def test_database_errors_name_the_masked_url_and_what_to_do(tmp_path: Path) -> None:
    unreachable = SummaryStore("postgresql://user:s3cret@127.0.0.1:1/app")
    for call in (
        lambda: unreachable.list_summaries("t"),
        lambda: unreachable.thread_state("t", "n"),
    ):
        with pytest.raises(SummaryStoreError) as caught:
            call()
        message = str(caught.value)
        assert "postgresql+psycopg" not in message and "s3cret" not in message
        assert "postgresql://user:***@127.0.0.1:1/app" in message
        assert "server is running" in message
    with pytest.raises(SummaryStoreError, match=r"127\.0\.0\.1:1"):
        await unreachable.alist_summaries("t")
    await unreachable.aclose()

    folder = SummaryStore(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")
    with pytest.raises(SummaryStoreError, match="folder exists"):
        folder.list_summaries("t")
    assert "s3cret" not in repr(unreachable) and unreachable.url.endswith("s3cret@127.0.0.1:1/app")


async def test_a_missing_driver_is_a_store_error_saying_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "aiosqlite", None)  # as if it were not installed
    store = SummaryStore(f"sqlite:///{tmp_path / 'store.db'}")

    with pytest.raises(SummaryStoreError, match=r"driver is missing.*pip install aiosqlite"):
        await store.alist_summaries("t")
    # The sync path needs only the stdlib driver.
    assert await asyncio.to_thread(store.list_summaries, "t") == []
    await store.aclose()


# -- the inspect CLI ----------------------------------------------------------------------------


# The views themselves (tables, lineage, --full, 100 columns): tests/test_inspect.py.


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("not a url", "cannot be parsed"),
        ("mysql://user:pw@host/db", "names 'mysql'"),
        ("postgresql://user:s3cret@127.0.0.1:1/db", "server is running"),
        ("sqlite:///{tmp}/missing.db", "no SQLite file"),
    ],
    ids=["garbage", "other-database", "no-server", "no-file"],
)
def test_inspect_fails_clearly_on_a_bad_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, expected: str
) -> None:
    assert inspect_main(["inspect", "--url", url.format(tmp=tmp_path)]) == 1

    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    assert expected in err and "s3cret" not in err
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.slow
def test_inspect_command_exits_non_zero_on_a_bad_url() -> None:
    result = run_cli("--url", "postgresql://user:s3cret@127.0.0.1:1/db")

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: summary store postgresql://user:***@127.0.0.1:1/db")
    assert result.stderr.count("\n") == 1


@pytest.mark.slow
def test_inspect_fails_clearly_without_the_tables(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with raw_sqlite(path) as raw:
        raw.execute("CREATE TABLE notes (body TEXT)")

    result = run_cli("--url", f"sqlite:///{path}")

    assert result.returncode == 1
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "missing table(s) compaction_summaries, compaction_threads" in result.stderr
    with raw_sqlite(path) as raw:  # inspect only reads: no tables, no WAL switch
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert raw.execute("SELECT name FROM sqlite_master").fetchall() == [("notes",)]
