"""What the store's test modules share: the backends, fresh databases, a sync/async driver.

The fixtures built on these live in ``conftest.py`` (``store_url``, ``pg_url``, ``is_async``,
``summary_store``, ``backend``); a module that needs another scope opens
`store_database` itself, with the same `STORE_BACKENDS`.

The PostgreSQL cases use the server at 127.0.0.1:5432 (database ``test``, user ``postgres``
or ``root``, trust auth). Each test gets a schema of its own, dropped afterwards. Without a
server they are skipped, saying why; under CI (``CI`` set) they fail instead, so that a CI run
never passes without having run them.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import cache
from multiprocessing import forkserver as forkserver_module
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from sqlalchemy import Connection, create_engine

from langgraph_compaction import SummaryStore
from langgraph_compaction.store.db.engine import derive_urls
from langgraph_compaction.store.summary_store import plumbing

__all__ = [
    "PG_DATABASE",
    "PG_HOST",
    "PG_PORT",
    "STORE_BACKENDS",
    "Backend",
    "call",
    "pg_admin",
    "pg_schema",
    "pg_server_url",
    "preloaded_forkserver",
    "raw_transaction",
    "store_database",
    "summary_fields",
    "unavailable",
]

PG_HOST, PG_PORT, PG_DATABASE, PG_USERS = "127.0.0.1", 5432, "test", ("postgres", "root")

STORE_BACKENDS = ("sqlite", "postgres")
"""The databases every store test body runs on (the ids of the parametrized fixtures)."""


@cache
def _probe() -> tuple[str | None, str]:
    """The server's base URL, or None and why not (probed once per process)."""
    try:
        import psycopg
    except ImportError:
        return None, "psycopg is not installed (pip install 'langgraph-compaction[postgres]')"
    failures = []
    for user in PG_USERS:
        try:
            with psycopg.connect(
                host=PG_HOST, port=PG_PORT, dbname=PG_DATABASE, user=user, connect_timeout=3
            ):
                return f"postgresql://{user}@{PG_HOST}:{PG_PORT}/{PG_DATABASE}", ""
        except psycopg.Error as exc:
            failures.append(f"{user}: {str(exc).strip().splitlines()[0]}")
    return None, (
        f"no PostgreSQL server answers at {PG_HOST}:{PG_PORT} (database {PG_DATABASE!r}, "
        f"users {PG_USERS}, trust auth): {'; '.join(failures)}"
    )


def unavailable(reason: str) -> None:
    """Skip the test, or fail it under CI, where the server must be there."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the PostgreSQL tests, but {reason}")
    pytest.skip(reason)


def pg_server_url() -> str:
    """``postgresql://user@127.0.0.1:5432/test``; skips (fails under CI) without a server."""
    url, reason = _probe()
    if url is None:
        unavailable(reason)
        raise AssertionError("unreachable")
    return url


@contextmanager
def pg_schema(prefix: str = "lgc_test") -> Iterator[str]:
    """A store URL whose search_path is a new, empty schema; dropped (with its rows) after."""
    import psycopg

    base = pg_server_url()
    schema = f"{prefix}_{uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        try:
            yield f"{base}?options=-csearch_path%3D{schema}"
        finally:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


@contextmanager
def store_database(backend: str, folder: Path) -> Iterator[str]:
    """An empty database for a store: a new SQLite file in ``folder``, or a new PostgreSQL schema.

    ``backend`` is one of `STORE_BACKENDS`; PostgreSQL skips without a server (fails under CI).
    """
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'store.db'}"
    elif backend == "postgres":
        with pg_schema() as url:
            yield url
    else:
        raise ValueError(f"unknown store backend {backend!r}: expected one of {STORE_BACKENDS}")


def pg_admin() -> Any:
    """An autocommit psycopg connection to the test server, for killing backends and the like."""
    import psycopg

    return psycopg.connect(pg_server_url(), autocommit=True)


def method_of(store: SummaryStore, name: str) -> Any:
    """The store's method ``name``: a public one, else the pipeline's (``plumbing(store)``)."""
    return getattr(store if hasattr(SummaryStore, name) else plumbing(store), name)


async def call(store: SummaryStore, is_async: bool, name: str, *args: Any, **kwargs: Any) -> Any:
    """``store.a<name>(...)`` awaited, or ``store.<name>(...)`` in a worker thread; a name
    only the pipeline calls is looked up on ``plumbing(store)``.

    Sync methods run off the loop, as a sync caller would run them: async tests run under
    blockbuster, and a sync database call on the loop is exactly what it refuses.
    """
    if is_async:
        return await method_of(store, f"a{name}")(*args, **kwargs)
    return await asyncio.to_thread(method_of(store, name), *args, **kwargs)


class Backend:
    """Stores on one URL, driven through their sync or their async methods alike.

    ``await backend.list_summaries(...)`` calls ``list_summaries`` or ``alist_summaries``, so
    each test body runs unchanged on every backend. Thread id and namespace are unique per
    backend object, so tests sharing a PostgreSQL schema never see each other's rows.
    """

    def __init__(self, url: str, *, is_async: bool) -> None:
        self.url = url
        self.is_async = is_async
        self.thread = f"thread-{uuid4().hex[:8]}"
        self.ns = f"ns-{uuid4().hex[:8]}"
        self.stores: list[SummaryStore] = []
        self.store = self.open()

    def open(self, **options: Any) -> SummaryStore:
        """Another SummaryStore object on the same database."""
        store = SummaryStore(self.url, **options)
        self.stores.append(store)
        return store

    def on(self, store: SummaryStore) -> Callable[..., Awaitable[Any]]:
        """``call(name, ...)`` for an explicit store (see ``__getattr__``)."""

        async def call_on_store(name: str, *args: Any, **kwargs: Any) -> Any:
            return await call(store, self.is_async, name, *args, **kwargs)

        return call_on_store

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        call_on_store = self.on(self.store)
        return lambda *args, **kwargs: call_on_store(name, *args, **kwargs)

    async def close(self) -> None:
        for store in self.stores:
            await store.aclose()


def summary_fields(thread: str, namespace: str, n: int, **overrides: Any) -> dict[str, Any]:
    """add_summary arguments for the n-th summary of a thread."""
    values: dict[str, Any] = {
        "thread_id": thread,
        "namespace": namespace,
        "parent_id": None,
        "boundary_message_id": f"msg-{n}",
        "covered_messages": 10 * n,
        "prefix_hash": f"prefix-{n}",
        "summary": f"Summary number {n}.",
        "summary_tokens": 20 + n,
        "source_tokens": 1000 * n,
        "kind": "initial" if n == 1 else "update",
        "model": "fake",
        "rescued_message_ids": (),
    }
    return {**values, **overrides}


def preloaded_forkserver() -> Iterator[ForkServerContext]:
    """A forkserver that has imported ``_store_workers`` (and the package): cheap workers.

    Use as a module-scoped fixture body (``yield from preloaded_forkserver()``).
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["_store_workers"])
    # The server imports its preload with its own sys.path, from the environment: make the
    # tests folder importable there (a failed preload is silently skipped, and each worker
    # would then import everything itself, which costs seconds).
    saved = os.environ.get("PYTHONPATH")
    tests = str(Path(__file__).parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [tests, saved]))
    try:
        forkserver_module.ensure_running()
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    yield context


@contextmanager
def raw_transaction(url: str) -> Iterator[Connection]:
    """One transaction on the database, outside any SummaryStore."""
    engine = create_engine(derive_urls(url)[0])
    try:
        with engine.begin() as conn:
            yield conn
    finally:
        engine.dispose()
