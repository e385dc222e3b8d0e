"""The values the store hands out (SummaryRecord, ReviewDraft, ThreadState, RecalledMessage)
and takes in (NewSummary with its IntegrityColumns, IndexedMessage).

Plain frozen dataclasses: they cross threads and event loops, hash, and compare by value.
A SummaryRecord's fields are named exactly like the ``compaction_summaries`` columns.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from langgraph_compaction.store.db.storable_text import storable

__all__ = [
    "INTEGRITY_FIELDS",
    "RECORD_FIELDS",
    "USAGE_FIELDS",
    "CompactionRequest",
    "IndexedMessage",
    "IntegrityColumns",
    "NewSummary",
    "RecalledMessage",
    "ReviewDraft",
    "SummaryKind",
    "SummaryRecord",
    "ThreadControls",
    "ThreadState",
    "check_calibration",
    "check_usage",
    "indexed_messages",
    "integrity_values",
    "message_ids",
    "record_from_row",
]

SummaryKind = Literal["initial", "update", "edited"]
"""``initial`` came from the checkpoint prompt, ``update`` from the update prompt, ``edited``
from a person (``edit_summary``, or an edit made when reviewing a new summary)."""


@dataclass(frozen=True, slots=True)
class SummaryRecord:
    """One stored summary: a version in a thread's lineage, covering a prefix of its messages."""

    id: str
    """uuid4 hex, assigned by the store."""
    thread_id: str
    """The conversation's thread id; ``""`` when the graph runs without one."""
    namespace: str
    """Separates stores of different agents or configs sharing one database."""
    version: int
    """1 for the thread's first summary, then one more than the newest at insert time."""
    parent_id: str | None
    """The summary this one updates; may name a row that retention has since deleted."""
    boundary_message_id: str
    """Id of the last message the summary covers."""
    covered_messages: int
    """How many messages of the history the summary replaces."""
    prefix_hash: str
    """Hash of the covered prefix; unique per thread and namespace."""
    summary: str
    """The summary text, never blank."""
    summary_tokens: int
    """Tokens of ``summary``."""
    source_tokens: int
    """Tokens of the messages the summary replaces."""
    kind: SummaryKind
    """``"initial"`` from the checkpoint prompt, ``"update"`` from the update prompt,
    ``"edited"`` written by a person."""
    model: str | None
    """The summarizer model's name, when known; None for an edit."""
    created_at: datetime
    """When it was stored, timezone-aware UTC."""
    rescued_message_ids: tuple[str, ...]
    """Ids of messages kept verbatim next to the summary (e.g. skill files)."""
    revoked_at: datetime | None = None
    """When ``revoke_summary`` withdrew this version (UTC); a revoked summary is never used
    again (``latest_summaries`` and ``find_summary`` skip it), ``list_summaries`` shows it."""
    input_tokens: int | None = None
    """Input tokens of the summary call(s) that made this row, as the model reported them (a
    row made by several calls holds their sum); None when not reported, and for an edit."""
    output_tokens: int | None = None
    """Output tokens of the row's summary call(s); None when not reported."""
    cache_read_tokens: int | None = None
    """Input tokens the row's summary call(s) read from the provider's prompt cache; None
    when not reported."""
    integrity_identifiers: int | None = None
    """Identifiers found in the messages the summary newly covers (DESIGN 6.13); this and the
    other ``integrity_*`` fields are None when no check ran: a row older than schema 7, the
    check turned off, a person's edit."""
    integrity_kept: int | None = None
    """Of those, how many the summary text held verbatim before any ledger."""
    integrity_appended: int | None = None
    """Ledger lines appended to the summary (missing identifiers and artifacts)."""
    integrity_dropped: int | None = None
    """Ledger lines left out for lack of ``integrity.ledger_tokens``."""
    integrity_artifacts: int | None = None
    """Artifacts (tool, identifying argument) found in the covered tool calls."""
    integrity_repaired: bool | None = None
    """Whether the summary was asked for once more, naming what it missed."""
    integrity_items: str | None = None
    """The ledger's items as JSON text, which the next update merges."""


@dataclass(frozen=True, slots=True)
class ReviewDraft:
    """A new summary waiting for a person's review (``find_review_draft``), with what its
    summary call(s) cost, so that the summary stored on acceptance carries that usage."""

    summary: str
    """The draft's text."""
    model: str | None
    """The summarizer model's name, when known."""
    input_tokens: int | None = None
    """Input tokens of the draft's summary call(s); None when not reported."""
    output_tokens: int | None = None
    """Output tokens of the draft's summary call(s); None when not reported."""
    cache_read_tokens: int | None = None
    """Cache-read input tokens of the draft's summary call(s); None when not reported."""


@dataclass(frozen=True, slots=True)
class ThreadState:
    """A thread's failure count, token calibration and generation; zeros for a thread never seen."""

    thread_id: str
    namespace: str
    consecutive_failures: int
    """Summary failures since the last success."""
    messages_at_last_failure: int | None
    """History length at the last failure; the cooldown counts new messages from here."""
    calibration: float | None
    """Measured/estimated token ratio, for correcting the token estimate."""
    last_error: str | None
    """The most recent failure's message; kept after a reset, for people inspecting."""
    generation: int = 0
    """How many times the thread was deleted; pass it back to writes (``generation=``) so
    that a result computed before a deletion is refused instead of reviving the thread."""


@dataclass(frozen=True, slots=True)
class ThreadControls:
    """What people and agents changed about a thread, read in one cheap lookup per call."""

    version: int
    """Goes up with every request, pin, unpin, edit, revoke and deletion: a changed value
    tells a process that what it holds of the thread may be stale. 0 for a thread never
    steered nor deleted; the deletion generation is carried above bit 32, so a version
    seen before a deletion never comes back after it."""
    requested: bool
    """A compaction request is pending (``request_compaction``)."""
    calibration: float | None = field(default=None, compare=False)
    """The thread's stored token ratio (``ThreadState.calibration``): on the same row, so a
    process that first sees the thread adopts it without another read. Not a control: left
    out of comparisons."""


@dataclass(frozen=True, slots=True)
class CompactionRequest:
    """A pending compaction request: what it asks and when it was filed (its identity when it
    is consumed, with the summary it asked for)."""

    instruction: str | None
    """What the summary should focus on, if the requester said."""
    requested_at: datetime


@dataclass(frozen=True, slots=True)
class IntegrityColumns:
    """What the integrity check (DESIGN 6.13) found for a new summary, as its row stores it in
    the ``integrity_*`` columns; checked on creation.

    Raises:
        ValueError: naming the field: a count not an int >= 0, ``kept`` above
            ``identifiers``, ``repaired`` not a bool, or ``items`` not JSON text.
    """

    identifiers: int
    """Identifiers in the messages the summary newly covers."""
    kept: int
    """How many of them the summary text held verbatim (at most ``identifiers``)."""
    appended: int
    """Ledger lines appended after the summary."""
    dropped: int
    """Ledger lines left out for lack of budget."""
    artifacts: int
    """Artifacts found in the covered tool calls."""
    repaired: bool
    """Whether the summary was asked for once more."""
    items: str
    """The ledger's items, JSON text."""

    def __post_init__(self) -> None:
        for name in ("identifiers", "kept", "appended", "dropped", "artifacts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"IntegrityColumns.{name} must be an int >= 0, got {value!r}")
        if self.kept > self.identifiers:
            raise ValueError(
                f"IntegrityColumns.kept ({self.kept}) exceeds identifiers ({self.identifiers})"
            )
        if not isinstance(self.repaired, bool):
            raise ValueError(f"IntegrityColumns.repaired must be a bool, got {self.repaired!r}")
        try:
            if not isinstance(self.items, str):
                raise TypeError(f"got {self.items!r}")
            json.loads(self.items)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"IntegrityColumns.items must be JSON text (a str): {exc}") from None


@dataclass(frozen=True, slots=True)
class NewSummary:
    """A summary to insert, checked on creation so that a bad one never reaches the database.

    The store assigns ``id``, ``version`` and ``created_at``.

    Raises:
        ValueError: the summary is blank, the kind unknown, the prefix hash empty, a count
            negative, a usage count neither None nor an int >= 0, or ``integrity`` neither
            None nor an IntegrityColumns.
    """

    thread_id: str
    namespace: str
    parent_id: str | None
    boundary_message_id: str
    covered_messages: int
    prefix_hash: str
    summary: str
    summary_tokens: int
    source_tokens: int
    kind: SummaryKind
    model: str | None
    rescued_message_ids: tuple[str, ...]
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    integrity: IntegrityColumns | None = None
    """What the integrity check found (the ``integrity_*`` columns); None stores NULLs."""

    def __post_init__(self) -> None:
        check_usage(self.input_tokens, self.output_tokens, self.cache_read_tokens)
        if self.integrity is not None and not isinstance(self.integrity, IntegrityColumns):
            raise ValueError(
                f"integrity must be an IntegrityColumns or None (no check), got {self.integrity!r}"
            )
        if not self.summary.strip():
            raise ValueError("summary is blank; a summary call that returns no text is a failure")
        if self.kind not in get_args(SummaryKind):
            raise ValueError(f"kind must be 'initial', 'update' or 'edited', got {self.kind!r}")
        if not self.prefix_hash:
            raise ValueError("prefix_hash is empty; pass the hash of the covered prefix")
        for name in ("covered_messages", "summary_tokens", "source_tokens"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


@dataclass(frozen=True, slots=True)
class IndexedMessage:
    """A message a summary newly covers, to index for total recall (``recall_messages=``).

    The store adds its content hash, created_at and, for ranking, the text of its neighbours
    and the last date the conversation mentioned before it.

    Raises:
        ValueError: the position is negative, or the id or type is empty.
    """

    position: int
    """Index of the message in the thread's history."""
    message_id: str
    """The message's id, or ``#<position>`` for a message without one."""
    type: str
    """``human``, ``ai``, ``tool`` or ``system``."""
    name: str | None
    """The tool's name for a tool message, else the message's name, if any."""
    text: str
    """The message as the summary transcript renders it (``role: text``), unescaped."""

    def __post_init__(self) -> None:
        if isinstance(self.position, bool) or not isinstance(self.position, int):
            raise ValueError(f"position must be an int, got {self.position!r}")
        if self.position < 0:
            raise ValueError(f"position must be >= 0, got {self.position}")
        if not self.message_id:
            raise ValueError(f"message {self.position} has an empty message_id; use '#<position>'")
        if not self.type:
            raise ValueError(f"message {self.message_id!r} has an empty type")
        if not isinstance(self.text, str):
            raise ValueError(f"message {self.message_id!r}: text must be a str")


@dataclass(frozen=True, slots=True)
class RecalledMessage:
    """One search hit of total recall: an evicted message, as it was indexed."""

    message_id: str
    """The message's id, or ``#<position>`` for a message without one."""
    position: int
    """Index of the message in the thread's history."""
    type: str
    """``human``, ``ai``, ``tool`` or ``system``."""
    name: str | None
    """The tool's or the message's name, if any."""
    text: str
    """The message as the summary transcript rendered it (``role: text``)."""
    score: float
    """How well it matches the query; higher is better, comparable within one search only."""


def message_ids(ids: Sequence[str]) -> tuple[str, ...]:
    """The ids as a tuple, as stored (``store.db.storable_text``, like every other id); a bare
    string is refused rather than split into characters.

    Raises:
        ValueError: ``ids`` is a string.
    """
    if isinstance(ids, str):
        raise ValueError("rescued_message_ids must be a sequence of ids, not one string")
    return tuple(map(storable, ids))


def indexed_messages(batch: Sequence[IndexedMessage]) -> tuple[IndexedMessage, ...]:
    """The batch as a tuple, checked before any database work, its text as it is stored
    (``store.db.storable_text``), so that content hashes and neighbours are computed on what the
    rows hold.

    Raises:
        ValueError: an item is not an IndexedMessage.
    """
    items = tuple(batch)
    for item in items:
        if not isinstance(item, IndexedMessage):
            raise ValueError(f"recall_messages holds {item!r}; pass IndexedMessage values")
    return tuple(map(_stored_message, items))


def _stored_message(message: IndexedMessage) -> IndexedMessage:
    name = None if message.name is None else storable(message.name)
    message_id, text = storable(message.message_id), storable(message.text)
    if (message_id, name, text) == (message.message_id, message.name, message.text):
        return message
    return dataclasses.replace(message, message_id=message_id, name=name, text=text)


USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens")
"""The usage columns of ``compaction_summaries`` and ``compaction_reviews``, in this order."""


def check_usage(
    input_tokens: int | None, output_tokens: int | None, cache_read_tokens: int | None
) -> None:
    """Refuse a usage count that is neither None (not reported) nor an int >= 0.

    Raises:
        ValueError: naming the field at fault.
    """
    counts = (input_tokens, output_tokens, cache_read_tokens)
    for name, value in zip(USAGE_FIELDS, counts, strict=True):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an int >= 0 or None (not reported), got {value!r}")
        if value < 0:
            raise ValueError(f"{name} must be >= 0 or None (not reported), got {value}")


def check_calibration(ratio: float) -> float:
    """The ratio, if it can calibrate token estimates (finite and > 0).

    Raises:
        ValueError: it cannot.
    """
    if not math.isfinite(ratio) or ratio <= 0:
        raise ValueError(f"calibration ratio must be a finite number > 0, got {ratio!r}")
    return ratio


INTEGRITY_FIELDS = tuple(f"integrity_{f.name}" for f in dataclasses.fields(IntegrityColumns))
"""The integrity columns of ``compaction_summaries`` (schema 7), in IntegrityColumns' order."""


def integrity_values(integrity: IntegrityColumns | None) -> dict[str, Any]:
    """The ``integrity_*`` column values of a new row: all None (NULL) without a check."""
    if integrity is None:
        return dict.fromkeys(INTEGRITY_FIELDS)
    values = (getattr(integrity, name.removeprefix("integrity_")) for name in INTEGRITY_FIELDS)
    return dict(zip(INTEGRITY_FIELDS, values, strict=True))


RECORD_FIELDS = tuple(field.name for field in dataclasses.fields(SummaryRecord))
"""SummaryRecord's fields in order; a query selects these columns, in this order."""

_RESCUED = RECORD_FIELDS.index("rescued_message_ids")


def record_from_row(row: Sequence[Any]) -> SummaryRecord:
    """Turn one row of the :data:`RECORD_FIELDS` columns into a SummaryRecord.

    Positional on purpose: building a mapping per row costs more than the query itself.
    ``rescued_message_ids`` is JSON text in the row, read into a tuple; every other column
    is the field's value as it is.
    """
    rescued = tuple(json.loads(row[_RESCUED]))
    return SummaryRecord(*(*row[:_RESCUED], rescued, *row[_RESCUED + 1 :]))
