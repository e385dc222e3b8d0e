"""The store's tables, and the statements on its summaries.

Per-thread state and deletion live in ``_threads``, leases in ``_leases``. Each operation is a
plain function over a *sync* SQLAlchemy ``Connection``. The sync store calls it directly; the
async store runs the very same function through ``AsyncConnection.run_sync``, so the SQL and
the row-to-record conversion exist once.

Every column is a plain value a person can read in a SQLite browser: text, integers, a float,
ISO-8601 timestamps (on SQLite) and a JSON array of message ids; no pickles or blobs.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from sqlalchemy import (
    CheckConstraint,
    Column,
    Connection,
    Dialect,
    Float,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    TypeDecorator,
    bindparam,
    delete,
    event,
    func,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.types import DateTime, TypeEngine

from langgraph_compaction._exceptions import SummaryStoreError
from langgraph_compaction.store._fulltext import create_fulltext
from langgraph_compaction.store._records import (
    RECORD_FIELDS,
    USAGE_FIELDS,
    NewSummary,
    SummaryRecord,
    record_from_row,
)

__all__ = [
    "ALL_NAMESPACES",
    "LIVE_SUMMARY",
    "UTCDateTime",
    "dialect_insert",
    "find_summary",
    "generations",
    "insert_summary",
    "latest_summaries",
    "leases",
    "list_summaries",
    "lock_schema",
    "lock_thread",
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

_LOCK_CLASS = 7_261_300
"""First key of PostgreSQL advisory locks taken here (second key: 0 for DDL, else a thread)."""

_MAX_ERROR_CHARS = 4000
"""A failure message is stored for people to read, not a traceback archive."""


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp: ``TIMESTAMPTZ`` on PostgreSQL, ISO-8601 text on SQLite.

    SQLite's own DATETIME drops the offset; fixed-width ISO text with ``+00:00`` keeps it,
    reads well in a browser, and still sorts in time order.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(32))
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"timestamp {value!r} has no timezone; pass an aware datetime")
        value = value.astimezone(UTC)
        return value.isoformat(timespec="microseconds") if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        stamp = datetime.fromisoformat(value) if isinstance(value, str) else value
        if not isinstance(stamp, datetime):
            raise TypeError(f"expected a timestamp, the database returned {value!r}")
        return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


def usage_columns() -> tuple[Column[int], ...]:
    """``input_tokens``, ``output_tokens``, ``cache_read_tokens``: nullable, NULL = not reported."""
    return tuple(Column(name, Integer, nullable=True) for name in USAGE_FIELDS)


metadata = MetaData()

summaries = Table(
    "compaction_summaries",
    metadata,
    Column("id", Text, primary_key=True),
    Column("thread_id", Text, nullable=False),
    Column("namespace", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("parent_id", Text, nullable=True),
    Column("boundary_message_id", Text, nullable=False),
    Column("covered_messages", Integer, nullable=False),
    Column("prefix_hash", Text, nullable=False),
    Column("summary", Text, nullable=False),
    Column("summary_tokens", Integer, nullable=False),
    Column("source_tokens", Integer, nullable=False),
    Column("kind", Text, nullable=False),
    Column("model", Text, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("rescued_message_ids", Text, nullable=False),
    # The parent's version, kept when retention deletes the parent row (schema version 2);
    # None for a first summary, or when the parent was already gone at insert time.
    Column("parent_version", Integer, nullable=True),
    # When revoke_summary withdrew the version (schema version 5); None while it is in use.
    Column("revoked_at", UTCDateTime, nullable=True),
    # What the summarizer reported the row's calls cost (schema version 6); NULL when it
    # reported nothing, and for an edit, which made no model call.
    *usage_columns(),
    CheckConstraint("kind IN ('initial', 'update', 'edited')", name="ck_compaction_summaries_kind"),
    # No foreign key on parent_id: retention deletes old versions, so the oldest remaining
    # row may name a parent that is gone.
)
# One unique index is both the version key and the newest-first lookup per thread.
Index(
    "ix_compaction_summaries_newest",
    summaries.c.thread_id,
    summaries.c.namespace,
    summaries.c.version.desc(),
    unique=True,
)
LIVE_SUMMARY = text("kind <> 'edited' AND revoked_at IS NULL")
"""The rows ``ux_compaction_summaries_prefix`` covers (schema 5): an edit is a newer version
of the same prefix, and a revoked row must not stop the prefix from being summarized again."""
# Makes a concurrent duplicate insert of the same prefix a no-op (ON CONFLICT DO NOTHING,
# with the same WHERE as the index).
Index(
    "ux_compaction_summaries_prefix",
    summaries.c.thread_id,
    summaries.c.namespace,
    summaries.c.prefix_hash,
    unique=True,
    sqlite_where=LIVE_SUMMARY,
    postgresql_where=LIVE_SUMMARY,
)
# find_summary's lookup, edits and revoked rows included (schema 5): one seek, however many
# versions the thread holds.
Index(
    "ix_compaction_summaries_prefix",
    summaries.c.thread_id,
    summaries.c.namespace,
    summaries.c.prefix_hash,
)

threads = Table(
    "compaction_threads",
    metadata,
    Column("thread_id", Text, nullable=False),
    Column("namespace", Text, nullable=False),
    Column("consecutive_failures", Integer, nullable=False, default=0),
    Column("messages_at_last_failure", Integer, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("last_failure_at", UTCDateTime, nullable=True),
    Column("calibration", Float, nullable=True),
    Column("updated_at", UTCDateTime, nullable=False),
    # Steering (schema 5): the control version, bumped by every request, pin, unpin, edit
    # and revoke, and the pending compaction request, if any (requested_at set).
    Column("controls", Integer, nullable=False, default=0, server_default=text("0")),
    Column("requested_at", UTCDateTime, nullable=True),
    Column("request_instruction", Text, nullable=True),
    PrimaryKeyConstraint("thread_id", "namespace", name="pk_compaction_threads"),
)

generations = Table(
    "compaction_generations",
    metadata,
    Column("thread_id", Text, nullable=False),
    # A namespace, or ALL_NAMESPACES for a deletion of the thread in every namespace.
    Column("namespace", Text, nullable=False),
    Column("generation", Integer, nullable=False),
    Column("deleted_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("thread_id", "namespace", name="pk_compaction_generations"),
)
"""One row per deletion scope: how many times the thread was deleted there (schema 3).

A thread's generation in a namespace is the sum of its row there and its ALL_NAMESPACES
row; the rows outlive the deletion, so a write that read the old generation is refused.
"""

leases = Table(
    "compaction_leases",
    metadata,
    Column("thread_id", Text, nullable=False),
    Column("namespace", Text, nullable=False),
    Column("prefix_hash", Text, nullable=False),
    Column("owner", Text, nullable=False),
    Column("acquired_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("thread_id", "namespace", "prefix_hash", name="pk_compaction_leases"),
)
"""Who is summarizing which prefix right now (schema 3); a row past expires_at is free."""

messages = Table(
    "compaction_messages",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("thread_id", Text, nullable=False),
    Column("namespace", Text, nullable=False),
    Column("position", Integer, nullable=False),
    Column("message_id", Text, nullable=False),
    Column("type", Text, nullable=False),
    Column("name", Text, nullable=True),
    Column("text", Text, nullable=False),
    # Derived by the store, for ranking: the two messages before and after, and the last
    # date the conversation mentioned before this message (a session header's, say).
    Column("previous_text", Text, nullable=False),
    Column("next_text", Text, nullable=False),
    Column("session_date", Text, nullable=True),
    Column("content_hash", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)
"""The messages summaries evicted, for total recall (schema 4); full text in ``_fulltext``."""
# A second worker or a re-summarization indexes a message once (ON CONFLICT DO NOTHING).
Index(
    "ux_compaction_messages_message",
    messages.c.thread_id,
    messages.c.namespace,
    messages.c.message_id,
    messages.c.content_hash,
    unique=True,
)
Index(
    "ix_compaction_messages_position",
    messages.c.thread_id,
    messages.c.namespace,
    messages.c.position,
)
event.listen(messages, "after_create", lambda _table, conn, **_kw: create_fulltext(conn))

pins = Table(
    "compaction_pins",
    metadata,
    Column("thread_id", Text, nullable=False),
    Column("namespace", Text, nullable=False),
    Column("message_id", Text, nullable=False),
    Column("pinned_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("thread_id", "namespace", "message_id", name="pk_compaction_pins"),
)
"""Messages people pinned (schema 5): never evicted nor pruned while the row exists."""

reviews = Table(
    "compaction_reviews",
    metadata,
    Column("thread_id", Text, nullable=False),
    Column("namespace", Text, nullable=False),
    Column("prefix_hash", Text, nullable=False),
    Column("summary", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("model", Text, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    *usage_columns(),  # the draft's calls (schema version 6), carried to the stored summary
    PrimaryKeyConstraint("thread_id", "namespace", "prefix_hash", name="pk_compaction_reviews"),
)
"""New summaries waiting for a person's review (schema 5); not summaries until accepted."""

ALL_NAMESPACES = "*"
"""``compaction_generations.namespace`` of a deletion of the thread in every namespace."""

meta = Table(
    "compaction_meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)


# The hot lookups are built once with bound parameters: building a statement per call costs
# more than running it on SQLite.
_IN_THREAD = select(*(summaries.c[name] for name in RECORD_FIELDS)).where(
    summaries.c.thread_id == bindparam("thread_id"),
    summaries.c.namespace == bindparam("namespace"),
)
_OLDEST_FIRST = _IN_THREAD.order_by(summaries.c.version)
_IN_USE = _IN_THREAD.where(summaries.c.revoked_at.is_(None))
_NEWEST_FIRST = _IN_USE.order_by(summaries.c.version.desc()).limit(bindparam("limit"))
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


def _pg_lock(conn: Connection, key: str | None) -> None:
    """Serialize PostgreSQL writers on one key until commit (SQLite: BEGIN IMMEDIATE does it)."""
    if conn.dialect.name != "postgresql":
        return
    if key is None:
        conn.execute(text("SELECT pg_advisory_xact_lock(:cls, 0)"), {"cls": _LOCK_CLASS})
    else:
        lock = text("SELECT pg_advisory_xact_lock(:cls, hashtext(:key))")
        conn.execute(lock, {"cls": _LOCK_CLASS, "key": key})


def lock_schema(conn: Connection) -> None:
    """Hold the schema lock until the transaction ends (SQLite: its write transaction does)."""
    _pg_lock(conn, None)


def lock_thread(conn: Connection, thread_id: str) -> None:
    """Hold the thread's write lock until the transaction ends (SQLite: its write lock does).

    One key per thread id, whatever the namespace: a deletion in every namespace and a write
    in one namespace then exclude each other, so a generation read under it stays true.
    """
    _pg_lock(conn, f"thread/{thread_id}")


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
    values = {
        **dataclasses.asdict(new),
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
