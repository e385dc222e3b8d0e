"""From one store URL to a sync and an async SQLAlchemy engine, and errors people can act on.

SQLite connections get WAL mode (with ``synchronous = NORMAL``), a busy timeout and foreign
keys on every connect, and SQLAlchemy emits BEGIN itself so a write transaction can take the
lock up front (``BEGIN IMMEDIATE``): concurrent writers then wait their turn instead of
failing. This is the "Serializable isolation / Savepoints / Transactional DDL" recipe of
SQLAlchemy's SQLite docs. Writers of one process queue in ``_writers`` before BEGIN, so the
busy timeout is only spent waiting for other processes.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DataError, DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool, QueuePool, StaticPool

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store.db.storable_text import guard_engine

__all__ = [
    "BUSY_TIMEOUT_S",
    "WRITE_OPTION",
    "build_async_engine",
    "build_sync_engine",
    "derive_urls",
    "describe_error",
    "dispose_at_loop_shutdown",
    "dispose_from_other_loop",
    "is_memory",
    "mask_url",
]

BUSY_TIMEOUT_S = 30
"""How long a SQLite connection waits for another writer before giving up."""

WRITE_OPTION = "compaction_write"
"""Connection execution option marking a write transaction (SQLite: BEGIN IMMEDIATE)."""


def mask_url(url: str) -> str:
    """The URL with any password replaced by ``***``, fit for error messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return re.sub(r"(://[^/:@]*:)[^@/]*@", r"\1***@", url)


def derive_urls(url: str) -> tuple[URL, URL]:
    """The sync and the async driver URL for one store URL.

    ``sqlite:///x.db`` gives pysqlite and aiosqlite; ``postgresql://`` (with any driver) gives
    psycopg 3 for both, since psycopg 3 also serves ``create_async_engine``.

    Raises:
        SummaryStoreError: the URL cannot be parsed or names another database.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise SummaryStoreError(
            f"summary store URL {mask_url(url)!r} cannot be parsed ({exc}); "
            "use e.g. sqlite:///compaction.db or postgresql://user@host:5432/db"
        ) from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite"), parsed.set(drivername="sqlite+aiosqlite")
    if backend == "postgresql":
        pg = parsed.set(drivername="postgresql+psycopg")
        return pg, pg
    raise SummaryStoreError(
        f"summary store URL {mask_url(url)!r} names {backend!r}; "
        "use a sqlite:/// or postgresql:// URL"
    )


def is_memory(url: URL) -> bool:
    """Whether the URL names an in-memory SQLite database (private to one connection)."""
    if url.get_backend_name() != "sqlite":
        return False
    return url.database in (None, "", ":memory:") or url.query.get("mode") == "memory"


def _sqlite_on_connect(wal: bool, busy_timeout: float) -> Callable[[Any, Any], None]:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take BEGIN away from the driver (see _sqlite_on_begin); its own is deferred-only.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if wal:  # readers and the writer no longer block each other
            _switch_to_wal(cursor, busy_timeout)
        cursor.execute("PRAGMA journal_mode")
        if cursor.fetchone()[0] == "wal":
            # A commit appends to the log without waiting for the disk; checkpoints still
            # do. Never corrupts; a power cut may undo the last commits (SQLite's advice
            # for WAL, Rails' default): the write lock is then held a fifth as long.
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    return on_connect


def _switch_to_wal(cursor: Any, busy_timeout: float) -> None:
    """Set WAL mode, waiting up to the busy timeout for the lock the switch needs.

    Leaving rollback mode takes an exclusive lock, and SQLite does not call its busy handler
    for it: while another process writes (say, creating the tables of a new file) the PRAGMA
    fails at once with "database is locked". So retry, with a short backoff. Sync engine only:
    the async engine opens files the sync engine already switched (WAL is kept in the file),
    and never sleeps on its event loop.
    """
    deadline = time.monotonic() + busy_timeout
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as exc:  # sqlite3's OperationalError
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _sqlite_on_begin(conn: Connection) -> None:
    # A deferred transaction that later writes can fail with "database is locked" at once;
    # one that locks up front waits busy_timeout for the other writer instead. Reads are
    # single statements, each consistent on its own, so they skip BEGIN (saves a round trip).
    if conn.get_execution_options().get(WRITE_OPTION, False):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _install_sqlite_hooks(engine: Engine, url: URL, *, wal: bool, busy_timeout: float) -> None:
    event.listen(engine, "connect", _sqlite_on_connect(wal and not is_memory(url), busy_timeout))
    event.listen(engine, "begin", _sqlite_on_begin)


def _pg_connect_args(url: URL, busy_timeout: float) -> dict[str, Any]:
    # Without a connect timeout an unreachable host hangs the call for minutes.
    if "connect_timeout" in url.query:
        return {}
    return {"connect_timeout": max(1, math.ceil(busy_timeout))}


def build_sync_engine(
    url: URL, *, wal: bool = True, busy_timeout: float = BUSY_TIMEOUT_S
) -> Engine:
    """A pooled sync engine, safe to share across threads.

    Args:
        url: a sync URL from :func:`derive_urls`.
        wal: switch a SQLite file to WAL; the inspect CLI passes False so that it never
            changes a database it only reads.
        busy_timeout: seconds a SQLite connection waits for another writer's lock (and a
            PostgreSQL connection attempt waits for the server).
    """
    if url.get_backend_name() != "sqlite":
        engine = create_engine(
            url, pool_pre_ping=True, connect_args=_pg_connect_args(url, busy_timeout)
        )
        guard_engine(engine)
        return engine
    engine = create_engine(
        url,
        # :memory: exists in one connection only, so all threads share it (the store
        # serializes them); a file gets a pool of reused connections.
        poolclass=StaticPool if is_memory(url) else QueuePool,
        connect_args={"check_same_thread": False, "timeout": busy_timeout},
    )
    _install_sqlite_hooks(engine, url, wal=wal, busy_timeout=busy_timeout)
    guard_engine(engine)
    return engine


def build_async_engine(url: URL, *, busy_timeout: float = BUSY_TIMEOUT_S) -> AsyncEngine:
    """A pooled async engine with the SQLite hooks of the sync one, except the switch to WAL.

    Building it imports the driver (file reads): call it off the event loop.
    """
    if url.get_backend_name() != "sqlite":
        aengine = create_async_engine(
            url, pool_pre_ping=True, connect_args=_pg_connect_args(url, busy_timeout)
        )
        guard_engine(aengine.sync_engine)
        return aengine
    pool = StaticPool if is_memory(url) else AsyncAdaptedQueuePool
    engine = create_async_engine(url, poolclass=pool, connect_args={"timeout": busy_timeout})
    _install_sqlite_hooks(engine.sync_engine, url, wal=False, busy_timeout=busy_timeout)
    guard_engine(engine.sync_engine)
    return engine


async def dispose_at_loop_shutdown(engine: AsyncEngine) -> AsyncGenerator[None, None]:
    """Close an engine's pool when its event loop shuts down.

    Started once and left suspended: ``asyncio.run`` (like any loop that finalizes async
    generators on its way out) closes it, and the pool is disposed on its own loop, so no
    driver connection outlives the loop it belongs to.
    """
    try:
        yield
    finally:
        await engine.dispose()


async def dispose_from_other_loop(engine: AsyncEngine) -> None:
    """Close an async engine built on a previous event loop.

    aiosqlite and psycopg connections can be closed from a new loop; should a driver refuse,
    the pool is dropped unclosed instead, since its loop may already be gone.
    """
    try:
        await engine.dispose()
    except Exception:
        await engine.dispose(close=False)


def describe_error(exc: BaseException, where: str, busy_timeout: float = BUSY_TIMEOUT_S) -> str:
    """One line naming the store (password masked), what went wrong and what to do."""
    if isinstance(exc, ImportError):
        return (
            f"summary store {where}: a database driver is missing ({exc}); install it "
            f"(pip install {exc.name or 'aiosqlite'}; for PostgreSQL, "
            "pip install 'langgraph-compaction[postgres]')"
        )
    lines = str(exc.orig if isinstance(exc, DBAPIError) else exc).strip().splitlines()
    reason = lines[0] if lines else type(exc).__name__
    if isinstance(exc, IntegrityError):
        advice = "concurrent writers kept colliding; retry the call"
    elif isinstance(exc, DataError):
        advice = "a value cannot be stored (PostgreSQL text cannot hold NUL characters)"
    elif "locked" in reason:
        advice = (
            f"another connection held the write lock for over {busy_timeout:g} s "
            "(busy_timeout); the next call tries again"
        )
    elif isinstance(exc, OSError):
        advice = "check that the path exists and this process may read and write it"
    elif where.startswith("sqlite"):
        advice = "check the path in the URL, and that the file's folder exists and is writable"
    else:
        advice = "check that the server is running and the URL, user and database are right"
    return f"summary store {where}: {type(exc).__name__}: {reason}; {advice}"
