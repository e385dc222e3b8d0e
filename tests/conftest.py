"""Fixtures shared by the test suite, and blockbuster around every async test.

Every coroutine test function runs with blockbuster active, configured exactly as
``langgraph dev`` configures it (``_blocking.blocking_guard``): a file-system, socket,
subprocess or sleep call on the running event loop raises ``BlockingError``, as it would in a
run under LangGraph's server. The test fails on any such call, also one the package caught
and survived (a store outage must not break the agent, so the pipeline swallows store
errors, and a blocking call would otherwise pass unseen); the failure lists where each call
was made. Sync tests run without the guard.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from _blocking import BlockingError, blocking_guard
from _store_support import STORE_BACKENDS, Backend, pg_schema, store_database
from fakes import RecordingSummarizer

from langgraph_compaction import SummaryStore

ROOT = Path(__file__).resolve().parents[1]
_OURS = ("langgraph_compaction", "/tests/")
"""Frames worth naming in a report: the package's and the tests'."""


def _where(stack: Sequence[traceback.FrameSummary]) -> str:
    frames = [f for f in stack if any(part in f.filename for part in _OURS)]
    return " <- ".join(
        f"{f.filename.removeprefix(f'{ROOT}/')}:{f.lineno} ({f.name})" for f in reversed(frames)
    )


@pytest.fixture
def blocking_calls() -> list[str]:
    """Blocking calls seen on the loop during this async test; a test that expects one clears it."""
    return []


@pytest.fixture(autouse=True)
def _no_blocking_on_the_loop(
    request: pytest.FixtureRequest, blocking_calls: list[str]
) -> Iterator[None]:
    """Blockbuster, as the dev server sets it, for the whole of an async test (fixtures too)."""
    if not inspect.iscoroutinefunction(request.function):
        yield
        return
    original = BlockingError.__init__

    def recording_init(self: BlockingError, func: str, *args: Any, **kwargs: Any) -> None:
        blocking_calls.append(f"{func.split()[0]} at {_where(traceback.extract_stack()[:-1])}")
        original(self, func, *args, **kwargs)

    BlockingError.__init__ = recording_init  # type: ignore[method-assign]
    try:
        with blocking_guard():
            yield
    finally:
        BlockingError.__init__ = original  # type: ignore[method-assign]
    if blocking_calls:
        calls = "\n".join(f"  - {call}" for call in dict.fromkeys(blocking_calls))
        pytest.fail(f"blocking calls on the event loop:\n{calls}", pytrace=False)


# -- stores: the backends are listed once (_store_support.STORE_BACKENDS) -----------------------
# One test body, every backend, as langgraph's prebuilt tests do for checkpointers: a test takes
# `store_url` or `summary_store` to run on SQLite and PostgreSQL, adds `is_async` to run through
# the sync and the async methods, or takes `backend` for both at once. PostgreSQL cases skip
# without a server and fail under CI (_store_support.unavailable). `store` stays SQLite only.


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "summaries.db"


@pytest.fixture
def store(store_path: Path) -> Iterator[SummaryStore]:
    """A store on a new SQLite file: the pipeline tests' store."""
    summary_store = SummaryStore(f"sqlite:///{store_path}")
    yield summary_store
    summary_store.close()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A store URL on a new, empty PostgreSQL schema, dropped (with its rows) after the test."""
    with pg_schema() as url:
        yield url


@pytest.fixture(scope="session")
def shared_pg_url() -> Iterator[str]:
    """One PostgreSQL schema for the session, for tests that keep to threads of their own."""
    with pg_schema() as url:
        yield url


@pytest.fixture(params=STORE_BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a new SQLite file, or a new PostgreSQL schema."""
    if request.param == "postgres":
        yield request.getfixturevalue("pg_url")  # a module may override pg_url
        return
    with store_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture(params=["sync", "async"])
def is_async(request: pytest.FixtureRequest) -> bool:
    """Drive the store through its sync methods (off the loop) or its async twins."""
    return bool(request.param == "async")


@pytest.fixture
async def summary_store(store_url: str) -> AsyncIterator[SummaryStore]:
    """A SummaryStore on `store_url`: SQLite and PostgreSQL (its async engine closed too)."""
    opened = SummaryStore(store_url)
    yield opened
    await opened.aclose()


def _backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    database, mode = request.param.split("-")
    if database == "postgres":
        url: str = request.getfixturevalue("shared_pg_url")
    else:
        url = f"sqlite:///{tmp_path / 'store.db'}"
    return Backend(url, is_async=mode == "async")


@pytest.fixture(params=[f"{db}-{mode}" for db in STORE_BACKENDS for mode in ("sync", "async")])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """Every backend, sync and async; PostgreSQL shares the session's schema (own thread ids)."""
    driver = _backend(request, tmp_path)
    yield driver
    await driver.close()


@pytest.fixture(params=["sqlite-sync", "sqlite-async"])
async def sqlite_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """SQLite only, sync and async, for what only SQLite has (files, WAL, busy_timeout)."""
    driver = _backend(request, tmp_path)
    yield driver
    await driver.close()


@pytest.fixture
def summarizer() -> RecordingSummarizer:
    return RecordingSummarizer()
