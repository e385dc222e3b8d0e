"""From one store URL to a sync and an async SQLAlchemy engine, and errors people can act on.

SQLite connections get WAL mode (with ``synchronous = NORMAL``), a busy timeout and foreign keys on
every connect, and SQLAlchemy emits BEGIN itself so a write transaction can take the lock up front
(``BEGIN IMMEDIATE``): concurrent writers then wait their turn instead of failing. This is the
"Serializable isolation / Savepoints / Transactional DDL" recipe of SQLAlchemy's SQLite docs.
Writers of one process queue in ``store.db.write_queue`` before BEGIN, so the busy timeout is only
spent waiting for other processes.

PostgreSQL sessions are bounded by the same ``busy_timeout`` (DESIGN 6.9): ``lock_timeout`` and
``statement_timeout`` in every connection's startup packet, TCP keepalives and a user timeout
for a connection whose server vanished, and a pool checkout that gives up as well. A hung
statement then ends as an error the pipeline treats as an outage, not a call held for as long
as another session keeps a table locked. A migration lifts ``statement_timeout`` for its own
transaction (:func:`allow_long_migration`).
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any
from uuid import uuid4

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DataError, DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool, Pool, QueuePool, StaticPool

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store.db.storable_text import guard_engine

__all__ = [
    "BUSY_TIMEOUT_S",
    "WRITE_OPTION",
    "allow_long_migration",
    "build_async_engine",
    "build_sync_engine",
    "database_identity",
    "derive_urls",
    "describe_error",
    "dispose_at_loop_shutdown",
    "dispose_from_other_loop",
    "is_memory",
    "mask_url",
    "timed_out",
]

BUSY_TIMEOUT_S = 30
"""How long a SQLite connection waits for another writer before giving up."""

WRITE_OPTION = "compaction_write"
"""Connection execution option marking a write transaction (SQLite: BEGIN IMMEDIATE)."""

_KEEPALIVE_PROBES = 3
"""Unanswered keepalive probes after which the kernel drops a PostgreSQL connection."""

_TIMEOUTS = {"55P03": "lock_timeout", "57014": "statement_timeout"}
"""PostgreSQL's SQLSTATEs for a statement cancelled by a timeout, and the setting's name."""


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


def database_identity(url: URL) -> str:
    """What two stores on the same database share: the absolute SQLite path, or the URL.

    An in-memory database is private to its store, so it gets an identity of its own.
    """
    if is_memory(url):
        return f"memory:{uuid4().hex}"
    if url.get_backend_name() == "sqlite":
        path = url.database or ""
        if not os.path.isabs(path):
            path = os.path.join(os.getcwd(), path)
        return f"sqlite:{os.path.normpath(path)}"
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


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


def _libpq_version() -> int:
    try:
        from psycopg import pq
    except ImportError:  # create_engine reports the missing driver
        return 0
    return int(pq.version())


def _pg_connect_args(url: URL, busy_timeout: float) -> dict[str, Any]:
    """Connect args that bound every wait of a PostgreSQL session by ``busy_timeout``.

    Without a connect timeout an unreachable host hangs the call for minutes; without
    ``lock_timeout`` and ``statement_timeout`` a statement waits as long as another session
    holds its table; without keepalives (and ``tcp_user_timeout``, libpq 12 and later) a
    connection whose server vanished waits for its answer forever. All go to libpq at connect
    time, the settings in the startup packet (``options``), so every connection of a pool has
    them, the control reader's too. What the URL sets itself wins.
    """
    seconds, millis = max(1, math.ceil(busy_timeout)), max(1, math.ceil(busy_timeout * 1000))
    args: dict[str, Any] = {
        "connect_timeout": seconds,
        "keepalives": 1,
        # first probe after half the timeout, then three more: dead within about busy_timeout
        "keepalives_idle": max(1, math.ceil(busy_timeout / 2)),
        "keepalives_interval": max(1, math.ceil(busy_timeout / (2 * _KEEPALIVE_PROBES))),
        "keepalives_count": _KEEPALIVE_PROBES,
    }
    if _libpq_version() >= 120000:
        args["tcp_user_timeout"] = millis
    args = {name: value for name, value in args.items() if name not in url.query}
    given = url.query.get("options", ())
    given = " ".join(given) if isinstance(given, tuple) else given
    # Later settings win: a statement_timeout the URL's own options set overrides ours.
    ours = f"-c lock_timeout={millis} -c statement_timeout={millis}"
    args["options"] = f"{ours} {given}" if given else ours
    return args


def allow_long_migration(conn: Connection) -> None:
    """Lift ``statement_timeout`` for the rest of ``conn``'s transaction (PostgreSQL).

    A migration may rewrite a big table for longer than ``busy_timeout``: cancelled there, it
    would start over on every call and never finish. Its ``lock_timeout`` stays, so a
    migration that waits for another session's lock still gives up as an outage would.
    """
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET LOCAL statement_timeout = 0")


def _sqlite_pool(url: URL, queue: type[Pool], busy_timeout: float) -> dict[str, Any]:
    # :memory: exists in one connection only, so all threads share it (the store serializes
    # them); a file gets a pool of reused connections, a checkout waiting busy_timeout at most.
    if is_memory(url):
        return {"poolclass": StaticPool}
    return {"poolclass": queue, "pool_timeout": busy_timeout}


def build_sync_engine(
    url: URL, *, wal: bool = True, busy_timeout: float = BUSY_TIMEOUT_S
) -> Engine:
    """A pooled sync engine, safe to share across threads.

    Args:
        url: a sync URL from :func:`derive_urls`.
        wal: switch a SQLite file to WAL; the inspect CLI passes False so that it never
            changes a database it only reads.
        busy_timeout: seconds a SQLite connection waits for another writer's lock, a
            PostgreSQL statement for a lock or its result (and a connection for the server),
            a caller for a pooled connection.
    """
    if url.get_backend_name() != "sqlite":
        engine = create_engine(
            url,
            pool_pre_ping=True,
            pool_timeout=busy_timeout,
            connect_args=_pg_connect_args(url, busy_timeout),
        )
        guard_engine(engine)
        return engine
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": busy_timeout},
        **_sqlite_pool(url, QueuePool, busy_timeout),
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
            url,
            pool_pre_ping=True,
            pool_timeout=busy_timeout,
            connect_args=_pg_connect_args(url, busy_timeout),
        )
        guard_engine(aengine.sync_engine)
        return aengine
    engine = create_async_engine(
        url,
        connect_args={"timeout": busy_timeout},
        **_sqlite_pool(url, AsyncAdaptedQueuePool, busy_timeout),
    )
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


def _timeout_setting(exc: BaseException) -> str | None:
    """The PostgreSQL setting that cancelled the statement, if a timeout did."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    setting = _TIMEOUTS.get(getattr(orig, "sqlstate", None) or "")
    return setting if setting is not None and "timeout" in str(orig) else None


def timed_out(exc: BaseException) -> bool:
    """Whether the store gave up after ``busy_timeout``: a statement cancelled by a timeout,
    a pooled connection or a lock of the process that did not come (SummaryStoreError)."""
    return isinstance(exc, SummaryStoreError | PoolTimeoutError) or (
        _timeout_setting(exc) is not None
    )


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
    elif (setting := _timeout_setting(exc)) is not None:
        advice = (
            f"it waited over {busy_timeout:g} s ({setting}, set from busy_timeout): another "
            "session holds a lock on the store's tables, or the server is stuck; "
            "the next call tries again"
        )
    elif isinstance(exc, PoolTimeoutError):
        advice = (
            f"every pooled connection stayed busy for over {busy_timeout:g} s (busy_timeout); "
            "the next call tries again"
        )
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
