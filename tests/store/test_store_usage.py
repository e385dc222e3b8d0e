"""What each summary cost, in the store (DESIGN 6.12, schema 6): the usage counts of a summary
row and of a review draft, NULL when not reported (never 0), schema 5 upgraded in place, the
check, and ``inspect``'s totals and per-version usage, run as a real ``python -m`` process.

Every store body runs on SQLite and PostgreSQL, sync and async (the ``backend`` fixture).
"""

# ruff: noqa: RUF001 (Chinese punctuation and Arabic letters in the texts)

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _store_support import Backend, raw_transaction, summary_fields
from alembic import command
from sqlalchemy import text

from langgraph_compaction.store import ReviewDraft, SummaryRecord, SummaryStore
from langgraph_compaction.store.cli.render import WIDTH
from langgraph_compaction.store.schema.migrate import SCHEMA_VERSION, alembic_config
from langgraph_compaction.store.summary_store import plumbing

ROOT = Path(__file__).resolve().parents[2]
USAGE = ("input_tokens", "output_tokens", "cache_read_tokens")


def usage_of(row: SummaryRecord | ReviewDraft) -> tuple[int | None, ...]:
    return (row.input_tokens, row.output_tokens, row.cache_read_tokens)


def stored_usage(url: str, table: str, where: str) -> list[tuple[Any, ...]]:
    with raw_transaction(url) as conn:
        query = f"SELECT {', '.join(USAGE)} FROM {table} WHERE {where}"
        return [tuple(row) for row in conn.execute(text(query))]


# -- summaries -----------------------------------------------------------------------------------


async def test_usage_is_stored_and_read_back_null_when_not_reported(backend: Backend) -> None:
    b = backend
    first = await b.add_summary(
        **summary_fields(b.thread, b.ns, 1, summary="用户要订去东京的机票。"),
        input_tokens=12_034,
        output_tokens=512,
        cache_read_tokens=0,  # reported as none read from cache: a real 0, kept
    )
    second = await b.add_summary(
        **summary_fields(b.thread, b.ns, 2, parent_id=first.id, summary="Пользователь — Токио.")
    )
    third = await b.add_summary(
        **summary_fields(b.thread, b.ns, 3, parent_id=second.id, summary="المستخدم يريد طوكيو"),
        input_tokens=900,
    )

    assert usage_of(first) == (12_034, 512, 0)
    assert usage_of(second) == (None, None, None)
    assert usage_of(third) == (900, None, None)
    listed = await b.list_summaries(b.thread, b.ns)
    assert [usage_of(r) for r in listed] == [
        (12_034, 512, 0),
        (None, None, None),
        (900, None, None),
    ]
    assert listed == [first, second, third]
    assert await b.find_summary(b.thread, b.ns, "prefix-1") == first
    assert await b.latest_summaries(b.thread, b.ns, 1) == [third]
    # In the database: NULL for what was not reported, never 0.
    rows = await asyncio.to_thread(
        stored_usage, b.url, "compaction_summaries", f"thread_id = '{b.thread}'"
    )
    assert sorted(rows, key=str) == sorted(
        [(12_034, 512, 0), (None, None, None), (900, None, None)], key=str
    )


async def test_a_prefix_stored_already_keeps_the_first_rows_usage(backend: Backend) -> None:
    b = backend
    first = await b.add_summary(**summary_fields(b.thread, b.ns, 1), input_tokens=100)
    again = await b.add_summary(**summary_fields(b.thread, b.ns, 1), input_tokens=999)
    assert again == first and usage_of(again) == (100, None, None)


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("input_tokens", -1, r"^input_tokens must be >= 0 or None \(not reported\), got -1$"),
        ("output_tokens", -7, r"^output_tokens must be >= 0 or None \(not reported\), got -7$"),
        ("cache_read_tokens", -2, r"^cache_read_tokens must be >= 0 or None .*, got -2$"),
        ("input_tokens", 1.5, r"^input_tokens must be an int >= 0 or None .*, got 1.5$"),
        ("output_tokens", True, r"^output_tokens must be an int >= 0 or None .*, got True$"),
        ("cache_read_tokens", "12", r"^cache_read_tokens must be an int >= 0 .*, got '12'$"),
    ],
)
async def test_a_bad_usage_count_is_refused_naming_the_field(
    backend: Backend, field: str, value: Any, error: str
) -> None:
    b = backend
    with pytest.raises(ValueError, match=error):
        await b.add_summary(**summary_fields(b.thread, b.ns, 1), **{field: value})
    review = {"thread_id": b.thread, "namespace": b.ns, "prefix_hash": "p", "model": None}
    with pytest.raises(ValueError, match=error):
        await b.save_review(**review, summary="Черновик.", kind="initial", **{field: value})
    assert await b.list_summaries(b.thread, b.ns) == []
    assert await b.find_review_draft(b.thread, b.ns, "p") is None


async def test_an_edit_stores_no_usage(backend: Backend) -> None:
    b = backend
    await b.add_summary(
        **summary_fields(b.thread, b.ns, 1), input_tokens=5, output_tokens=6, cache_read_tokens=7
    )
    edited = await b.edit_summary(b.thread, "用户改了：去大阪。", namespace=b.ns)
    assert usage_of(edited) == (None, None, None)
    assert (await b.list_summaries(b.thread, b.ns))[-1] == edited
    where = f"thread_id = '{b.thread}' AND kind = 'edited'"
    assert await asyncio.to_thread(stored_usage, b.url, "compaction_summaries", where) == [
        (None, None, None)
    ]


# -- review drafts -------------------------------------------------------------------------------


async def test_a_review_draft_carries_its_usage(backend: Backend) -> None:
    b = backend
    review = {"thread_id": b.thread, "namespace": b.ns, "prefix_hash": "prefix-2", "model": "m"}
    assert await b.find_review_draft(b.thread, b.ns, "prefix-2") is None
    await b.save_review(
        **review,
        summary="Черновик для проверки.",
        kind="update",
        input_tokens=3_000,
        output_tokens=250,
        cache_read_tokens=2_048,
    )
    assert await b.find_review_draft(b.thread, b.ns, "prefix-2") == ReviewDraft(
        "Черновик для проверки.", "m", 3_000, 250, 2_048
    )

    # A new draft of the prefix replaces the old one, its usage too (not reported: NULL).
    await b.save_review(**review, summary="مسودة ثانية", kind="update")
    draft = await b.find_review_draft(b.thread, b.ns, "prefix-2")
    assert draft == ReviewDraft("مسودة ثانية", "m", None, None, None)
    where = f"thread_id = '{b.thread}'"
    assert await asyncio.to_thread(stored_usage, b.url, "compaction_reviews", where) == [
        (None, None, None)
    ]
    assert await b.find_review_draft(b.thread, f"{b.ns}-2", "prefix-2") is None

    await b.drop_review(b.thread, b.ns, "prefix-2")
    assert await b.find_review_draft(b.thread, b.ns, "prefix-2") is None


# -- schema 6 ------------------------------------------------------------------------------------


def test_a_version_5_store_is_upgraded_in_place_keeping_its_rows(store_url: str) -> None:
    with raw_transaction(store_url) as conn:
        command.upgrade(alembic_config(conn), "0005")
    stamp: Any = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
    stored = stamp.isoformat(timespec="microseconds") if store_url.startswith("sqlite") else stamp
    with raw_transaction(store_url) as conn:
        assert conn.execute(text("SELECT value FROM compaction_meta")).scalar() == "5"
        conn.execute(
            text(
                "INSERT INTO compaction_summaries VALUES ('a', 't', 'ns', 1, NULL, 'm-1', 10, "
                "'h1', 'Первая сводка.', 5, 100, 'initial', 'gpt-x', :at, '[]', NULL, NULL)"
            ),
            {"at": stored},
        )
        conn.execute(
            text(
                "INSERT INTO compaction_reviews VALUES "
                "('t', 'ns', 'h2', '第二个草稿。', 'update', 'gpt-x', :at)"
            ),
            {"at": stored},
        )

    with SummaryStore(store_url) as store:  # 5 -> 6 on open
        (old,) = store.list_summaries("t", "ns")
        assert (old.id, old.summary, old.created_at, usage_of(old)) == (
            "a",
            "Первая сводка.",
            stamp,
            (None, None, None),
        )
        draft = plumbing(store).find_review_draft("t", "ns", "h2")
        assert draft == ReviewDraft("第二个草稿。", "gpt-x", None, None, None)
        new = plumbing(store).add_summary(
            **summary_fields("t", "ns", 2, parent_id="a"), input_tokens=40, output_tokens=2
        )
        assert usage_of(new) == (40, 2, None) and new.version == 2
        assert store.check_integrity() == []
    with raw_transaction(store_url) as conn:
        assert conn.execute(text("SELECT value FROM compaction_meta")).scalar() == str(
            SCHEMA_VERSION
        )
    assert stored_usage(store_url, "compaction_summaries", "id = 'a'") == [(None, None, None)]


def test_the_check_reports_a_negative_usage_count(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        plumbing(store).add_summary(**summary_fields("t", "default", 1), input_tokens=10)
        plumbing(store).save_review(
            thread_id="t", namespace="default", prefix_hash="p", summary="Draft.",
            kind="update", model=None, output_tokens=3,
        )  # fmt: skip
        assert store.check_integrity() == []
    with raw_transaction(store_url) as conn:
        conn.execute(text("UPDATE compaction_summaries SET output_tokens = -4"))
        conn.execute(text("UPDATE compaction_reviews SET cache_read_tokens = -1"))
    with SummaryStore(store_url) as store:
        problems = store.check_integrity()
    assert len(problems) == 2, problems
    assert problems[0].endswith(": negative output_tokens")
    assert problems[1] == "review of thread 't' prefix 'p': negative cache_read_tokens"


# -- inspect -------------------------------------------------------------------------------------


def inspect_cli(*args: str) -> str:
    """``python -m langgraph_compaction.store inspect ...`` in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-m", "langgraph_compaction.store", "inspect", *args],
        capture_output=True, text=True, timeout=120, check=False, cwd=ROOT,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    if "--json" not in args:  # JSON is for scripts, and escapes every non-ASCII letter
        too_wide = [line for line in done.stdout.splitlines() if len(line) > WIDTH]
        assert not too_wide, too_wide
    return done.stdout


@pytest.mark.slow  # another process: seconds
def test_inspect_shows_each_threads_totals_and_each_versions_usage(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        v1 = plumbing(store).add_summary(
            **summary_fields("东京-trip", "default", 1), input_tokens=12_034, output_tokens=512,
            cache_read_tokens=0,
        )  # fmt: skip
        v2 = plumbing(store).add_summary(
            **summary_fields("东京-trip", "default", 2, parent_id=v1.id),
            input_tokens=15_200, output_tokens=640,
        )  # fmt: skip
        plumbing(store).add_summary(**summary_fields("东京-trip", "default", 3, parent_id=v2.id))
        store.edit_summary("东京-trip", "رحلة إلى طوكيو", namespace="default")
        store.revoke_summary("东京-trip", namespace="default", version=2)  # its calls were made
        plumbing(store).add_summary(
            **summary_fields("silent", "default", 1)
        )  # a model reporting nothing

    overview = inspect_cli("--url", store_url)
    lines = overview.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("Summary calls' tokens"))
    assert lines[top + 1].split() == [
        "THREAD", "NAMESPACE", "INPUT", "OUTPUT", "CACHE", "READ", "REPORTED", "BY",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split()[1:] for line in lines[top + 3 : top + 5]}
    assert rows == {
        "东京-trip": ["default", "27,234", "1,152", "0", "2", "of", "4", "version(s)"],
        "silent": ["default", "n/a", "n/a", "n/a", "0", "of", "1", "version(s)"],
    }

    versions = inspect_cli("--url", store_url, "--thread", "东京-trip")
    blocks = versions.split("\nv")[1:]
    assert [block.splitlines()[1].split("  usage ")[-1] for block in blocks] == [
        "12,034 in, 512 out, 0 cache-read",
        "15,200 in, 640 out, n/a cache-read",
        "n/a",
        "n/a",
    ]
    assert [block.splitlines()[2].startswith("    REVOKED 20") for block in blocks] == [
        False, True, True, True,
    ]  # fmt: skip

    data = json.loads(inspect_cli("--url", store_url, "--json"))
    totals = {e["thread_id"]: e["summary_usage"] for e in data["threads"]}
    assert totals == {
        "东京-trip": {
            "input_tokens": 27_234, "output_tokens": 1_152, "cache_read_tokens": 0,
            "versions_reported": 2,
        },
        "silent": {
            "input_tokens": None, "output_tokens": None, "cache_read_tokens": None,
            "versions_reported": 0,
        },
    }  # fmt: skip


@pytest.mark.slow  # another process: seconds
def test_inspect_reads_a_version_5_store_without_usage(store_url: str) -> None:
    with raw_transaction(store_url) as conn:
        command.upgrade(alembic_config(conn), "0005")
    with raw_transaction(store_url) as conn:
        conn.execute(
            text(
                "INSERT INTO compaction_summaries VALUES ('a', 't', 'default', 1, NULL, 'm-1', "
                "10, 'h1', 'Старая сводка.', 5, 100, 'initial', 'gpt-x', :at, '[]', NULL, NULL)"
            ),
            {"at": datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC).isoformat(timespec="microseconds")},
        )
    overview = inspect_cli("--url", store_url, "--thread", "t")
    assert "schema_version 5" in overview and "Summary calls' tokens" not in overview
    assert "usage" not in overview and "Старая сводка." in overview
