"""Total recall in the store, on the real engines: SQLite FTS5 and PostgreSQL full text.

Indexing rides on ``add_summary(recall_messages=...)`` in the summary's transaction, once per
message; ``search_messages`` takes any text; deletion removes the index, retention keeps it;
another process sees the rows; a version 3 store gains the table on open and keeps its rows.
Every case runs on both backends, sync and async (async under blockbuster, see conftest).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _store_support import call, pg_schema, summary_fields
from alembic import command
from sqlalchemy import create_engine, text

from langgraph_compaction import RecalledMessage, SummaryStore
from langgraph_compaction.errors import ThreadDeletedError
from langgraph_compaction.store import IndexedMessage
from langgraph_compaction.store.db.engine import derive_urls
from langgraph_compaction.store.schema.migrate import alembic_config
from langgraph_compaction.store.summary_store import plumbing

ROOT = Path(__file__).resolve().parents[2]

TEXTS = [
    "user: Session 1, 1:56 pm on 8 May, 2023",
    "user: My flight is LH 454 to Lisbon, seat 12C.",
    "assistant: Noted the flight number. Anything else?",
    "user: The deploy failed with error ECONNREFUSED 127.0.0.1:5432",
    "assistant: The database was not running; start it and retry.",
    "user: I prefer window seats and vegetarian meals.",
    "tool search_flights: 3 results for Lisbon",
    "assistant: Caroline said the painting of the sunrise was for the art show.",
]
QUERIES = [
    '"',
    '""',
    "'",
    "*",
    "flight*",
    "a:b",
    "text:flight",
    "NEAR(flight lisbon)",
    "NEAR",
    "AND",
    "flight AND",
    "OR OR OR",
    "NOT flight",
    "flight -lisbon",
    "(flight",
    "^flight",
    "{text}: flight",
    "'; DROP TABLE compaction_messages; --",
    "1' OR '1'='1",
    "\\x00 \x00 nul",
    "!@#$%^&*()",
    "flight & lisbon | !seat <-> x",
    "",
    "   ",
    "the and of what",
]


def indexed(start: int, stop: int, prefix: str = "m") -> list[IndexedMessage]:
    names = {6: "search_flights", 7: "Melanie"}
    kinds = {0: "human", 6: "tool"}
    return [
        IndexedMessage(
            position=p,
            message_id=f"{prefix}{p}",
            type=kinds.get(p, "human" if TEXTS[p].startswith("user") else "ai"),
            name=names.get(p),
            text=TEXTS[p],
        )
        for p in range(start, stop)
    ]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'recall.db'}"
    else:
        with pg_schema("lgc_recall") as pg_url:
            yield pg_url


@pytest.fixture
def recall_store(url: str) -> Iterator[SummaryStore]:
    with SummaryStore(url) as store:
        yield store


def fill(store: SummaryStore, thread: str = "t", namespace: str = "default") -> None:
    """Two summaries, as the pipeline makes them: the first covers 4, the second 4 more."""
    plumbing(store).add_summary(
        **summary_fields(thread, namespace, 1), recall_messages=indexed(0, 4)
    )
    plumbing(store).add_summary(
        **summary_fields(thread, namespace, 2), recall_messages=indexed(4, 8)
    )


def rows(url: str) -> list[tuple[Any, ...]]:
    engine = create_engine(derive_urls(url)[0])
    try:
        with engine.connect() as conn:
            found = conn.execute(
                text(
                    "SELECT thread_id, namespace, position, message_id, type, name, text, "
                    "content_hash FROM compaction_messages ORDER BY thread_id, position"
                )
            )
            return [tuple(row) for row in found]
    finally:
        engine.dispose()


def test_a_summary_indexes_what_it_newly_covers_once(recall_store: SummaryStore, url: str) -> None:
    fill(recall_store)
    # A second worker storing the same prefix, and a re-summarization covering the same
    # messages again, index nothing new.
    plumbing(recall_store).add_summary(
        **summary_fields("t", "default", 2), recall_messages=indexed(0, 8)
    )
    plumbing(recall_store).add_summary(
        **summary_fields("t", "default", 3), recall_messages=indexed(0, 8)
    )
    stored = rows(url)
    assert [(r[2], r[3], r[4], r[5], r[6]) for r in stored] == [
        (m.position, m.message_id, m.type, m.name, m.text) for m in indexed(0, 8)
    ]
    assert len({r[7] for r in stored}) == 8 and all(len(r[7]) == 64 for r in stored)
    assert recall_store.check_integrity() == []


def test_nothing_is_indexed_with_recall_off(recall_store: SummaryStore, url: str) -> None:
    plumbing(recall_store).add_summary(**summary_fields("t", "default", 1))
    assert rows(url) == [] and recall_store.search_messages("t", "flight") == []


def test_search_finds_the_evicted_original_best_first(recall_store: SummaryStore) -> None:
    fill(recall_store)
    best = recall_store.search_messages("t", "what was the error when deploying?")[0]
    assert best == RecalledMessage(
        message_id="m3", position=3, type="human", name=None, text=TEXTS[3], score=best.score
    )
    assert best.score > 0
    assert recall_store.search_messages("t", "ECONNREFUSED")[0].message_id == "m3"
    assert recall_store.search_messages("t", "window seat preference")[0].message_id == "m5"
    hits = recall_store.search_messages("t", "flight", limit=2)
    assert len(hits) == 2 and hits[0].score >= hits[1].score
    assert {h.message_id for h in hits} <= {"m1", "m2"}


def test_a_name_in_the_query_lifts_that_speakers_messages(recall_store: SummaryStore) -> None:
    fill(recall_store)
    assert recall_store.search_messages("t", "what did Melanie say about the painting")[0].name == (
        "Melanie"
    )


@pytest.mark.parametrize("query", QUERIES)
def test_any_query_text_is_safe(recall_store: SummaryStore, query: str) -> None:
    fill(recall_store)
    hits = recall_store.search_messages("t", query)
    assert all(isinstance(h, RecalledMessage) for h in hits)
    if not any(ch.isalnum() for ch in query) or query == "the and of what":
        assert hits == []
    assert recall_store.search_messages("t", "flight")  # the table is intact


async def test_sync_and_async_agree(recall_store: SummaryStore) -> None:
    await call(recall_store, False, "add_summary", **summary_fields("t", "default", 1),
               recall_messages=indexed(0, 4))  # fmt: skip
    await plumbing(recall_store).aadd_summary(
        **summary_fields("t", "default", 2), recall_messages=indexed(4, 8)
    )
    for query in ["flight lisbon", "error", "vegetarian", "Melanie painting", *QUERIES[:8]]:
        sync = await call(recall_store, False, "search_messages", "t", query, limit=3)
        assert await recall_store.asearch_messages("t", query, limit=3) == sync


def test_threads_and_namespaces_are_kept_apart(recall_store: SummaryStore) -> None:
    fill(recall_store, "t")
    plumbing(recall_store).add_summary(
        **summary_fields("t-2", "default", 1), recall_messages=indexed(0, 4)
    )
    plumbing(recall_store).add_summary(
        **summary_fields("t", "other", 1), recall_messages=indexed(4, 8)
    )
    hits = recall_store.search_messages("t-2", "flight deploy vegetarian")
    assert {h.position for h in hits} <= {0, 1, 2, 3}
    assert recall_store.search_messages("t", "ECONNREFUSED", namespace="other") == []
    assert recall_store.search_messages("t", "vegetarian", namespace="other")[0].position == 5
    assert recall_store.search_messages("nobody", "flight") == []


def test_a_deleted_thread_returns_nothing(recall_store: SummaryStore, url: str) -> None:
    fill(recall_store)
    fill(recall_store, "kept")
    state = recall_store.thread_state("t", "default")
    recall_store.delete_thread("t")
    assert recall_store.search_messages("t", "flight") == []
    assert {r[0] for r in rows(url)} == {"kept"}
    # A summary computed before the deletion indexes nothing either.
    with pytest.raises(ThreadDeletedError):
        plumbing(recall_store).add_summary(
            **summary_fields("t", "default", 3), generation=state.generation,
            recall_messages=indexed(0, 8),
        )  # fmt: skip
    assert recall_store.search_messages("t", "flight") == []
    assert recall_store.search_messages("kept", "flight")
    assert recall_store.check_integrity() == []


async def test_a_deletion_in_every_namespace_removes_every_index(
    recall_store: SummaryStore,
) -> None:
    await plumbing(recall_store).aadd_summary(
        **summary_fields("t", "a", 1), recall_messages=indexed(0, 4)
    )
    await plumbing(recall_store).aadd_summary(
        **summary_fields("t", "b", 1), recall_messages=indexed(0, 4)
    )
    await recall_store.adelete_thread("t")
    assert await recall_store.asearch_messages("t", "flight", namespace="a") == []
    assert await recall_store.asearch_messages("t", "flight", namespace="b") == []


def test_retention_never_drops_indexed_messages(url: str) -> None:
    with SummaryStore(url, retention=1) as store:
        fill(store)
        plumbing(store).add_summary(**summary_fields("t", "default", 3))
        assert len(store.list_summaries("t")) == 1
        assert store.search_messages("t", "flight")[0].position in (1, 2)
        assert len(rows(url)) == 8


def test_neighbours_and_dates_are_derived_across_batches(
    recall_store: SummaryStore, url: str
) -> None:
    fill(recall_store)
    engine = create_engine(derive_urls(url)[0])
    with engine.connect() as conn:
        found = conn.execute(
            text(
                "SELECT position, previous_text, next_text, session_date "
                "FROM compaction_messages ORDER BY position"
            )
        ).all()
    engine.dispose()
    by_position = {row[0]: row for row in found}
    # The last message of the first batch learnt its later neighbours from the second.
    assert by_position[3][2] == f"{TEXTS[4]}\n{TEXTS[5]}"
    assert by_position[4][1] == f"{TEXTS[2]}\n{TEXTS[3]}"
    assert {row[3] for row in found} == {"8 May, 2023"}


def test_bad_arguments_are_refused_before_any_database_work(recall_store: SummaryStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        recall_store.search_messages("t", "x", limit=0)
    with pytest.raises(ValueError, match="position"):
        IndexedMessage(position=-1, message_id="m", type="human", name=None, text="x")
    with pytest.raises(ValueError, match="message_id"):
        IndexedMessage(position=1, message_id="", type="human", name=None, text="x")
    with pytest.raises(ValueError, match="IndexedMessage"):
        plumbing(recall_store).add_summary(
            **summary_fields("t", "default", 1),
            recall_messages=["x"],  # type: ignore[list-item]
        )
    assert recall_store.list_summaries("t") == []


@pytest.mark.slow
def test_a_second_process_finds_what_the_first_indexed(url: str) -> None:
    script = (
        "import sys; sys.path[:0] = [sys.argv[2], sys.argv[2] + '/store'];"
        "from test_recall_store import fill; from langgraph_compaction import SummaryStore;"
        "store = SummaryStore(sys.argv[1]); fill(store, 'shared'); store.close()"
    )
    subprocess.run(
        [sys.executable, "-c", script, url, str(ROOT / "tests")], check=True, timeout=120
    )
    with SummaryStore(url) as store:
        assert store.search_messages("shared", "ECONNREFUSED")[0].message_id == "m3"


def test_a_version_3_store_gains_the_index_and_keeps_its_rows(url: str) -> None:
    with SummaryStore(url) as store:
        first = plumbing(store).add_summary(**summary_fields("t", "default", 1))
        plumbing(store).record_failure("t", "default", message_count=3, error="boom")
    engine = create_engine(derive_urls(url)[0])
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0003")
    with engine.connect() as conn:
        assert conn.scalar(text("SELECT value FROM compaction_meta")) == "3"
    engine.dispose()

    with SummaryStore(url) as store:  # 3 -> 4 on open
        assert store.list_summaries("t") == [first]
        assert store.thread_state("t", "default").consecutive_failures == 1
        assert store.search_messages("t", "flight") == []
        plumbing(store).add_summary(
            **summary_fields("t", "default", 2), recall_messages=indexed(0, 4)
        )
        assert store.search_messages("t", "flight")[0].position in (1, 2)
        assert store.check_integrity() == []


async def test_async_methods_never_block_the_loop(url: str) -> None:
    # conftest runs this under blockbuster as langgraph dev sets it; a fresh store, so the
    # schema is created (off the loop) by the first call.
    store = SummaryStore(url)
    try:
        await plumbing(store).aadd_summary(
            **summary_fields("t", "default", 1), recall_messages=indexed(0, 8)
        )
        assert (await store.asearch_messages("t", "vegetarian"))[0].position == 5
        assert await store.asearch_messages("t", "*") == []
        await store.adelete_thread("t")
        assert await store.asearch_messages("t", "vegetarian") == []
    finally:
        await store.aclose()


def test_the_check_finds_edited_rows_and_a_stale_full_text_index(
    recall_store: SummaryStore, url: str
) -> None:
    fill(recall_store)
    assert recall_store.check_integrity() == []
    engine = create_engine(derive_urls(url)[0])
    with engine.begin() as conn:
        conn.execute(text("UPDATE compaction_messages SET text = 'edited' WHERE position = 1"))
        if url.startswith("sqlite"):  # drop one row from FTS5 behind the table's back
            conn.execute(
                text(
                    "INSERT INTO compaction_messages_fts(compaction_messages_fts, rowid, "
                    "thread_id, text, previous_text, next_text, session_date) SELECT 'delete', "
                    "id, thread_id, text, previous_text, next_text, session_date "
                    "FROM compaction_messages WHERE position = 2"
                )
            )
    engine.dispose()
    problems = recall_store.check_integrity()
    assert any("'m1'" in p and "content_hash" in p for p in problems)
    if url.startswith("sqlite"):
        assert any("out of step" in p for p in problems)
