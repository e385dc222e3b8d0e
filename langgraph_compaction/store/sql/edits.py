"""A person's hand on the summaries: edits, revocations, and summaries waiting for review.

An edit is a new version of the thread's newest summary in use, with the same prefix,
boundary and rescued messages, ``kind="edited"``: ``find_summary`` and ``latest_summaries``
return the newest version of a prefix, so later calls reuse the edit. A revocation marks a
version and every later one (``revoked_at``); revoked rows are never served again, and the
partial unique prefix index leaves them out, so the prefix can be summarized anew. A review
(``compaction_reviews``) is a new summary put to a person; it is not a summary until the
pipeline stores it.

Like ``store.sql.summaries``, every SQL operation is a plain function over a sync ``Connection``,
run in the caller's write transaction under the thread's lock.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import get_args
from uuid import uuid4

from sqlalchemy import ColumnElement, Connection, delete, select, update

from langgraph_compaction.store.db.locks import lock_thread
from langgraph_compaction.store.db.storable_text import storable
from langgraph_compaction.store.records import (
    ReviewDraft,
    SummaryKind,
    SummaryRecord,
    check_usage,
)
from langgraph_compaction.store.sql.controls import bump_controls
from langgraph_compaction.store.sql.summaries import (
    dialect_insert,
    latest_summaries,
    next_version,
    reviews,
    summaries,
    trim,
)
from langgraph_compaction.store.sql.threads import check_generation

__all__ = [
    "Review",
    "check_edit",
    "check_version",
    "drop_review",
    "edit_summary",
    "estimate_edit_tokens",
    "find_review_draft",
    "revoke_summary",
    "save_review",
]

_CHARS_PER_TOKEN = 4
"""The store's estimate of an edit's tokens; the pipeline counts them again when it uses it."""


def estimate_edit_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: the ``summary_tokens`` an edit is stored with."""
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


def check_edit(text: object) -> str:
    """The edited text as stored.

    Raises:
        ValueError: it is not a str, or blank.
    """
    if not isinstance(text, str):
        raise ValueError(f"the edited summary must be a str, got {text!r}")
    if not text.strip():
        raise ValueError("the edited summary is blank; pass the text the summary should read")
    return storable(text)


def check_version(version: object) -> int | None:
    """The version to revoke, if given.

    Raises:
        ValueError: it is not None nor an int >= 1.
    """
    if version is None:
        return None
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"version must be an int >= 1 or None, got {version!r}")
    return version


def _where(thread_id: str, namespace: str) -> str:
    return f"thread {thread_id!r} in namespace {namespace!r}"


def edit_summary(
    conn: Connection, thread_id: str, namespace: str, text: str, retention: int | None
) -> SummaryRecord:
    """Store ``text`` as the next version of the thread's newest summary in use."""
    lock_thread(conn, thread_id)
    newest = latest_summaries(conn, thread_id, namespace, 1)
    if not newest:
        raise ValueError(
            f"{_where(thread_id, namespace)} has no summary to edit (none stored, or every "
            "version revoked); check the thread id and --namespace"
        )
    base = newest[0]
    record = SummaryRecord(
        id=uuid4().hex,
        thread_id=thread_id,
        namespace=namespace,
        version=next_version(conn, thread_id, namespace),
        parent_id=base.id,
        boundary_message_id=base.boundary_message_id,
        covered_messages=base.covered_messages,
        prefix_hash=base.prefix_hash,
        summary=text,
        summary_tokens=estimate_edit_tokens(text),
        source_tokens=base.source_tokens,
        kind="edited",
        model=None,
        created_at=datetime.now(UTC),
        rescued_message_ids=base.rescued_message_ids,
    )  # no usage, no integrity figures (NULL): a person's text made no model call nor check
    values = {
        **dataclasses.asdict(record),
        "rescued_message_ids": json.dumps(list(record.rescued_message_ids)),
        "parent_version": base.version,
    }
    conn.execute(summaries.insert().values(values))
    if retention is not None:
        trim(conn, thread_id, namespace, retention)
    bump_controls(conn, thread_id, namespace)
    return record


def revoke_summary(conn: Connection, thread_id: str, namespace: str, version: int | None) -> int:
    """Mark ``version`` (None: the newest in use) and every later version revoked."""
    lock_thread(conn, thread_id)
    in_thread = (summaries.c.thread_id == thread_id, summaries.c.namespace == namespace)
    if version is None:
        newest = latest_summaries(conn, thread_id, namespace, 1)
        if not newest:
            raise ValueError(
                f"{_where(thread_id, namespace)} has no summary in use to revoke (none "
                "stored, or every version revoked already)"
            )
        version = newest[0].version
    else:
        stored = select(summaries.c.version).where(*in_thread).order_by(summaries.c.version)
        versions = list(conn.scalars(stored))
        if version not in versions:
            held = ", ".join(f"v{v}" for v in versions) or "none"
            raise ValueError(
                f"{_where(thread_id, namespace)} has no version {version} (stored: {held})"
            )
    marked = conn.execute(
        update(summaries)
        .where(*in_thread, summaries.c.version >= version, summaries.c.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC))
    ).rowcount
    if marked == 0:
        raise ValueError(
            f"version {version} of {_where(thread_id, namespace)} and every later version are "
            "revoked already; nothing to revoke"
        )
    bump_controls(conn, thread_id, namespace)
    return int(marked)


@dataclass(frozen=True, slots=True)
class Review:
    """A new summary waiting for a person, checked on creation.

    Raises:
        ValueError: the summary is blank, the kind unknown, the prefix hash empty, or a
            usage count neither None nor an int >= 0.
    """

    thread_id: str
    namespace: str
    prefix_hash: str
    summary: str
    kind: SummaryKind
    model: str | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None

    def __post_init__(self) -> None:
        check_usage(self.input_tokens, self.output_tokens, self.cache_read_tokens)
        if not isinstance(self.thread_id, str) or not isinstance(self.namespace, str):
            raise ValueError("thread_id and namespace of a review must be str")
        if not isinstance(self.summary, str) or not self.summary.strip():
            raise ValueError("the summary to review is blank; a blank summary is a failure")
        if self.kind not in get_args(SummaryKind):
            raise ValueError(f"kind must be 'initial', 'update' or 'edited', got {self.kind!r}")
        if not isinstance(self.prefix_hash, str) or not self.prefix_hash:
            raise ValueError("prefix_hash is empty; pass the hash of the covered prefix")


def save_review(conn: Connection, review: Review, generation: int | None) -> None:
    """Keep ``review`` for its prefix, replacing one saved before."""
    check_generation(conn, review.thread_id, review.namespace, generation)
    now = datetime.now(UTC)
    key_fields = ("thread_id", "namespace", "prefix_hash")
    fields = {k: v for k, v in dataclasses.asdict(review).items() if k not in key_fields}
    stmt = dialect_insert(conn, reviews).values(
        thread_id=review.thread_id,
        namespace=review.namespace,
        prefix_hash=review.prefix_hash,
        created_at=now,
        **fields,
    )
    key = [reviews.c.thread_id, reviews.c.namespace, reviews.c.prefix_hash]
    conn.execute(stmt.on_conflict_do_update(index_elements=key, set_={**fields, "created_at": now}))


def _review_key(
    thread_id: str, namespace: str, prefix_hash: str
) -> tuple[ColumnElement[bool], ...]:
    return (
        reviews.c.thread_id == thread_id,
        reviews.c.namespace == namespace,
        reviews.c.prefix_hash == prefix_hash,
    )


_DRAFT = select(
    reviews.c.summary,
    reviews.c.model,
    reviews.c.input_tokens,
    reviews.c.output_tokens,
    reviews.c.cache_read_tokens,
)


def find_review_draft(
    conn: Connection, thread_id: str, namespace: str, prefix_hash: str
) -> ReviewDraft | None:
    """The draft waiting for review for this prefix, with its model and usage, if any."""
    row = conn.execute(_DRAFT.where(*_review_key(thread_id, namespace, prefix_hash))).first()
    return None if row is None else ReviewDraft(*row)


def drop_review(conn: Connection, thread_id: str, namespace: str, prefix_hash: str) -> None:
    """Forget the review of this prefix (accepted, edited or rejected); no error if none."""
    conn.execute(delete(reviews).where(*_review_key(thread_id, namespace, prefix_hash)))
