"""The consistency check finds what it is for (inspect's views: tests/test_inspect.py).

The check must pass on every sound store the other tests build (they all end with it), so
here it is fed stores broken on purpose, one rule at a time, through plain SQL as a person
or a buggy release could.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from langgraph_compaction import SummaryStore
from langgraph_compaction.store import SummaryRecord
from langgraph_compaction.store.cli.inspect import main as cli
from langgraph_compaction.store.db.engine import derive_urls
from langgraph_compaction.store.summary_store import plumbing


def add(store: SummaryStore, thread: str, n: int, parent: SummaryRecord | None, **kw: Any) -> Any:
    values: dict[str, Any] = {
        "thread_id": thread, "namespace": "default", "parent_id": parent.id if parent else None,
        "boundary_message_id": f"m-{n}", "covered_messages": n, "prefix_hash": f"p-{n}",
        "summary": f"Summary {n}.", "summary_tokens": 10, "source_tokens": 100,
        "kind": "update" if parent else "initial", "model": None, "rescued_message_ids": [],
    }  # fmt: skip
    return plumbing(store).add_summary(**{**values, **kw})


def chain(store: SummaryStore, thread: str, count: int) -> list[SummaryRecord]:
    records: list[SummaryRecord] = []
    for n in range(1, count + 1):
        records.append(add(store, thread, n, records[-1] if records else None))
    return records


def execute(store_url: str, statement: str, **params: Any) -> None:
    engine = create_engine(derive_urls(store_url)[0])
    try:
        with engine.begin() as conn:
            conn.execute(text(statement), params)
    finally:
        engine.dispose()


def test_a_sound_store_with_trimmed_parents_passes(store_url: str) -> None:
    with SummaryStore(store_url, retention=2) as store:
        chain(store, "t", 5)
        assert [r.version for r in store.list_summaries("t")] == [4, 5]
        assert store.check_integrity() == []


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        ("UPDATE compaction_summaries SET summary = ' \n ' WHERE id = :second", "blank summary"),
        (
            "UPDATE compaction_summaries SET parent_id = 'no-such-row', parent_version = NULL "
            "WHERE id = :third",
            "parent no-such-row is missing, not trimmed",
        ),
        (
            "UPDATE compaction_summaries SET parent_version = 2 WHERE id = :second",
            "parent_version 2 but the parent is v1",
        ),
        (
            "UPDATE compaction_summaries SET parent_id = (SELECT id FROM compaction_summaries "
            "WHERE thread_id = 'other') WHERE id = :first",
            "belongs to another thread",
        ),
        (
            "UPDATE compaction_summaries SET rescued_message_ids = 'm-1, m-2' WHERE id = :first",
            "rescued_message_ids is not a JSON list",
        ),
        ("UPDATE compaction_threads SET calibration = -1", "calibration -1.0 is not a ratio"),
        ("UPDATE compaction_summaries SET version = 0 WHERE id = :first", "version 0 is below 1"),
    ],
    ids=["blank", "dangling-parent", "parent-version", "cross-thread", "ids", "calibration", "v0"],
)
def test_the_check_reports_each_broken_rule(
    store_url: str, breakage: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SummaryStore(store_url) as store:
        first, second, third = chain(store, "t", 3)
        add(store, "other", 1, None)
        plumbing(store).set_calibration("t", "default", 1.1)
        assert store.check_integrity() == []
    execute(store_url, breakage, first=first.id, second=second.id, third=third.id)

    with SummaryStore(store_url) as store:
        problems = store.check_integrity()
    assert any(expected in problem for problem in problems), problems

    assert cli(["check", "--url", store_url, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["ok"], report["problems"]) == (False, problems)


def test_the_check_runs_sqlites_own_integrity_check(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with SummaryStore(f"sqlite:///{path}") as store:
        chain(store, "t", 3)
    with closing(sqlite3.connect(path)) as raw, raw:
        # Drop index entries behind SQLite's back: the table and its index disagree.
        raw.execute("PRAGMA writable_schema = ON")
        raw.execute(
            "UPDATE sqlite_master SET sql = replace(sql, 'prefix_hash)', 'prefix_hash) "
            "WHERE version > 1') WHERE name = 'ix_compaction_summaries_prefix'"
        )
    with SummaryStore(f"sqlite:///{path}") as store:
        problems = store.check_integrity()
    assert any(p.startswith("SQLite integrity_check: ") for p in problems), problems
