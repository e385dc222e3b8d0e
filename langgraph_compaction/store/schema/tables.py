"""The store's tables: what a person sees in a SQLite browser or psql.

Every column is a plain value a person can read: text, integers, a float, a boolean (0 or 1 on
SQLite), ISO-8601 timestamps (on SQLite), a JSON array of message ids and the integrity ledger's
items as JSON text; no pickles or blobs. The statements on them are in
``store.sql.summaries`` (summaries), ``store.sql.threads``, ``store.sql.leases``,
``store.sql.controls``, ``store.sql.edits`` and ``store.sql.search``; the migrations in
``migrations/versions`` produce exactly this schema.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
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
    event,
    text,
)
from sqlalchemy.types import DateTime, TypeEngine

from langgraph_compaction.store.records import USAGE_FIELDS
from langgraph_compaction.store.schema.fulltext import create_fulltext

__all__ = [
    "ALL_NAMESPACES",
    "LIVE_SUMMARY",
    "UTCDateTime",
    "generations",
    "leases",
    "messages",
    "meta",
    "metadata",
    "pins",
    "reviews",
    "summaries",
    "threads",
    "usage_columns",
]


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
    # What the integrity check found (schema version 7, DESIGN 6.13); NULL when no check ran:
    # a row older than 7, the check turned off, an edit. items: the ledger's items, JSON text.
    Column("integrity_identifiers", Integer, nullable=True),
    Column("integrity_kept", Integer, nullable=True),
    Column("integrity_appended", Integer, nullable=True),
    Column("integrity_dropped", Integer, nullable=True),
    Column("integrity_artifacts", Integer, nullable=True),
    Column("integrity_repaired", Boolean, nullable=True),
    Column("integrity_items", Text, nullable=True),
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
"""The messages summaries evicted, for total recall (schema 4); full text in
``store.schema.fulltext``."""
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
