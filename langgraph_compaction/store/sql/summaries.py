"""The statements on the store's summaries, and the tables (defined in ``store.schema.tables``)
for the store's other modules.

Per-thread state and deletion live in ``store.sql.threads``, leases in ``store.sql.leases``. Each
operation is a plain function over a *sync* SQLAlchemy ``Connection``. The sync store calls it
directly; the async store runs the very same function through ``AsyncConnection.run_sync``, so the
SQL and the row-to-record conversion exist once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import uuid4

from sqlalchemy import (
    Connection,
    Table,
    bindparam,
    delete,
    func,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store.db.locks import lock_thread
from langgraph_compaction.store.records import (
    RECORD_FIELDS,
    NewSummary,
    SummaryRecord,
    integrity_values,
    record_from_row,
)
from langgraph_compaction.store.schema.tables import (
    ALL_NAMESPACES,
    LIVE_SUMMARY,
    UTCDateTime,
    generations,
    leases,
    messages,
    meta,
    metadata,
    pins,
    reviews,
    summaries,
    threads,
    usage_columns,
)

__all__ = [
    "ALL_NAMESPACES",
    "LIVE_SUMMARY",
    "NEWEST_FIRST",
    "UTCDateTime",
    "dialect_insert",
    "find_summary",
    "generations",
    "insert_summary",
    "latest_summaries",
    "leases",
    "list_summaries",
    "messages",
    "meta",
    "metadata",
    "next_version",
    "pins",
    "reviews",
    "summaries",
    "threads",
    "trim",
    "usage_columns",
]

# The hot lookups are built once with bound parameters: building a statement per call costs
# more than running it on SQLite.
_IN_THREAD = select(*(summaries.c[name] for name in RECORD_FIELDS)).where(
    summaries.c.thread_id == bindparam("thread_id"),
    summaries.c.namespace == bindparam("namespace"),
)
_OLDEST_FIRST = _IN_THREAD.order_by(summaries.c.version)
_IN_USE = _IN_THREAD.where(summaries.c.revoked_at.is_(None))
_NEWEST_FIRST = _IN_USE.order_by(summaries.c.version.desc()).limit(bindparam("limit"))
NEWEST_FIRST = _NEWEST_FIRST
"""``latest_summaries``'s statement, which the control reader also runs
(``store.db.control_reader``)."""
# The newest version of the prefix: an edit of it when there is one.
_BY_PREFIX = (
    _IN_USE.where(summaries.c.prefix_hash == bindparam("prefix_hash"))
    .order_by(summaries.c.version.desc())
    .limit(1)
)


def dialect_insert(conn: Connection, table: Table) -> postgresql.Insert | sqlite.Insert:
    """The dialect's INSERT, which has ON CONFLICT support on both supported backends."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table)
    if conn.dialect.name == "sqlite":
        return sqlite.insert(table)
    raise SummaryStoreError(f"unsupported database {conn.dialect.name!r}; use SQLite or PostgreSQL")


def list_summaries(conn: Connection, thread_id: str, namespace: str) -> list[SummaryRecord]:
    """Every summary of the thread, oldest first, revoked ones included."""
    rows = conn.execute(_OLDEST_FIRST, {"thread_id": thread_id, "namespace": namespace})
    return [record_from_row(row) for row in rows]


def latest_summaries(
    conn: Connection, thread_id: str, namespace: str, limit: int
) -> list[SummaryRecord]:
    """The newest ``limit`` summaries of the thread in use (not revoked), newest first."""
    params = {"thread_id": thread_id, "namespace": namespace, "limit": limit}
    return [record_from_row(row) for row in conn.execute(_NEWEST_FIRST, params)]


def find_summary(
    conn: Connection, thread_id: str, namespace: str, prefix_hash: str
) -> SummaryRecord | None:
    """The thread's newest summary in use of exactly this prefix, if one is stored."""
    params = {"thread_id": thread_id, "namespace": namespace, "prefix_hash": prefix_hash}
    row = conn.execute(_BY_PREFIX, params).first()
    return None if row is None else record_from_row(row)


def insert_summary(
    conn: Connection,
    new: NewSummary,
    retention: int | None,
    on_insert: Callable[[Connection], None] | None = None,
) -> SummaryRecord:
    """Store ``new`` as the thread's next version, or return the row already holding its prefix.

    Runs inside the caller's write transaction; ``on_insert`` runs in it too, only when this
    call stored the row (total recall indexes the evicted messages there). A version collision
    with a writer that does not take the per-thread lock surfaces as IntegrityError, which the
    caller retries.
    """
    lock_thread(conn, new.thread_id)  # a clash only costs some waiting
    existing = find_summary(conn, new.thread_id, new.namespace, new.prefix_hash)
    if existing is not None:
        return existing
    row_id = uuid4().hex
    fields = {f.name: getattr(new, f.name) for f in dataclasses.fields(new)}
    integrity = integrity_values(fields.pop("integrity"))  # flattened into its columns
    values = {
        **fields,
        **integrity,
        "id": row_id,
        "version": next_version(conn, new.thread_id, new.namespace),
        "parent_version": _parent_version(conn, new),
        "created_at": datetime.now(UTC),
        "rescued_message_ids": json.dumps(list(new.rescued_message_ids)),
    }
    conflict = [summaries.c.thread_id, summaries.c.namespace, summaries.c.prefix_hash]
    conn.execute(
        dialect_insert(conn, summaries)
        .values(values)
        .on_conflict_do_nothing(index_elements=conflict, index_where=LIVE_SUMMARY)
    )
    stored = find_summary(conn, new.thread_id, new.namespace, new.prefix_hash)
    if stored is None:
        raise SummaryStoreError("a summary just written could not be read back; retry the call")
    if stored.id == row_id:
        if on_insert is not None:
            on_insert(conn)
        if retention is not None:
            trim(conn, new.thread_id, new.namespace, retention)
    return stored


def next_version(conn: Connection, thread_id: str, namespace: str) -> int:
    """One more than the thread's newest version, revoked ones included (1 for the first)."""
    newest = conn.scalar(
        select(func.max(summaries.c.version)).where(
            summaries.c.thread_id == thread_id, summaries.c.namespace == namespace
        )
    )
    return int(newest or 0) + 1


def _parent_version(conn: Connection, new: NewSummary) -> int | None:
    """The version of ``new``'s parent; None if it has none or retention already deleted it.

    Raises:
        ValueError: the parent is a summary of another thread or namespace.
    """
    if new.parent_id is None:
        return None
    stmt = select(summaries.c.thread_id, summaries.c.namespace, summaries.c.version).where(
        summaries.c.id == new.parent_id
    )
    parent = conn.execute(stmt).first()
    if parent is None:
        return None
    if (parent.thread_id, parent.namespace) != (new.thread_id, new.namespace):
        raise ValueError(
            f"parent_id {new.parent_id!r} is a summary of thread {parent.thread_id!r} in "
            f"namespace {parent.namespace!r}, not of thread {new.thread_id!r} in namespace "
            f"{new.namespace!r}; pass a summary of the same thread as parent"
        )
    version: int = parent.version
    return version


def trim(conn: Connection, thread_id: str, namespace: str, keep: int) -> None:
    """Delete all but the newest ``keep`` versions of the thread."""
    cut = conn.scalar(
        select(summaries.c.version)
        .where(summaries.c.thread_id == thread_id, summaries.c.namespace == namespace)
        .order_by(summaries.c.version.desc())
        .offset(keep)
        .limit(1)
    )
    if cut is not None:
        conn.execute(
            delete(summaries).where(
                summaries.c.thread_id == thread_id,
                summaries.c.namespace == namespace,
                summaries.c.version <= cut,
            )
        )
