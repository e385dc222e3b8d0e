"""What the integrity check found, in the store (DESIGN 6.13, schema 7): the ``integrity_*``
columns of a summary row, NULL when no check ran (``integrity=None``, a person's edit, a row
older than schema 7), schema 6 upgraded in place and back, ``IntegrityColumns``' refusals,
the consistency check, and ``inspect``'s per-version figures and JSON.

Every store body runs on SQLite and PostgreSQL, sync and async (the ``backend`` fixture).
"""

# ruff: noqa: RUF001 (Chinese punctuation and Cyrillic letters in the texts)

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from _store_support import Backend, raw_transaction, summary_fields
from alembic import command
from sqlalchemy import inspect, text

from langgraph_compaction.store import IntegrityColumns, SummaryRecord, SummaryStore
from langgraph_compaction.store.cli.inspect import main as cli
from langgraph_compaction.store.cli.render import WIDTH
from langgraph_compaction.store.schema.migrate import SCHEMA_VERSION, alembic_config
from langgraph_compaction.store.summary_store import plumbing

COLUMNS = (
    "integrity_identifiers", "integrity_kept", "integrity_appended", "integrity_dropped",
    "integrity_artifacts", "integrity_repaired", "integrity_items",
)  # fmt: skip
NO_CHECK = (None,) * len(COLUMNS)
ITEMS_VALUE = {
    "v": 1,
    "identifiers": [
        {"text": "ETL-212", "kind": "issue", "source": "user", "message_id": "m-3"},
        {"text": "/srv/导出/夜间.csv", "kind": "path", "source": "tool_call", "message_id": "m-4"},
        {"text": "Денвер", "kind": "name", "source": "user", "message_id": "m-1"},
    ],
    "artifacts": [
        {"tool": "bash", "target": "rm -rf /tmp/export", "calls": 2, "outcome": "error"},
    ],
}
ITEMS = json.dumps(ITEMS_VALUE, ensure_ascii=False)
CHECKED = IntegrityColumns(
    identifiers=15, kept=12, appended=4, dropped=1, artifacts=3, repaired=True, items=ITEMS
)
EMPTY_ITEMS = '{"v": 1, "identifiers": [], "artifacts": []}'
ALL_KEPT = IntegrityColumns(
    identifiers=0, kept=0, appended=0, dropped=0, artifacts=0, repaired=False, items=EMPTY_ITEMS
)


def integrity_of(record: SummaryRecord) -> tuple[Any, ...]:
    return tuple(getattr(record, name) for name in COLUMNS)


def as_row(integrity: IntegrityColumns) -> tuple[Any, ...]:
    return (
        integrity.identifiers, integrity.kept, integrity.appended, integrity.dropped,
        integrity.artifacts, integrity.repaired, integrity.items,
    )  # fmt: skip


def stored_integrity(url: str, where: str) -> list[tuple[Any, ...]]:
    """The integrity columns as the database holds them (a bool is 0 or 1 on SQLite)."""
    with raw_transaction(url) as conn:
        query = f"SELECT {', '.join(COLUMNS)} FROM compaction_summaries WHERE {where}"
        return [tuple(row) for row in conn.execute(text(query))]


def meta_version(url: str) -> str:
    with raw_transaction(url) as conn:
        return str(conn.execute(text("SELECT value FROM compaction_meta")).scalar())


# -- the columns ---------------------------------------------------------------------------------


async def test_integrity_is_stored_in_its_columns_and_read_back(backend: Backend) -> None:
    b = backend
    first = await b.add_summary(
        **summary_fields(b.thread, b.ns, 1, summary="用户要导出 ETL-212 的夜间数据。"),
        integrity=CHECKED,
    )
    second = await b.add_summary(
        **summary_fields(b.thread, b.ns, 2, parent_id=first.id, summary="Пользователь — Денвер."),
        integrity=ALL_KEPT,
    )
    third = await b.add_summary(**summary_fields(b.thread, b.ns, 3, parent_id=second.id))

    assert integrity_of(first) == as_row(CHECKED)
    assert integrity_of(second) == as_row(ALL_KEPT)
    assert integrity_of(third) == NO_CHECK
    listed = await b.list_summaries(b.thread, b.ns)
    assert listed == [first, second, third]
    assert [type(r.integrity_repaired) for r in listed] == [bool, bool, type(None)]
    assert json.loads(listed[0].integrity_items or "") == ITEMS_VALUE
    assert await b.find_summary(b.thread, b.ns, "prefix-1") == first
    assert await b.latest_summaries(b.thread, b.ns, 2) == [third, second]
    # Another store's first read goes through its control reader's own connection.
    fresh = await b.on(b.open())("latest_summaries", b.thread, b.ns, 3)
    assert fresh == [third, second, first]
    assert [type(r.integrity_repaired) for r in fresh] == [type(None), bool, bool]

    rows = await asyncio.to_thread(
        stored_integrity, b.url, f"thread_id = '{b.thread}' ORDER BY version"
    )
    assert rows == [as_row(CHECKED), as_row(ALL_KEPT), NO_CHECK]  # True == 1 on SQLite


async def test_a_prefix_stored_already_keeps_the_first_rows_integrity(backend: Backend) -> None:
    b = backend
    first = await b.add_summary(**summary_fields(b.thread, b.ns, 1), integrity=CHECKED)
    again = await b.add_summary(**summary_fields(b.thread, b.ns, 1), integrity=ALL_KEPT)
    assert again == first and integrity_of(again) == as_row(CHECKED)


async def test_an_edit_stores_no_integrity(backend: Backend) -> None:
    b = backend
    await b.add_summary(**summary_fields(b.thread, b.ns, 1), integrity=CHECKED)
    edited = await b.edit_summary(b.thread, "用户改了：导出 ETL-213。", namespace=b.ns)
    assert integrity_of(edited) == NO_CHECK
    assert (await b.list_summaries(b.thread, b.ns))[-1] == edited
    where = f"thread_id = '{b.thread}' AND kind = 'edited'"
    assert await asyncio.to_thread(stored_integrity, b.url, where) == [NO_CHECK]


async def test_integrity_that_is_not_integrity_columns_is_refused(backend: Backend) -> None:
    b = backend
    as_dict = {"identifiers": 3, "kept": 3}
    with pytest.raises(ValueError, match=r"^integrity must be an IntegrityColumns or None"):
        await b.add_summary(**summary_fields(b.thread, b.ns, 1), integrity=as_dict)
    assert await b.list_summaries(b.thread, b.ns) == []


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("identifiers", -1, r"^IntegrityColumns\.identifiers must be an int >= 0, got -1$"),
        ("kept", 1.0, r"^IntegrityColumns\.kept must be an int >= 0, got 1\.0$"),
        ("appended", True, r"^IntegrityColumns\.appended must be an int >= 0, got True$"),
        ("dropped", "2", r"^IntegrityColumns\.dropped must be an int >= 0, got '2'$"),
        ("artifacts", None, r"^IntegrityColumns\.artifacts must be an int >= 0, got None$"),
        ("kept", 16, r"^IntegrityColumns\.kept \(16\) exceeds identifiers \(15\)$"),
        ("repaired", 1, r"^IntegrityColumns\.repaired must be a bool, got 1$"),
        ("repaired", None, r"^IntegrityColumns\.repaired must be a bool, got None$"),
        ("items", "{'v': 1}", r"^IntegrityColumns\.items must be JSON text \(a str\): Expecting"),
        ("items", "", r"^IntegrityColumns\.items must be JSON text \(a str\): Expecting value"),
        ("items", b"{}", r"^IntegrityColumns\.items must be JSON text \(a str\): got b'\{\}'$"),
        ("items", {"v": 1}, r"^IntegrityColumns\.items must be JSON text \(a str\): got \{"),
    ],
)
def test_integrity_columns_refuse_a_bad_value_naming_the_field(
    field: str, value: Any, error: str
) -> None:
    fields: dict[str, Any] = {
        "identifiers": 15, "kept": 12, "appended": 4, "dropped": 1, "artifacts": 3,
        "repaired": False, "items": EMPTY_ITEMS,
    }  # fmt: skip
    IntegrityColumns(**fields)  # the base is sound
    with pytest.raises(ValueError, match=error):
        IntegrityColumns(**{**fields, field: value})


# -- schema 7 ------------------------------------------------------------------------------------

STAMP = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)


def build_version_6_store(url: str) -> None:
    """A store at schema 6 (the project's migrations up to 0006) holding one summary."""
    with raw_transaction(url) as conn:
        command.upgrade(alembic_config(conn), "0006")
    stored: Any = STAMP.isoformat(timespec="microseconds") if url.startswith("sqlite") else STAMP
    with raw_transaction(url) as conn:
        assert conn.execute(text("SELECT value FROM compaction_meta")).scalar() == "6"
        conn.execute(
            text(
                "INSERT INTO compaction_summaries VALUES ('a', 't', 'ns', 1, NULL, 'm-1', 10, "
                "'h1', 'Первая сводка: ETL-212.', 5, 100, 'initial', 'gpt-x', :at, '[]', NULL, "
                "NULL, 1200, 300, NULL)"
            ),
            {"at": stored},
        )


def test_a_version_6_store_is_upgraded_in_place_keeping_its_rows(store_url: str) -> None:
    build_version_6_store(store_url)

    with SummaryStore(store_url) as store:  # 6 -> 7 on open
        (old,) = store.list_summaries("t", "ns")
        assert (old.id, old.summary, old.created_at, old.input_tokens, old.output_tokens) == (
            "a", "Первая сводка: ETL-212.", STAMP, 1200, 300,
        )  # fmt: skip
        assert integrity_of(old) == NO_CHECK
        new = plumbing(store).add_summary(
            **summary_fields("t", "ns", 2, parent_id="a"), integrity=CHECKED
        )
        assert (new.version, integrity_of(new)) == (2, as_row(CHECKED))
        assert store.list_summaries("t", "ns") == [old, new]
        assert store.check_integrity() == []
    assert meta_version(store_url) == str(SCHEMA_VERSION) == "7"
    assert stored_integrity(store_url, "id = 'a'") == [NO_CHECK]


def test_a_version_7_store_downgrades_to_6_and_up_again(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        first = plumbing(store).add_summary(**summary_fields("t", "ns", 1), integrity=CHECKED)
    with raw_transaction(store_url) as conn:
        command.downgrade(alembic_config(conn), "0006")
    assert meta_version(store_url) == "6"
    with raw_transaction(store_url) as conn:
        names = {c["name"] for c in inspect(conn).get_columns("compaction_summaries")}
        assert not names & set(COLUMNS) and "cache_read_tokens" in names
        kept = conn.execute(text("SELECT id, summary FROM compaction_summaries")).all()
    assert [tuple(row) for row in kept] == [(first.id, first.summary)]

    with SummaryStore(store_url) as store:  # 6 -> 7 again; what the columns held is gone
        (row,) = store.list_summaries("t", "ns")
        assert (row.id, integrity_of(row)) == (first.id, NO_CHECK)
        assert store.check_integrity() == []
    assert meta_version(store_url) == "7"


def test_the_check_reports_integrity_figures_out_of_range(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        row = plumbing(store).add_summary(**summary_fields("t", "default", 1), integrity=CHECKED)
        assert store.check_integrity() == []
    with raw_transaction(store_url) as conn:
        conn.execute(
            text(
                "UPDATE compaction_summaries SET integrity_kept = 20, integrity_dropped = -1, "
                "integrity_items = '{not json'"
            )
        )
    with SummaryStore(store_url) as store:
        problems = store.check_integrity()
    assert problems == [
        f"summary {row.id}: negative integrity_dropped",
        f"summary {row.id}: integrity_kept 20 exceeds integrity_identifiers 15",
        f"summary {row.id}: integrity_items is not JSON text",
    ]


# -- inspect -------------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``inspect``'s output, after checking it exits 0 and fits a 100-column terminal."""
    assert cli(["inspect", *args]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    if "--json" not in args:
        too_wide = [line for line in out.splitlines() if len(line) > WIDTH]
        assert not too_wide, too_wide
    return out


def test_inspect_shows_each_versions_integrity(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SummaryStore(store_url) as store:
        add = plumbing(store).add_summary
        v1 = add(**summary_fields("东京-trip", "default", 1), integrity=CHECKED)
        v2 = add(**summary_fields("东京-trip", "default", 2, parent_id=v1.id), integrity=ALL_KEPT)
        add(**summary_fields("东京-trip", "default", 3, parent_id=v2.id))  # integrity off
        store.edit_summary("东京-trip", "Поездка в Токио, ETL-212.", namespace="default")

    versions = run(capsys, "--url", store_url, "--thread", "东京-trip")
    blocks = versions.split("\nv")[1:]
    assert len(blocks) == 4
    third_lines = [block.splitlines()[2] for block in blocks]
    assert third_lines[:2] == [
        "    integrity  ids 12/15 kept  ledger +4 -1  artifacts 3  repaired yes",
        "    integrity  ids 0/0 kept  ledger +0 -0  artifacts 0  repaired no",
    ]
    assert not any("integrity" in line for line in third_lines[2:])  # no check: no line

    data = json.loads(run(capsys, "--url", store_url, "--thread", "东京-trip", "--json"))
    figures = [{k: v[k] for k in COLUMNS} for v in data["versions"]]
    assert figures == [
        {**dict(zip(COLUMNS, as_row(CHECKED), strict=True)), "integrity_items": ITEMS_VALUE},
        {
            **dict(zip(COLUMNS, as_row(ALL_KEPT), strict=True)),
            "integrity_items": json.loads(EMPTY_ITEMS),
        },
        dict(zip(COLUMNS, NO_CHECK, strict=True)),
        dict(zip(COLUMNS, NO_CHECK, strict=True)),
    ]
    assert [type(f["integrity_repaired"]) for f in figures[:2]] == [bool, bool]
    overview = json.loads(run(capsys, "--url", store_url, "--json"))
    assert overview["threads"][0]["integrity_kept"] is None  # the newest version: the edit


def test_inspect_shows_one_null_figure_as_a_dash(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SummaryStore(store_url) as store:
        plumbing(store).add_summary(**summary_fields("t", "default", 1), integrity=CHECKED)
    with raw_transaction(store_url) as conn:  # a hand edit
        conn.execute(text("UPDATE compaction_summaries SET integrity_repaired = NULL"))
        conn.execute(text("UPDATE compaction_summaries SET integrity_dropped = NULL"))
    versions = run(capsys, "--url", store_url, "--thread", "t")
    assert "    integrity  ids 12/15 kept  ledger +4 -  artifacts 3  repaired -" in versions


def test_inspect_reads_a_version_6_store_without_integrity(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    build_version_6_store(store_url)
    versions = run(capsys, "--url", store_url, "--thread", "t")
    assert "schema_version 6" in versions and "Первая сводка" in versions
    assert "usage 1,200 in, 300 out, n/a cache-read" in versions
    assert "integrity" not in versions
    data = json.loads(run(capsys, "--url", store_url, "--thread", "t", "--json"))
    assert not set(COLUMNS) & set(data["versions"][0]) and data["schema_version"] == "6"
