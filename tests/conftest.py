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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from _blocking import BlockingError, blocking_guard
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


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "summaries.db"


@pytest.fixture
def store(store_path: Path) -> Iterator[SummaryStore]:
    summary_store = SummaryStore(f"sqlite:///{store_path}")
    yield summary_store
    summary_store.close()


@pytest.fixture
def summarizer() -> RecordingSummarizer:
    return RecordingSummarizer()
