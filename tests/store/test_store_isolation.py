"""Isolation and data rights, as properties: any sequence of writes, on SQLite and PostgreSQL.

Hypothesis draws a sequence of operations over a few threads (the thread-less ``""`` one
among them) and namespaces: add a summary, record a failure, delete a thread in one
namespace or in all. After it, every (thread, namespace) holds exactly what a plain model
says: nothing written to another pair leaks in, ``delete_thread`` leaves no row behind, and
with retention only the newest versions stay, their lineage intact.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from _store_support import STORE_BACKENDS, store_database
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_compaction import SummaryStore
from langgraph_compaction.store.summary_store import plumbing

THREADS = ["a", "A", "", "a/b ä"]
NAMESPACES = ["default", "tenant-2"]
PREFIXES = ["p0", "p1", "p2", "p3", "p4"]

operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.sampled_from(THREADS),
            st.sampled_from(NAMESPACES),
            st.sampled_from(PREFIXES),
        ),
        st.tuples(st.just("fail"), st.sampled_from(THREADS), st.sampled_from(NAMESPACES)),
        st.tuples(
            st.just("delete"), st.sampled_from(THREADS), st.sampled_from([*NAMESPACES, None])
        ),
    ),
    max_size=14,
)


@pytest.fixture(scope="module", params=STORE_BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """conftest's backends, one database per module: hypothesis's examples share it."""
    with store_database(request.param, tmp_path_factory.mktemp("isolation")) as database:
        yield database


@dataclass
class Model:
    """What each (thread, namespace) should hold: live prefixes oldest first, failures."""

    retention: int | None
    prefixes: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    failures: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, key: tuple[str, str], prefix: str) -> None:
        live = self.prefixes.setdefault(key, [])
        if prefix not in live:
            live.append(prefix)
        if self.retention is not None:
            del live[: -self.retention]

    def delete(self, thread: str, namespace: str | None) -> int:
        keys = [k for k in self.prefixes if k[0] == thread and namespace in (None, k[1])]
        deleted = sum(len(self.prefixes.pop(k)) for k in keys)
        for k in [k for k in self.failures if k[0] == thread and namespace in (None, k[1])]:
            del self.failures[k]
        return deleted


def apply(store: SummaryStore, run: str, ops: list[tuple[Any, ...]], model: Model) -> None:
    """Run the operations on the store and on the model; namespaces are this example's own."""
    for op, thread, *rest in ops:
        if op == "add":
            ns, prefix = f"{run}:{rest[0]}", rest[1]
            newest = store.latest_summaries(thread, ns, limit=1)
            plumbing(store).add_summary(
                thread_id=thread, namespace=ns, parent_id=newest[0].id if newest else None,
                boundary_message_id=f"m-{prefix}", covered_messages=1, prefix_hash=prefix,
                summary=f"{thread}|{ns}|{prefix}", summary_tokens=1, source_tokens=2,
                kind="update" if newest else "initial", model=None, rescued_message_ids=[],
            )  # fmt: skip
            model.add((thread, ns), prefix)
        elif op == "fail":
            ns = f"{run}:{rest[0]}"
            plumbing(store).record_failure(thread, ns, message_count=1, error=f"{thread}|{ns}")
            model.failures[(thread, ns)] = model.failures.get((thread, ns), 0) + 1
        else:
            scope = None if rest[0] is None else f"{run}:{rest[0]}"
            expected = model.delete(thread, scope)
            deleted = store.delete_thread(thread, scope)
            # Deleting in every namespace also reaches earlier examples' rows of the thread.
            assert deleted == expected if scope is not None else deleted >= expected


def assert_holds(store: SummaryStore, run: str, model: Model) -> None:
    for thread in THREADS:
        for name in NAMESPACES:
            key = (thread, f"{run}:{name}")
            rows = store.list_summaries(*key)
            assert [r.prefix_hash for r in rows] == model.prefixes.get(key, [])
            # Every row is the pair's own: its text names the thread and namespace it went to.
            assert all(r.summary == f"{thread}|{key[1]}|{r.prefix_hash}" for r in rows)
            assert [r.version for r in rows] == sorted({r.version for r in rows})
            state = store.thread_state(*key)
            assert state.consecutive_failures == model.failures.get(key, 0)
            assert state.last_error in (None, f"{thread}|{key[1]}")
            for prefix in PREFIXES[:2]:  # p0 and p1: by prefix hash, too, only the pair's own
                found = plumbing(store).find_summary(*key, prefix)
                assert (found is not None) == (prefix in model.prefixes.get(key, []))


@pytest.mark.parametrize("retention", [None, 2], ids=["keep-all", "retention-2"])
def test_threads_and_namespaces_never_see_each_other(url: str, retention: int | None) -> None:
    store = SummaryStore(url, retention=retention)

    @settings(max_examples=15, deadline=None, database=None, derandomize=True)
    @given(ops=operations)
    def holds_for(ops: list[tuple[Any, ...]]) -> None:
        run = uuid4().hex[:8]
        model = Model(retention)
        apply(store, run, ops, model)
        assert_holds(store, run, model)

    try:
        holds_for()
        assert store.check_integrity() == []  # lineage of what retention left is intact
    finally:
        store.close()


def test_delete_thread_leaves_no_row_of_the_thread_anywhere(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with SummaryStore(url) as store:
        for ns in NAMESPACES:
            for n in range(3):
                plumbing(store).add_summary(
                    thread_id="gone", namespace=ns, parent_id=None, boundary_message_id="m",
                    covered_messages=1, prefix_hash=f"p{n}", summary="text", summary_tokens=1,
                    source_tokens=1, kind="initial", model=None, rescued_message_ids=["x"],
                )  # fmt: skip
            plumbing(store).record_failure("gone", ns, message_count=1, error="e")
            plumbing(store).set_calibration("kept", ns, 1.5)

        assert store.delete_thread("gone") == 6

    import sqlite3

    with sqlite3.connect(tmp_path / "store.db") as raw:
        for table in ("compaction_summaries", "compaction_threads"):
            rows = raw.execute(f"SELECT count(*) FROM {table} WHERE thread_id = 'gone'")
            assert rows.fetchone() == (0,)
        assert raw.execute("SELECT count(*) FROM compaction_threads").fetchone() == (2,)
    raw.close()
