"""Schema migrations: a store of the first release is upgraded on open, a newer one refused.

The "first release" store is built here by hand, with the DDL that release's ``create_all``
emitted (schema_version 1, no Alembic table), and filled with rows; opening it with today's
SummaryStore must stamp it, run migrations 0002 and 0003, keep every row, and leave a schema
identical to the tables the code declares.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _store_support import raw_transaction
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, text
from sqlalchemy import inspect as sa_inspect

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store import SummaryStore
from langgraph_compaction.store.cli.inspect import main as cli
from langgraph_compaction.store.schema.fulltext import is_fulltext_object
from langgraph_compaction.store.schema.migrate import (
    HEAD_REVISION,
    SCHEMA_VERSION,
    VERSION_TABLE,
    alembic_config,
    create_head_schema,
    current_revision,
    script_directory,
)
from langgraph_compaction.store.sql.summaries import metadata
from langgraph_compaction.store.summary_store import plumbing

FIRST_RELEASE_DDL = {
    "sqlite": """
        CREATE TABLE compaction_summaries (
            id TEXT NOT NULL, thread_id TEXT NOT NULL, namespace TEXT NOT NULL,
            version INTEGER NOT NULL, parent_id TEXT, boundary_message_id TEXT NOT NULL,
            covered_messages INTEGER NOT NULL, prefix_hash TEXT NOT NULL, summary TEXT NOT NULL,
            summary_tokens INTEGER NOT NULL, source_tokens INTEGER NOT NULL, kind TEXT NOT NULL,
            model TEXT, created_at VARCHAR(32) NOT NULL, rescued_message_ids TEXT NOT NULL,
            PRIMARY KEY (id),
            CONSTRAINT ck_compaction_summaries_kind CHECK (kind IN ('initial', 'update')));
        CREATE UNIQUE INDEX ix_compaction_summaries_newest
            ON compaction_summaries (thread_id, namespace, version DESC);
        CREATE UNIQUE INDEX ux_compaction_summaries_prefix
            ON compaction_summaries (thread_id, namespace, prefix_hash);
        CREATE TABLE compaction_threads (
            thread_id TEXT NOT NULL, namespace TEXT NOT NULL,
            consecutive_failures INTEGER NOT NULL, messages_at_last_failure INTEGER,
            last_error TEXT, last_failure_at VARCHAR(32), calibration FLOAT,
            updated_at VARCHAR(32) NOT NULL,
            CONSTRAINT pk_compaction_threads PRIMARY KEY (thread_id, namespace));
        CREATE TABLE compaction_meta (
            "key" TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY ("key"));
    """,
    "postgresql": """
        CREATE TABLE compaction_summaries (
            id TEXT NOT NULL, thread_id TEXT NOT NULL, namespace TEXT NOT NULL,
            version INTEGER NOT NULL, parent_id TEXT, boundary_message_id TEXT NOT NULL,
            covered_messages INTEGER NOT NULL, prefix_hash TEXT NOT NULL, summary TEXT NOT NULL,
            summary_tokens INTEGER NOT NULL, source_tokens INTEGER NOT NULL, kind TEXT NOT NULL,
            model TEXT, created_at TIMESTAMP WITH TIME ZONE NOT NULL,
            rescued_message_ids TEXT NOT NULL,
            PRIMARY KEY (id),
            CONSTRAINT ck_compaction_summaries_kind CHECK (kind IN ('initial', 'update')));
        CREATE UNIQUE INDEX ix_compaction_summaries_newest
            ON compaction_summaries (thread_id, namespace, version DESC);
        CREATE UNIQUE INDEX ux_compaction_summaries_prefix
            ON compaction_summaries (thread_id, namespace, prefix_hash);
        CREATE TABLE compaction_threads (
            thread_id TEXT NOT NULL, namespace TEXT NOT NULL,
            consecutive_failures INTEGER NOT NULL, messages_at_last_failure INTEGER,
            last_error TEXT, last_failure_at TIMESTAMP WITH TIME ZONE, calibration FLOAT,
            updated_at TIMESTAMP WITH TIME ZONE NOT NULL,
            CONSTRAINT pk_compaction_threads PRIMARY KEY (thread_id, namespace));
        CREATE TABLE compaction_meta (
            "key" TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY ("key"));
    """,
}

STAMP = "2025-01-02T03:04:05.000006+00:00"
# Thread t1: v2 (its parent v1 already trimmed by retention), v3 <- v2, v4 <- v3.
FIRST_RELEASE_ROWS = [
    ("id-2", "t1", "ns", 2, "id-1", "m-20", 20, "h2", "Second.", 5, 500, "update"),
    ("id-3", "t1", "ns", 3, "id-2", "m-30", 30, "h3", "Third.", 6, 600, "update"),
    ("id-4", "t1", "ns", 4, "id-3", "m-40", 40, "h4", "Fourth.", 7, 700, "update"),
    ("id-a", "t2", "other", 1, None, "m-9", 9, "ha", "Other thread.", 4, 90, "initial"),
]


def execute(url: str, *statements: str, params: list[dict[str, Any]] | None = None) -> None:
    with raw_transaction(url) as conn:
        for statement in statements:
            conn.execute(text(statement), params or {})


def fetch(url: str, query: str) -> list[tuple[Any, ...]]:
    with raw_transaction(url) as conn:
        return [tuple(row) for row in conn.execute(text(query))]


def build_first_release_store(url: str) -> None:
    """The tables and rows a store of the first release (schema_version 1) holds."""
    dialect = "sqlite" if url.startswith("sqlite") else "postgresql"
    ddl = [s for s in FIRST_RELEASE_DDL[dialect].split(";") if s.strip()]
    stamp: Any = STAMP if dialect == "sqlite" else datetime.fromisoformat(STAMP)
    rows = [
        dict(
            zip(["id", "t", "ns", "v", "p", "b", "c", "h", "s", "st", "so", "k"], row, strict=True)
        )
        | {"at": stamp}
        for row in FIRST_RELEASE_ROWS
    ]
    with raw_transaction(url) as conn:
        for statement in ddl:
            conn.execute(text(statement))
        conn.execute(
            text(
                "INSERT INTO compaction_summaries VALUES "
                "(:id, :t, :ns, :v, :p, :b, :c, :h, :s, :st, :so, :k, 'gpt-x', :at, '[\"r-1\"]')"
            ),
            rows,
        )
        conn.execute(
            text(
                "INSERT INTO compaction_threads VALUES "
                "('t1', 'ns', 2, 41, 'timed out', :at, 1.25, :at)"
            ),
            {"at": stamp},
        )
        conn.execute(text("INSERT INTO compaction_meta VALUES ('schema_version', '1')"))


def schema_differences(url: str) -> list[Any]:
    """What differs between the database's tables and the ones the code declares."""
    with raw_transaction(url) as conn, warnings.catch_warnings():
        # Reflection cannot read back the DESC expression of an index; the names and
        # columns still get compared.
        warnings.filterwarnings("ignore", message=".*expression-based index")
        opts = {
            "version_table": VERSION_TABLE,
            # The full-text objects are made by hand, not declared (store/_fulltext.py).
            "include_name": lambda name, type_, parents: (
                not is_fulltext_object(name, type_, parents)
            ),
        }
        context = MigrationContext.configure(conn, opts=opts)
        return list(compare_metadata(context, metadata))


def test_the_head_revision_is_the_schema_version() -> None:
    scripts = script_directory()
    assert scripts.get_heads() == [HEAD_REVISION]
    chain = [s.revision for s in reversed(list(scripts.walk_revisions()))]
    assert chain == [f"{n:04d}" for n in range(1, SCHEMA_VERSION + 1)]


def test_a_new_database_gets_the_declared_tables(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        assert store.list_summaries("t") == []

    assert fetch(store_url, "SELECT version_num FROM compaction_alembic_version") == [
        (HEAD_REVISION,)
    ]
    assert fetch(store_url, "SELECT value FROM compaction_meta") == [(str(SCHEMA_VERSION),)]
    assert schema_differences(store_url) == []


def test_a_first_release_store_is_upgraded_on_open_and_keeps_its_rows(store_url: str) -> None:
    build_first_release_store(store_url)

    with SummaryStore(store_url) as store:
        listed = store.list_summaries("t1", "ns")
        state = store.thread_state("t1", "ns")
        fifth = plumbing(store).add_summary(
            thread_id="t1", namespace="ns", parent_id="id-4", boundary_message_id="m-50",
            covered_messages=50, prefix_hash="h5", summary="Fifth.", summary_tokens=8,
            source_tokens=800, kind="update", model=None, rescued_message_ids=[],
        )  # fmt: skip
        assert store.check_integrity() == []

    assert [(r.id, r.version, r.parent_id, r.summary) for r in listed] == [
        ("id-2", 2, "id-1", "Second."),
        ("id-3", 3, "id-2", "Third."),
        ("id-4", 4, "id-3", "Fourth."),
    ]
    assert listed[0].created_at == datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    assert listed[0].rescued_message_ids == ("r-1",)
    assert (state.consecutive_failures, state.calibration, state.last_error) == (
        2, 1.25, "timed out",
    )  # fmt: skip
    assert fifth.version == 5
    # Migration 0002 filled in the parents' versions where the parent row was still there.
    assert fetch(
        store_url, "SELECT id, parent_version FROM compaction_summaries ORDER BY thread_id, version"
    ) == [("id-2", None), ("id-3", 2), ("id-4", 3), (fifth.id, 4), ("id-a", None)]
    assert fetch(store_url, "SELECT version_num FROM compaction_alembic_version") == [
        (HEAD_REVISION,)
    ]
    assert fetch(store_url, "SELECT value FROM compaction_meta") == [(str(SCHEMA_VERSION),)]
    assert schema_differences(store_url) == []


def test_a_version_2_store_gets_generations_and_leases_and_keeps_its_rows(
    store_url: str,
) -> None:
    with SummaryStore(store_url) as store:
        first = plumbing(store).add_summary(
            thread_id="t", namespace="ns", parent_id=None, boundary_message_id="m-1",
            covered_messages=10, prefix_hash="h1", summary="First.", summary_tokens=3,
            source_tokens=100, kind="initial", model=None, rescued_message_ids=[],
        )  # fmt: skip
        plumbing(store).record_failure("t", "ns", message_count=4, error="boom")
    with raw_transaction(store_url) as conn:
        command.downgrade(alembic_config(conn), "0002")
    assert fetch(store_url, "SELECT value FROM compaction_meta") == [("2",)]
    with raw_transaction(store_url) as conn:
        assert not {"compaction_generations", "compaction_leases"} & set(
            sa_inspect(conn).get_table_names()
        )

    with SummaryStore(store_url) as store:  # 2 -> 3 on open
        assert store.list_summaries("t", "ns") == [first]
        state = store.thread_state("t", "ns")
        assert (state.consecutive_failures, state.generation) == (1, 0)
        assert plumbing(store).acquire_lease("t", "ns", "h2") is not None
        store.delete_thread("t", "ns")
        assert store.thread_state("t", "ns").generation == 1
        assert store.check_integrity() == []
    assert fetch(store_url, "SELECT version_num FROM compaction_alembic_version") == [
        (HEAD_REVISION,)
    ]
    assert fetch(store_url, "SELECT value FROM compaction_meta") == [(str(SCHEMA_VERSION),)]
    assert schema_differences(store_url) == []


def test_an_in_memory_schema_is_the_declared_one(tmp_path: Path) -> None:
    # The async path builds a new :memory: database from the metadata, without Alembic:
    # the same tables, versions and meta as a migrated store.
    built = f"sqlite:///{tmp_path / 'built.db'}"
    engine = create_engine(built)
    with engine.begin() as conn:
        create_head_schema(conn)
    engine.dispose()

    assert schema_differences(built) == []
    assert fetch(built, "SELECT version_num FROM compaction_alembic_version") == [(HEAD_REVISION,)]
    assert fetch(built, "SELECT value FROM compaction_meta") == [(str(SCHEMA_VERSION),)]
    with SummaryStore(built) as store:  # a store opens it as current, and it is sound
        assert store.list_summaries("t") == [] and store.check_integrity() == []


def test_a_downgraded_store_is_upgraded_again(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        store.list_summaries("t")
    with raw_transaction(store_url) as conn:
        command.downgrade(alembic_config(conn), "0001")
    assert fetch(store_url, "SELECT value FROM compaction_meta") == [("1",)]

    with SummaryStore(store_url) as store:
        store.list_summaries("t")
    with raw_transaction(store_url) as conn:
        assert current_revision(conn) == HEAD_REVISION
    assert schema_differences(store_url) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            f"UPDATE compaction_meta SET value = '{SCHEMA_VERSION + 1}'",
            rf"the store has schema_version {SCHEMA_VERSION + 1}, this package reads up to "
            rf"{SCHEMA_VERSION}",
        ),
        (
            "UPDATE compaction_alembic_version SET version_num = '0999'",
            rf"schema revision 0999, .* reads up to revision {HEAD_REVISION}, "
            rf"schema_version {SCHEMA_VERSION}",
        ),
        ("UPDATE compaction_meta SET value = 'two'", r"schema_version 'two', which is not"),
    ],
    ids=["meta-version", "alembic-revision", "garbled"],
)
def test_a_store_newer_than_the_package_is_refused_naming_both_versions(
    store_url: str, change: str, expected: str
) -> None:
    with SummaryStore(store_url) as store:
        store.list_summaries("t")
    execute(store_url, change)

    with pytest.raises(SummaryStoreError, match=expected), SummaryStore(store_url) as store:
        store.list_summaries("t")
    assert cli(["migrate", "--url", store_url]) == 1
    assert fetch(store_url, "SELECT count(*) FROM compaction_summaries") == [(0,)]


def test_tables_of_unknown_origin_are_refused(store_url: str) -> None:
    build_first_release_store(store_url)
    execute(store_url, "DELETE FROM compaction_meta")

    with pytest.raises(SummaryStoreError, match="no schema version this package knows"):
        SummaryStore(store_url).list_summaries("t1", "ns")
    assert fetch(store_url, "SELECT count(*) FROM compaction_summaries") == [(4,)]


def test_migrate_command_upgrades_and_says_so(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    build_first_release_store(store_url)

    assert cli(["migrate", "--url", store_url]) == 0
    said = " ".join(capsys.readouterr().out.split())  # the CLI may wrap a long URL
    assert said.endswith(f": schema_version 1 -> {SCHEMA_VERSION}")
    assert cli(["migrate", "--url", store_url]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert said.endswith(f": schema_version {SCHEMA_VERSION} -> {SCHEMA_VERSION}")
    assert cli(["check", "--url", store_url]) == 0
    assert capsys.readouterr().out.endswith(": ok\n")
