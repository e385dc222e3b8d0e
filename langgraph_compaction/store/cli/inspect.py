"""``python -m langgraph_compaction.store``: what a summary store holds, at a glance.

``inspect`` without ``--thread``: one line per thread (its newest summary, failures,
calibration, pinned messages and a pending compaction request) and what its summary calls
cost (summed over its stored versions, revoked ones too: their calls were made); with
``--thread``: every stored version of that thread, with its lineage, edits, revocations,
usage and integrity figures (an unknown thread is an error, exit status 1);
``--full`` prints whole summaries (see ``store.cli.render``, which fits it all in 100 columns).
``--json`` prints the same data for scripts (a version's ``integrity_items`` as the JSON it
holds). ``inspect`` and ``check`` (the consistency check,
exit status 1 when it finds a problem) only read: they never create tables or switch a SQLite
file to WAL. ``migrate`` creates or upgrades the tables, as opening a store would. ``edit``
and ``revoke`` (``store.cli.edit``) change a thread's summaries in a store that exists. Every
command exits with status 1 and a one-line message when it cannot reach a store.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Connection, Engine, Label, Select, case, func, inspect, or_, select
from sqlalchemy.exc import SQLAlchemyError

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store.cli.edit import (
    EDIT_COMMANDS,
    add_edit_commands,
    run_edit_command,
)
from langgraph_compaction.store.cli.render import WIDTH, render_text, wrap
from langgraph_compaction.store.db.engine import (
    build_sync_engine,
    derive_urls,
    describe_error,
    is_memory,
    mask_url,
)
from langgraph_compaction.store.records import USAGE_FIELDS
from langgraph_compaction.store.schema.migrate import SCHEMA_VERSION, stored_schema_version
from langgraph_compaction.store.sql.integrity import find_problems
from langgraph_compaction.store.sql.summaries import pins, summaries, threads
from langgraph_compaction.store.summary_store import SummaryStore

__all__ = ["check_store", "load_report", "main", "migrate_store"]

_PARENT = summaries.alias("parent")


def load_report(
    url: str, *, thread: str | None = None, namespace: str | None = None, full: bool = False
) -> dict[str, Any]:
    """Read the store's threads (and, for ``thread``, its versions) as plain data.

    Each summary comes as an 80-character ``summary_preview``; ``full`` adds its whole text
    as ``summary``.

    Raises:
        SummaryStoreError: the URL is bad, the database unreachable, or the tables missing.
    """
    where = mask_url(url)
    engine = _reading_engine(url)
    try:
        with engine.connect() as conn:
            _require_tables(conn, where)
            # Only the columns this database has: a store of an older release still reads.
            columns = _present_columns(conn, summaries)
            report: dict[str, Any] = {
                "url": where,
                "schema_version": stored_schema_version(conn),
                "threads": _threads(conn, columns, thread, namespace, full),
            }
            if thread is not None:
                report["versions"] = _versions(conn, columns, thread, namespace, full)
            return report
    except SQLAlchemyError as exc:
        raise SummaryStoreError(describe_error(exc, where)) from exc
    finally:
        engine.dispose()


def _reading_engine(url: str) -> Engine:
    """An engine that never creates a SQLite file nor switches it to WAL."""
    sync_url, _ = derive_urls(url)
    if not is_memory(sync_url) and sync_url.get_backend_name() == "sqlite":
        path = Path(sync_url.database or "")
        if not path.is_file():
            where = mask_url(url)
            raise SummaryStoreError(f"summary store {where}: no SQLite file at {path}; check --url")
    return build_sync_engine(sync_url, wal=False)


def _require_tables(conn: Connection, where: str) -> None:
    missing = [t.name for t in (summaries, threads) if not inspect(conn).has_table(t.name)]
    if missing:
        raise SummaryStoreError(
            f"summary store {where}: missing table(s) {', '.join(missing)}; this is not a "
            "summary store, or nothing has used it yet (SummaryStore creates the tables "
            "on first use); check --url"
        )


def _present_columns(conn: Connection, table: Any) -> list[Column[Any]]:
    present = {c["name"] for c in inspect(conn).get_columns(table.name)}
    return [c for c in table.columns if c.name in present]


def _pin_counts(conn: Connection, thread: str | None, ns: str | None) -> dict[Any, int]:
    """Pinned messages per (thread, namespace); none before schema 5."""
    if not inspect(conn).has_table(pins.name):
        return {}
    p = pins.c
    stmt = select(p.thread_id, p.namespace, func.count()).group_by(p.thread_id, p.namespace)
    return {(t, n): count for t, n, count in conn.execute(_filtered(stmt, pins, thread, ns))}


def _filtered(stmt: Select[Any], table: Any, thread: str | None, ns: str | None) -> Select[Any]:
    if thread is not None:
        stmt = stmt.where(table.c.thread_id == thread)
    return stmt if ns is None else stmt.where(table.c.namespace == ns)


def _usage_totals(columns: list[Column[Any]]) -> list[Label[Any]]:
    """Per thread: each usage column's sum over the versions that reported it (SQL's SUM
    skips NULLs, and is NULL when none did: never 0 for unknown), and how many versions
    reported any. None before schema 6."""
    if not set(USAGE_FIELDS) <= {c.name for c in columns}:
        return []
    usage = [summaries.c[name] for name in USAGE_FIELDS]
    reported = func.sum(case((or_(*(c.is_not(None) for c in usage)), 1), else_=0))
    return [
        *(func.sum(c).label(f"total_{c.name}") for c in usage),
        reported.label("usage_reported"),
    ]


def _summary_usage(row: Any) -> dict[str, int | None]:
    """A thread's ``summary_usage``: the totals of :func:`_usage_totals`."""
    totals = {name: row[f"total_{name}"] for name in USAGE_FIELDS}
    return {**totals, "versions_reported": int(row["usage_reported"] or 0)}


def _threads(
    conn: Connection, columns: list[Column[Any]], thread: str | None, ns: str | None, full: bool
) -> list[dict[str, Any]]:
    """One entry per (thread, namespace) with a summary or a state row, newest summary first."""
    s = summaries.c
    totals = _usage_totals(columns)
    counts = select(
        s.thread_id,
        s.namespace,
        func.count().label("versions"),
        func.max(s.version).label("top"),
        *totals,
    ).group_by(s.thread_id, s.namespace)
    agg = _filtered(counts, summaries, thread, ns).subquery()
    sums = [agg.c[t.name] for t in totals]
    newest = (
        select(*columns, agg.c.versions, *sums, _PARENT.c.version.label("parent_row_version"))
        .join(agg, (s.thread_id == agg.c.thread_id) & (s.namespace == agg.c.namespace))
        .where(s.version == agg.c.top)
        .outerjoin(_PARENT, _PARENT.c.id == s.parent_id)
    )
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for row in conn.execute(newest).mappings():
        found[(row["thread_id"], row["namespace"])] = {
            **_summary_fields(row, columns, full),
            "versions": row["versions"],
            **({"summary_usage": _summary_usage(row)} if totals else {}),
        }
    state = select(*_present_columns(conn, threads))
    for row in conn.execute(_filtered(state, threads, thread, ns)).mappings():
        entry = found.setdefault((row["thread_id"], row["namespace"]), {"versions": 0})
        entry.update({k: _plain(v) for k, v in row.items()})
    for key, count in _pin_counts(conn, thread, ns).items():
        found.setdefault(key, {"versions": 0, "thread_id": key[0], "namespace": key[1]})
        found[key]["pinned"] = count
    newest_first = sorted(found.values(), key=lambda e: e.get("created_at") or "", reverse=True)
    return newest_first


def _versions(
    conn: Connection, columns: list[Column[Any]], thread: str, ns: str | None, full: bool
) -> list[dict[str, Any]]:
    """Every stored version of one thread, oldest first, with the parent's version."""
    s = summaries.c
    stmt = (
        select(*columns, _PARENT.c.version.label("parent_row_version"))
        .outerjoin(_PARENT, _PARENT.c.id == s.parent_id)
        .order_by(s.namespace, s.version)
    )
    stmt = _filtered(stmt, summaries, thread, ns)
    return [_summary_fields(row, columns, full) for row in conn.execute(stmt).mappings()]


def _summary_fields(row: Any, columns: list[Column[Any]], full: bool) -> dict[str, Any]:
    fields = {c.name: _plain(row[c.name]) for c in columns if c.name != "summary"}
    fields["rescued_message_ids"] = json.loads(row["rescued_message_ids"])
    if fields.get("integrity_items") is not None:  # schema 7; NULL: no check ran
        fields["integrity_items"] = _json_or_text(fields["integrity_items"])
    # A parent deleted by retention is gone, but schema 2 still stores its version.
    gone = row["parent_id"] is not None and row["parent_row_version"] is None
    fields["parent_version"] = row["parent_row_version"] or fields.get("parent_version")
    fields["parent_gone"] = gone
    fields["summary_preview"] = " ".join(row["summary"].split())[:80]
    if full:
        fields["summary"] = row["summary"]
    return fields


def _json_or_text(text: str) -> Any:
    """The JSON value ``text`` holds; the text itself when it is not JSON (``check`` says so)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def check_store(url: str) -> list[str]:
    """Run the consistency check on the store at ``url``, reading only.

    Raises:
        SummaryStoreError: the URL is bad, the database unreachable, or the tables missing.
    """
    where = mask_url(url)
    engine = _reading_engine(url)
    try:
        with engine.connect() as conn:
            _require_tables(conn, where)
            return find_problems(conn)
    except SQLAlchemyError as exc:
        raise SummaryStoreError(describe_error(exc, where)) from exc
    finally:
        engine.dispose()


def migrate_store(url: str) -> tuple[str | None, str | None]:
    """Create or upgrade the store's tables now; the schema version before and after.

    Opening a store migrates it anyway; this lets a deploy do it once, before new workers
    start, and say what it did.
    """
    where = mask_url(url)
    engine = build_sync_engine(derive_urls(url)[0], wal=False)
    try:
        with engine.connect() as conn:
            before = stored_schema_version(conn)
    except SQLAlchemyError as exc:
        raise SummaryStoreError(describe_error(exc, where)) from exc
    finally:
        engine.dispose()
    with SummaryStore(url) as store:
        store.list_summaries("")  # the first call migrates
    return before, str(SCHEMA_VERSION)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m langgraph_compaction.store",
        description=(
            "Look inside a langgraph-compaction summary store, check or migrate it, "
            "edit or revoke a thread's summary."
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser("inspect", help="print threads, versions, failures, calibration")
    cmd.add_argument("--url", required=True, help="e.g. sqlite:///compaction.db")
    cmd.add_argument("--thread", help="list every version of this thread id")
    cmd.add_argument("--namespace", help="only this namespace")
    cmd.add_argument(
        "--full",
        action="store_true",
        help="print whole summaries: each version's with --thread, else each thread's newest",
    )
    cmd.add_argument("--json", action="store_true", help="print JSON instead of tables")
    check = commands.add_parser("check", help="check the rows' consistency; exit 1 on problems")
    check.add_argument("--url", required=True)
    check.add_argument("--json", action="store_true", help="print the problems as JSON")
    migrate = commands.add_parser("migrate", help="create or upgrade the store's tables")
    migrate.add_argument("--url", required=True)
    add_edit_commands(commands)
    args = parser.parse_args(argv)
    try:
        if args.command in EDIT_COMMANDS:
            _require_store(args.url)  # never create a database to edit it
            return run_edit_command(args)
        if args.command == "check":
            return _print_check(check_store(args.url), args.url, as_json=args.json)
        if args.command == "migrate":
            before, after = migrate_store(args.url)
            print(
                "\n".join(
                    wrap(f"{mask_url(args.url)}: schema_version {before or '(none)'} -> {after}")
                )
            )
            return 0
        report = load_report(args.url, thread=args.thread, namespace=args.namespace, full=args.full)
    except SummaryStoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.thread is not None and not report["threads"]:
        # A mistyped id must not read as an empty store that is fine.
        print(f"error: {_no_thread(args.thread, args.namespace, args.url)}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if args.json else render_text(report, full=args.full))
    return 0


def _require_store(url: str) -> None:
    """Raise SummaryStoreError unless ``url`` holds a summary store (read only)."""
    engine = _reading_engine(url)
    try:
        with engine.connect() as conn:
            _require_tables(conn, mask_url(url))
    except SQLAlchemyError as exc:
        raise SummaryStoreError(describe_error(exc, mask_url(url))) from exc
    finally:
        engine.dispose()


def _no_thread(thread: str, namespace: str | None, url: str) -> str:
    scope = "" if namespace is None else f" (namespace {namespace})"
    return (
        f"no thread {thread}{scope} in {mask_url(url)}; run inspect without --thread to list them"
    )


def _print_check(problems: list[str], url: str, *, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"url": mask_url(url), "ok": not problems, "problems": problems}))
    elif problems:
        print("\n".join(wrap(f"{mask_url(url)}: {len(problems)} problem(s)")))
        for problem in problems:
            lines = wrap(problem, WIDTH - 2)
            print("\n".join([f"- {lines[0]}", *(f"  {line}" for line in lines[1:])]))
    else:
        print("\n".join(wrap(f"{mask_url(url)}: ok")))
    return 1 if problems else 0
