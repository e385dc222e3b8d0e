"""A consistency check of a store's rows, for after a crash or before trusting a copy.

It reports, in plain sentences, every way the rows break the store's own rules: a blank or
malformed summary, two rows of one thread with the same version or two in use (neither
edited nor revoked) with the same prefix, a parent that belongs elsewhere, is not older, or
is missing without retention having trimmed it, a negative usage count (of a summary or a
review), integrity figures out of range (a negative count, more identifiers kept than found,
ledger items that are not JSON), an edit of the same prefix as its parent with another
boundary, a revocation dated before its row, per-thread state out of range (a negative control
version, a request instruction without a request), a blank pin or review,
a deletion generation below 1, a lease without an owner or that expires before it was taken,
an indexed message whose content hash does not match its text or whose position is
negative, and (SQLite) a full-text index out of step with its table. On SQLite it runs
``PRAGMA integrity_check`` first. It only reads. An empty list means the store is sound.
"""

from __future__ import annotations

import json
import math
from typing import Any, get_args

from sqlalchemy import Connection, func, or_, select

from langgraph_compaction.store.records import (
    INTEGRITY_FIELDS,
    USAGE_FIELDS,
    IndexedMessage,
    SummaryKind,
)
from langgraph_compaction.store.schema.fulltext import FTS_TABLE
from langgraph_compaction.store.schema.migrate import HEAD_REVISION, current_revision
from langgraph_compaction.store.sql.search import content_hash
from langgraph_compaction.store.sql.summaries import (
    LIVE_SUMMARY,
    generations,
    leases,
    messages,
    pins,
    reviews,
    summaries,
    threads,
)

__all__ = ["find_problems"]

_S = summaries.c
_KINDS = get_args(SummaryKind)


def find_problems(conn: Connection) -> list[str]:
    """Every rule the store's rows break, one sentence each; empty when there is none."""
    problems: list[str] = []
    if conn.dialect.name == "sqlite":
        verdict = [str(row[0]) for row in conn.exec_driver_sql("PRAGMA integrity_check")]
        if verdict != ["ok"]:
            problems += [f"SQLite integrity_check: {line}" for line in verdict]
    revision = current_revision(conn)
    if revision != HEAD_REVISION:
        problems.append(
            f"schema revision is {revision}, this package checks revision {HEAD_REVISION}; "
            "open the store with SummaryStore (or run `migrate`) first"
        )
        return problems
    problems += _duplicates(conn, _S.version, "version")
    # Edits and revoked rows share their prefix with another row by design.
    problems += _duplicates(conn, _S.prefix_hash, "prefix_hash in use", LIVE_SUMMARY)
    problems += _row_problems(conn)
    problems += _lineage_problems(conn)
    problems += _edit_problems(conn)
    problems += _thread_problems(conn)
    problems += _steering_problems(conn)
    problems += _deletion_and_lease_problems(conn)
    problems += _index_problems(conn)
    return problems


def _duplicates(conn: Connection, column: Any, label: str, where: Any = None) -> list[str]:
    stmt = select(_S.thread_id, _S.namespace, column, func.count())
    if where is not None:
        stmt = stmt.where(where)
    stmt = stmt.group_by(_S.thread_id, _S.namespace, column).having(func.count() > 1)
    return [
        f"thread {t!r} namespace {ns!r}: {count} summaries share {label} {value!r}"
        for t, ns, value, count in conn.execute(stmt)
    ]


def _row_problems(conn: Connection) -> list[str]:
    """Each row on its own: text, kind, counts, message ids and timestamp readable."""
    problems = []
    stmt = select(
        _S.id,
        _S.version,
        _S.summary,
        _S.kind,
        _S.covered_messages,
        _S.summary_tokens,
        _S.source_tokens,
        _S.rescued_message_ids,
        _S.prefix_hash,
        _S.created_at,  # read through UTCDateTime: an unreadable stamp raises here
        _S.revoked_at,
        _S.input_tokens,
        _S.output_tokens,
        _S.cache_read_tokens,
        *(_S[name] for name in INTEGRITY_FIELDS),
    )
    for row in conn.execution_options(yield_per=1000).execute(stmt):
        where = f"summary {row.id}"
        if not row.summary.strip():
            problems.append(f"{where}: blank summary text")
        if row.kind not in _KINDS:
            problems.append(f"{where}: kind {row.kind!r} is not one of {', '.join(_KINDS)}")
        if row.revoked_at is not None and row.revoked_at < row.created_at:
            problems.append(f"{where}: revoked_at is before created_at")
        if row.version < 1:
            problems.append(f"{where}: version {row.version} is below 1")
        if not row.prefix_hash:
            problems.append(f"{where}: empty prefix_hash")
        for name in ("covered_messages", "summary_tokens", "source_tokens", *USAGE_FIELDS):
            if (getattr(row, name) or 0) < 0:  # a usage count may be NULL: not reported
                problems.append(f"{where}: negative {name}")
        if not _is_id_list(row.rescued_message_ids):
            problems.append(f"{where}: rescued_message_ids is not a JSON list of ids")
        problems += [f"{where}: {problem}" for problem in _integrity_problems(row)]
    return problems


_COUNTS = INTEGRITY_FIELDS[:5]
"""identifiers, kept, appended, dropped, artifacts: the integrity columns that count."""


def _integrity_problems(row: Any) -> list[str]:
    """The integrity figures (schema 7), each NULL when no check ran."""
    problems = [f"negative {name}" for name in _COUNTS if (getattr(row, name) or 0) < 0]
    kept, found = row.integrity_kept, row.integrity_identifiers
    if kept is not None and found is not None and kept > found:
        problems.append(f"integrity_kept {kept} exceeds integrity_identifiers {found}")
    if row.integrity_items is not None:
        try:
            json.loads(row.integrity_items)
        except ValueError:
            problems.append("integrity_items is not JSON text")
    return problems


def _is_id_list(text: str) -> bool:
    try:
        ids = json.loads(text)
    except ValueError:
        return False
    return isinstance(ids, list) and all(isinstance(i, str) for i in ids)


def _lineage_problems(conn: Connection) -> list[str]:
    """A parent is an older version of the same thread, or was trimmed by retention.

    Retention deletes a thread's oldest versions, so a trimmed parent is older than every kept
    version; a row written after its parent was trimmed has no ``parent_version``, and then the
    thread must show that trimming happened (its oldest kept version is above 1).
    """
    parent = summaries.alias("parent")
    oldest = (
        select(_S.thread_id, _S.namespace, func.min(_S.version).label("oldest"))
        .group_by(_S.thread_id, _S.namespace)
        .subquery()
    )
    stmt = (
        select(
            _S.id,
            _S.thread_id,
            _S.namespace,
            _S.version,
            _S.parent_id,
            _S.parent_version,
            parent.c.thread_id.label("p_thread"),
            parent.c.namespace.label("p_namespace"),
            parent.c.version.label("p_version"),
            oldest.c.oldest,
        )
        .join(oldest, (oldest.c.thread_id == _S.thread_id) & (oldest.c.namespace == _S.namespace))
        .outerjoin(parent, parent.c.id == _S.parent_id)
        .where(_S.parent_id.is_not(None))
    )
    problems = []
    for row in conn.execution_options(yield_per=1000).execute(stmt):
        where = f"summary {row.id} (thread {row.thread_id!r} v{row.version})"
        if row.p_version is None:  # the parent row is gone
            if row.parent_version is None:
                trimmed = row.oldest > 1
            else:
                trimmed = row.parent_version < row.oldest
            if not trimmed:
                problems.append(f"{where}: parent {row.parent_id} is missing, not trimmed")
        elif (row.p_thread, row.p_namespace) != (row.thread_id, row.namespace):
            problems.append(f"{where}: parent {row.parent_id} belongs to another thread")
        elif row.p_version >= row.version:
            problems.append(f"{where}: parent v{row.p_version} is not older")
        elif row.parent_version not in (None, row.p_version):
            problems.append(
                f"{where}: parent_version {row.parent_version} but the parent is v{row.p_version}"
            )
    return problems


def _edit_problems(conn: Connection) -> list[str]:
    """An edit of its parent's prefix (``edit_summary``) covers exactly what the parent does.

    An edit made while reviewing a new summary covers a new prefix: nothing to compare.
    """
    parent = summaries.alias("parent")
    stmt = (
        select(_S.id, _S.thread_id, _S.version, parent.c.version.label("p_version"))
        .join(parent, parent.c.id == _S.parent_id)
        .where(
            _S.kind == "edited",
            parent.c.prefix_hash == _S.prefix_hash,
            or_(
                parent.c.boundary_message_id != _S.boundary_message_id,
                parent.c.covered_messages != _S.covered_messages,
            ),
        )
    )
    return [
        f"summary {row.id} (thread {row.thread_id!r} v{row.version}): an edit of "
        f"v{row.p_version}'s prefix, but with another boundary or message count"
        for row in conn.execute(stmt)
    ]


def _steering_problems(conn: Connection) -> list[str]:
    """Pins name a message; a review holds text of a known kind, and no negative usage."""
    problems = []
    for row in conn.execute(select(pins).where(pins.c.message_id == "")):
        problems.append(f"thread {row.thread_id!r} namespace {row.namespace!r}: a pin without id")
    for row in conn.execute(select(reviews)):
        where = f"review of thread {row.thread_id!r} prefix {row.prefix_hash!r}"
        if not row.summary.strip():
            problems.append(f"{where}: blank summary text")
        if row.kind not in _KINDS:
            problems.append(f"{where}: kind {row.kind!r} is not one of {', '.join(_KINDS)}")
        problems += [
            f"{where}: negative {name}" for name in USAGE_FIELDS if (row._mapping[name] or 0) < 0
        ]
    return problems


def _thread_problems(conn: Connection) -> list[str]:
    problems = []
    for row in conn.execute(select(threads)):
        where = f"thread {row.thread_id!r} namespace {row.namespace!r}"
        if row.consecutive_failures < 0:
            problems.append(f"{where}: negative consecutive_failures")
        if row.messages_at_last_failure is not None and row.messages_at_last_failure < 0:
            problems.append(f"{where}: negative messages_at_last_failure")
        if row.calibration is not None and not (
            math.isfinite(row.calibration) and row.calibration > 0
        ):
            problems.append(f"{where}: calibration {row.calibration} is not a ratio > 0")
        if row.controls < 0:
            problems.append(f"{where}: negative control version {row.controls}")
        if row.request_instruction is not None and row.requested_at is None:
            problems.append(f"{where}: a request instruction without a pending request")
    return problems


def _deletion_and_lease_problems(conn: Connection) -> list[str]:
    """Generations count deletions (>= 1); a lease names its owner and expires after it began.

    A lease past its expiry is no problem: it is free, and the next taker overwrites it.
    """
    problems = []
    for row in conn.execute(select(generations).where(generations.c.generation < 1)):
        problems.append(
            f"thread {row.thread_id!r} namespace {row.namespace!r}: deletion generation "
            f"{row.generation} is below 1"
        )
    for row in conn.execute(select(leases)):
        where = f"lease of thread {row.thread_id!r} prefix {row.prefix_hash!r}"
        if not row.owner.strip():
            problems.append(f"{where}: no owner")
        if row.expires_at < row.acquired_at:
            problems.append(f"{where}: expires before it was taken")
    return problems


def _index_problems(conn: Connection) -> list[str]:
    """Indexed messages: readable, hashed as stored, and (SQLite) in step with FTS5."""
    problems = []
    m = messages.c
    stmt = select(m.id, m.thread_id, m.position, m.message_id, m.type, m.name, m.text,
                  m.content_hash)  # fmt: skip
    for row in conn.execution_options(yield_per=1000).execute(stmt):
        where = f"indexed message {row.message_id!r} of thread {row.thread_id!r}"
        if row.position < 0:
            problems.append(f"{where}: negative position {row.position}")
            continue
        try:
            message = IndexedMessage(row.position, row.message_id, row.type, row.name, row.text)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if content_hash(message) != row.content_hash:
            problems.append(f"{where}: content_hash does not match its text (edited by hand?)")
    if conn.dialect.name == "sqlite":
        try:  # FTS5 compares its index with the content table; rank 1 = external content
            conn.exec_driver_sql(
                f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('integrity-check', 1)"
            )
        except Exception as exc:  # SQLITE_CORRUPT_VTAB
            problems.append(
                f"{FTS_TABLE} is out of step with compaction_messages ({exc}); rebuild it: "
                f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')"
            )
    return problems
