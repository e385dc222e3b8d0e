"""Fixtures shared by the test suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes import RecordingSummarizer

from langgraph_compaction import SummaryStore


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
