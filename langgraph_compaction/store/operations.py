"""The store's calls as functions of one sync connection, their arguments checked first.

``SummaryStore`` and ``Plumbing`` build each operation here once and run it sync or async
(``Database.run`` / ``arun``), so a method and its async twin cannot drift apart. The checks
run when the operation is built, before any database work: a refused argument is a
ValueError, never a SummaryStoreError. The SQL itself is in the ``sql`` modules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from sqlalchemy import Connection

from langgraph_compaction.store.records import (
    CompactionRequest,
    IndexedMessage,
    NewSummary,
    RecalledMessage,
    ReviewDraft,
    SummaryRecord,
    ThreadState,
    check_calibration,
    indexed_messages,
)
from langgraph_compaction.store.sql import controls as control_sql
from langgraph_compaction.store.sql import edits as edit_sql
from langgraph_compaction.store.sql import leases as lease_sql
from langgraph_compaction.store.sql import search as search_sql
from langgraph_compaction.store.sql import summaries as summary_sql
from langgraph_compaction.store.sql import threads as thread_sql
from langgraph_compaction.store.sql.controls import check_instruction, check_thread_id, pin_ids
from langgraph_compaction.store.sql.edits import Review, check_edit, check_version
from langgraph_compaction.store.sql.leases import Lease

__all__ = [
    "Operation",
    "acquire_lease",
    "change_pins",
    "consume_request",
    "drop_review",
    "edit_summary",
    "find_review_draft",
    "insert_summary",
    "pending_request",
    "record_failure",
    "request_compaction",
    "reset_failures",
    "revoke_summary",
    "save_review",
    "search_messages",
    "set_calibration",
]

T = TypeVar("T")

Operation = Callable[[Connection], T]
"""One store call, ready to run in a transaction."""

_MAX_LIMIT = 100

# -- what a person or an agent's code calls ------------------------------------------------------


def search_messages(
    thread_id: str, query: str, namespace: str, limit: int
) -> Operation[list[RecalledMessage]]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _MAX_LIMIT:
        raise ValueError(f"limit must be an int from 1 to {_MAX_LIMIT}, got {limit!r}")
    if not isinstance(query, str):
        raise ValueError(f"query must be a str, got {type(query).__name__}")
    return lambda conn: search_sql.search_messages(conn, thread_id, namespace, query, limit)


def request_compaction(thread_id: str, namespace: str, instruction: str | None) -> Operation[None]:
    check_thread_id(thread_id)
    text = check_instruction(instruction)
    return lambda conn: control_sql.request_compaction(conn, thread_id, namespace, text)


def change_pins(
    write: Callable[[Connection, str, str, tuple[str, ...]], None],
    thread_id: str,
    message_ids: Sequence[str],
    namespace: str,
) -> Operation[None]:
    """``write`` is ``sql.controls.pin_messages`` or ``unpin_messages``."""
    check_thread_id(thread_id)
    ids = pin_ids(message_ids)
    return lambda conn: write(conn, thread_id, namespace, ids)


def edit_summary(
    thread_id: str, text: str, namespace: str, retention: int | None
) -> Operation[SummaryRecord]:
    check_thread_id(thread_id)
    stored = check_edit(text)
    return lambda conn: edit_sql.edit_summary(conn, thread_id, namespace, stored, retention)


def revoke_summary(thread_id: str, namespace: str, version: int | None) -> Operation[int]:
    check_thread_id(thread_id)
    checked = check_version(version)
    return lambda conn: edit_sql.revoke_summary(conn, thread_id, namespace, checked)


# -- what only the pipeline calls ----------------------------------------------------------------


def insert_summary(
    new: NewSummary,
    retention: int | None,
    generation: int | None,
    recall: Sequence[IndexedMessage],
    steered: bool,
    request: CompactionRequest | None = None,
) -> Operation[SummaryRecord]:
    """Check the generation, insert, then index the recall messages, bump the control
    version (when asked) and consume the request answered, in the same transaction."""
    batch = indexed_messages(recall)

    def on_insert(conn: Connection) -> None:
        if batch:  # recall on
            search_sql.index_messages(conn, new.thread_id, new.namespace, batch)
        if steered:
            control_sql.bump_controls(conn, new.thread_id, new.namespace)

    def insert(conn: Connection) -> SummaryRecord:
        thread_sql.check_generation(conn, new.thread_id, new.namespace, generation)
        if request is not None:  # consumed whether this insert or a concurrent one stores it
            control_sql.consume_request(conn, new.thread_id, new.namespace, request)
        if not batch and not steered:
            return summary_sql.insert_summary(conn, new, retention)
        return summary_sql.insert_summary(conn, new, retention, on_insert)

    return insert


def acquire_lease(
    thread_id: str, namespace: str, prefix_hash: str, ttl: float
) -> Operation[Lease | None]:
    """Under a new owner: each call is a new claim, never a renewal."""
    owner = lease_sql.new_owner()
    return lambda conn: lease_sql.acquire(conn, thread_id, namespace, prefix_hash, owner, ttl)


def record_failure(
    thread_id: str, namespace: str, message_count: int, error: str, generation: int | None
) -> Operation[ThreadState]:
    return lambda conn: thread_sql.record_failure(
        conn, thread_id, namespace, message_count, error, generation
    )


def reset_failures(thread_id: str, namespace: str, generation: int | None) -> Operation[None]:
    return lambda conn: thread_sql.reset_failures(conn, thread_id, namespace, generation)


def set_calibration(
    thread_id: str, namespace: str, ratio: float, generation: int | None
) -> Operation[None]:
    check_calibration(ratio)
    return lambda conn: thread_sql.set_calibration(conn, thread_id, namespace, ratio, generation)


def pending_request(thread_id: str, namespace: str) -> Operation[CompactionRequest | None]:
    return lambda conn: control_sql.pending_request(conn, thread_id, namespace)


def consume_request(thread_id: str, namespace: str, request: CompactionRequest) -> Operation[bool]:
    return lambda conn: control_sql.consume_request(conn, thread_id, namespace, request)


def save_review(
    review: Review, generation: int | None, hold_request: bool, instruction: str | None
) -> Operation[None]:
    """Save the draft, and for a call forced by its config file a request in the same
    transaction so that its resumed run finds the draft."""

    def save(conn: Connection) -> None:
        edit_sql.save_review(conn, review, generation)
        if hold_request:
            control_sql.hold_request(conn, review.thread_id, review.namespace, instruction)

    return save


def find_review_draft(
    thread_id: str, namespace: str, prefix_hash: str
) -> Operation[ReviewDraft | None]:
    return lambda conn: edit_sql.find_review_draft(conn, thread_id, namespace, prefix_hash)


def drop_review(
    thread_id: str, namespace: str, prefix_hash: str, request: CompactionRequest | None
) -> Operation[None]:
    """Drop the draft; consume the request it answered in the same transaction."""

    def drop(conn: Connection) -> None:
        edit_sql.drop_review(conn, thread_id, namespace, prefix_hash)
        if request is not None:
            control_sql.consume_request(conn, thread_id, namespace, request)

    return drop
