"""Every store failure is a SummaryStoreError with an actionable cause, and the store recovers.

Each case makes a real failure, checks the error (type, store named, what to do, the driver's
error chained), removes the cause, and checks that the very next call on the same store
object works, sync and async: a schema that could not be made (folder missing, a migration
failing once), an unopenable SQLite path, a file locked by another process past
``busy_timeout``, a PostgreSQL port that refuses connections, and a backend killed with
``pg_terminate_backend`` between two calls and in the middle of a transaction.
"""

from __future__ import annotations

import asyncio
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from _store_support import PG_PORT, method_of, pg_admin, summary_fields
from alembic import command as alembic_command
from alembic.config import Config as AlembicConfig
from sqlalchemy import Connection, text

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store import SummaryRecord, SummaryStore
from langgraph_compaction.store.records import NewSummary
from langgraph_compaction.store.schema import migrate as _migrate
from langgraph_compaction.store.schema.migrate import HEAD_REVISION
from langgraph_compaction.store.sql import summaries as _tables
from langgraph_compaction.store.summary_store import plumbing

# Every test takes conftest's `is_async`: the sync methods, and the async ones (asyncio.run).


def run(store: SummaryStore, is_async: bool, name: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``name`` sync, or its async twin on a fresh event loop (one loop after another)."""
    if not is_async:
        return method_of(store, name)(*args, **kwargs)
    return asyncio.run(method_of(store, f"a{name}")(*args, **kwargs))


def close(store: SummaryStore) -> None:
    asyncio.run(store.aclose())


def add(store: SummaryStore, is_async: bool, n: int = 1) -> Any:
    return run(store, is_async, "add_summary", **summary_fields("t", "default", n))


# -- the schema is tried again ---------------------------------------------------------------------


def test_a_store_whose_folder_appears_later_opens_then(tmp_path: Path, is_async: bool) -> None:
    folder = tmp_path / "not-yet"
    store = SummaryStore(f"sqlite:///{folder / 'store.db'}")
    with pytest.raises(SummaryStoreError, match=r"not-yet/store\.db: .*folder exists") as caught:
        run(store, is_async, "list_summaries", "t")
    assert caught.value.__cause__ is not None
    folder.mkdir()
    assert run(store, is_async, "list_summaries", "t") == []
    close(store)


def test_a_migration_that_fails_once_is_tried_again(
    tmp_path: Path, is_async: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_upgrade, failures = alembic_command.upgrade, list[str]()

    def upgrade_fails_once(config: AlembicConfig, revision: str) -> None:
        if not failures:
            failures.append(revision)
            raise OSError(28, "No space left on device")
        real_upgrade(config, revision)

    monkeypatch.setattr(alembic_command, "upgrade", upgrade_fails_once)
    store = SummaryStore(f"sqlite:///{tmp_path / 'store.db'}")
    with pytest.raises(SummaryStoreError, match=r"No space left on device.*may read and write"):
        run(store, is_async, "list_summaries", "t")
    assert add(store, is_async).version == 1
    with store._db.sync_engine().connect() as conn:
        assert _migrate.current_revision(conn) == HEAD_REVISION
    close(store)


# -- SQLite ----------------------------------------------------------------------------------------


def test_an_unopenable_sqlite_path_fails_clearly_until_it_is_fixed(
    tmp_path: Path, is_async: bool
) -> None:
    path = tmp_path / "store.db"
    path.mkdir()  # a folder where the file should be
    store = SummaryStore(f"sqlite:///{path}")
    with pytest.raises(SummaryStoreError, match=r"store\.db: OperationalError: unable to open"):
        run(store, is_async, "thread_state", "t", "default")
    path.rmdir()
    assert add(store, is_async).version == 1
    close(store)


@pytest.fixture
def locker(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """A store file, and a function that makes another process hold its write lock."""
    path = tmp_path / "store.db"
    with SummaryStore(f"sqlite:///{path}") as store:
        store.list_summaries("t")  # the tables exist before the lock is taken
    held: list[subprocess.Popen[str]] = []
    script = (
        "import sqlite3, sys\n"
        f"conn = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "conn.execute('BEGIN EXCLUSIVE')\n"
        "print('locked', flush=True)\n"
        "sys.stdin.readline()\n"
    )

    def lock() -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        held.append(process)
        assert process.stdout is not None and process.stdout.readline() == "locked\n"
        return process

    yield f"sqlite:///{path}", lock
    for process in held:
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


def unlock(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.write("\n")
    process.stdin.close()
    assert process.wait(timeout=30) == 0


def test_a_file_locked_by_another_process_past_busy_timeout(
    locker: tuple[str, Any], is_async: bool
) -> None:
    url, lock = locker
    store = SummaryStore(url, busy_timeout=0.3)
    holder = lock()
    started = time.monotonic()
    with pytest.raises(SummaryStoreError, match=r"database is locked; .* over 0\.3 s"):
        add(store, is_async)
    waited = time.monotonic() - started
    assert 0.25 <= waited < 10, waited
    unlock(holder)
    assert add(store, is_async).version == 1
    close(store)


# -- PostgreSQL ------------------------------------------------------------------------------------


@pytest.fixture
def pg_url(pg_url: str) -> str:
    """conftest's fresh schema, its connections named so a test can find and kill them."""
    return f"{pg_url}&application_name=lgc_{uuid4().hex[:12]}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Forward(socketserver.BaseRequestHandler):
    """Relay one client connection to the real server, both ways."""

    def handle(self) -> None:
        upstream = socket.create_connection(("127.0.0.1", PG_PORT))

        def pump(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                dst.close()

        back = threading.Thread(target=pump, args=(upstream, self.request), daemon=True)
        back.start()
        pump(self.request, upstream)
        back.join(timeout=5)


def test_a_port_that_refuses_connections_until_a_server_listens(
    pg_url: str, is_async: bool
) -> None:
    port = free_port()
    url = pg_url.replace(f":{PG_PORT}/", f":{port}/")
    store = SummaryStore(url, busy_timeout=2)
    with pytest.raises(SummaryStoreError, match=rf"{port}.*refused.*server is running"):
        run(store, is_async, "list_summaries", "t")

    class Server(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        daemon_threads = True

    with Server(("127.0.0.1", port), Forward) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            assert add(store, is_async).version == 1
            close(store)
        finally:
            server.shutdown()


def kill_backends(url: str) -> int:
    """``pg_terminate_backend`` every connection of this test's application name."""
    name = url.rsplit("application_name=", 1)[1]
    with pg_admin() as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        ).fetchall()
    return len(rows)


def test_a_backend_killed_between_two_calls(pg_url: str, is_async: bool) -> None:
    store = SummaryStore(pg_url)
    if is_async:

        async def two_calls() -> None:
            await plumbing(store).aadd_summary(**summary_fields("t", "default", 1))
            assert await asyncio.to_thread(kill_backends, pg_url) >= 1
            await plumbing(store).aadd_summary(**summary_fields("t", "default", 2))
            await store.aclose()

        asyncio.run(two_calls())
    else:
        add(store, False, 1)
        assert kill_backends(pg_url) >= 1
        add(store, False, 2)
    assert [r.version for r in store.list_summaries("t")] == [1, 2]
    store.close()


def test_a_backend_killed_in_the_middle_of_a_transaction(
    pg_url: str, is_async: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_insert, killed = _tables.insert_summary, list[int | None]()

    def insert_killed_once(
        conn: Connection,
        new: NewSummary,
        retention: int | None,
        on_insert: Callable[[Connection], None] | None = None,
    ) -> SummaryRecord:
        if not killed:  # the thread's lock is taken and the transaction open: kill it
            killed.append(conn.execute(text("SELECT pg_backend_pid()")).scalar())
            conn.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
        return real_insert(conn, new, retention, on_insert)

    monkeypatch.setattr(_tables, "insert_summary", insert_killed_once)
    store = SummaryStore(pg_url)
    with pytest.raises(SummaryStoreError, match=r"OperationalError: .*terminat") as caught:
        add(store, is_async, 1)
    cause = caught.value.__cause__
    assert cause is not None
    assert "psycopg" in type(cause.__cause__ or cause).__module__
    assert killed
    assert add(store, is_async, 1).version == 1  # the next call works, nothing half-written
    assert [r.version for r in store.list_summaries("t")] == [1]
    close(store)
    store.close()
