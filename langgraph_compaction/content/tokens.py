"""Token counts and prefix hashes of one history, cached per thread and filled lazily.

The history arrives as fresh objects on every turn (a checkpointer loads it), so nothing can
key on object identity. Each thread keeps a shallow copy of every message's fields (pydantic
keeps them in the instance ``__dict__``) from its last scan; comparing those dicts runs in C,
and only messages past the first difference are counted again. A steady-state call touches
each message once, in C, and counts only the new ones; an edit of any field, tool-call
arguments included, is seen.

Counting is done once per message. The default counter (``_estimate``) counts a message on
its own, so a history seen for the first time (a restarted worker) gets its newest messages'
counts (the kept tail's) in the one pass that gives its total, and they are not counted again;
the older ones are kept as one total, so that a warm call copies no count per message.
langchain-core's approximate counter rounds per message too, but takes a list: with it such a
history is counted in one call, and per-message counts are made only for the stretches a
caller asks about (the kept tail, a rescued message). Any other counter is called once per
message.

A prefix hash (what a stored summary is matched by) is one blake2b over the messages' type,
id, name, tool call id, content and tool calls, each message pickled on its own, back to back
(written in C, a run of messages at a time). The hasher is kept where the last hash ended and
after every 64 messages, so a growing thread hashes only its new messages, and the hash of an
earlier prefix costs at most 63 messages more.
Hashes stored by earlier versions (untagged: a chain of per-message JSON digests) still match:
that chain is computed only when such a summary is checked.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import operator
import pickle
import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool

from langgraph_compaction.content.estimate import estimate_tokens, message_tokens

__all__ = [
    "HASH_TAG",
    "HistoryIndex",
    "HistoryScan",
    "TokenCounter",
    "calibrated",
    "count_fixed_tokens",
]

TokenCounter = Callable[[Sequence[BaseMessage]], int]
"""Any callable that counts the tokens of a list of messages (LangChain's convention)."""

CALIBRATION_BOUNDS = (0.5, 2.0)
HASH_TAG = "v2:"
"""Prefix of the prefix hashes this version stores; untagged ones are the earlier format."""

Fields = dict[str, Any]
"""A message's fields, as pydantic keeps them in its ``__dict__``."""

_BLOCK = 64
_MIN_STRETCH = 32
_MAX_HASHES = 64
_MAX_SINGLES = 16
_SHORT_HEAD = 8
_FRESH_TAIL = 256
"""Messages at the end of a first-seen history whose counts are kept one by one (the kept
tail's); the rest is one total, so a warm call does not copy a count per message."""
_MAX_THREADS = 1024
_TYPE, _ID, _NAME, _CONTENT = map(operator.itemgetter, ("type", "id", "name", "content"))
_FIELDS = operator.attrgetter("__dict__")
"""A message's fields: what ``vars`` gives, a fifth faster over a history (no argument tuple)."""


def calibrated(tokens: int, ratio: float | None) -> int:
    """Scale an estimate by a thread's calibration ratio (clamped)."""
    if ratio is None:
        return tokens
    low, high = CALIBRATION_BOUNDS
    return math.ceil(tokens * min(max(ratio, low), high))


def count_fixed_tokens(
    counter: TokenCounter,
    system_prompt: str | None,
    tools: Sequence[BaseTool | dict[str, Any]] | None,
) -> int:
    """Tokens the model node adds itself: a system prompt outside ``messages``, tool schemas."""

    total = counter([SystemMessage(content=system_prompt)]) if system_prompt else 0
    if tools:
        total += count_tokens_approximately([], tools=list(tools))
    return total


def _run_bytes(fields: Sequence[Fields]) -> bytes:
    """What a run of messages adds to a prefix hash: each message's row pickled on its own
    (protocol 2, no memo, so the same values always give the same bytes), back to back.

    Pickled as one list in C, whose own opcodes are then cut off: ``]`` and ``(`` before the
    rows (one row: no ``(``), ``e`` (``a``) and the stop after them. A run that pickle cannot
    write (an odd object in a content block) is written row by row, such rows by ``repr``.
    """
    rows = list(
        zip(
            map(_TYPE, fields),
            map(_ID, fields),
            map(_NAME, fields),
            map(dict.get, fields, repeat("tool_call_id")),
            map(_CONTENT, fields),
            map(dict.get, fields, repeat("tool_calls")),
            strict=True,
        )
    )
    if not rows:
        return b""
    try:
        whole = _pickled(rows)
    except Exception:  # not picklable, or self-referencing
        return b"".join(map(_row_bytes, rows))
    return whole[3 if len(rows) == 1 else 4 : -2]  # after PROTO 2 and the list's opcodes


def _pickled(value: object) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=2)
    pickler.fast = True  # no memo: a repeated object is written again, not referenced
    pickler.dump(value)
    return buffer.getvalue()


def _row_bytes(row: tuple[object, ...]) -> bytes:
    try:
        return _pickled(row)[2:-1]  # without PROTO 2 and the stop
    except Exception:
        return b"repr:" + repr(row).encode("utf-8", "surrogatepass")


def legacy_digest(fields: Fields) -> bytes:
    """A message's digest in the chain that earlier versions stored (its bytes are fixed)."""
    calls = fields.get("tool_calls") or []
    payload = json.dumps(
        [
            fields["type"],
            fields["id"],
            fields["name"],
            fields.get("tool_call_id"),
            fields["content"],
            [[c.get("name"), c.get("args"), c.get("id")] for c in calls],
        ],
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    return hashlib.blake2b(payload.encode(), digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class _Counts:
    """What is counted: per message from ``split`` on, before it one total (swapped whole)."""

    split: int
    head: int
    """Tokens of ``messages[:split]``, counted as one list."""
    running: list[int]
    """``running[j]`` is the token count of ``messages[split:split + j]``; never changed."""


@dataclass(eq=False)
class _Memo:
    """What a thread's scans know of its history, kept between calls (not the messages)."""

    fields: list[Fields]
    """Shallow copies of each message's fields: what the next call compares."""
    counts: _Counts
    states: list[hashlib.blake2b] = field(default_factory=lambda: [hashlib.blake2b(digest_size=16)])
    """The hasher after every ``_BLOCK`` messages (never updated in place)."""
    frontier: tuple[int, hashlib.blake2b] = (0, hashlib.blake2b(digest_size=16))
    """Where the furthest hash ended, and the hasher there (never updated in place)."""
    hashes: dict[int, str] = field(default_factory=dict)
    legacy: list[bytes] = field(default_factory=lambda: [b""])
    """The earlier format's chain, ``legacy[i]`` for ``messages[:i]``; filled on demand."""
    singles: dict[int, int] = field(default_factory=dict)
    """Counts of single messages inside the head (rescued messages, say)."""
    heads: dict[int, int] = field(default_factory=dict)
    """Counts of short prefixes inside the head (the leading system messages)."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Held while filling it in: a background summary may share the call's scan."""


@dataclass(frozen=True, eq=False)
class HistoryScan:
    """Token counts and prefix hashes of one history; filled as callers ask for them.

    The thread's cache keeps only the memo: holding the messages would keep the last history
    alive, and free it inside the next call.
    """

    messages: Sequence[BaseMessage]
    counter: TokenCounter
    memo: _Memo

    @property
    def total(self) -> int:
        return self.prefix(len(self.messages))

    def prefix(self, end: int) -> int:
        """Tokens of ``messages[:end]``."""
        counts = self.memo.counts
        if end >= counts.split:
            return counts.head + counts.running[end - counts.split]
        if end == 0:
            return 0
        if end <= _SHORT_HEAD:  # the leading system messages, say: one list call
            with self.memo.lock:
                if end not in self.memo.heads:
                    self.memo.heads[end] = self.counter(self.messages[:end])
                return self.memo.heads[end]
        counts = self._count_from(end)
        return counts.head + counts.running[end - counts.split]

    def token(self, index: int) -> int:
        """Tokens of ``messages[index]``."""
        counts = self.memo.counts
        if index < counts.split:
            with self.memo.lock:
                if index in self.memo.singles:
                    return self.memo.singles[index]
                if len(self.memo.singles) < _MAX_SINGLES:  # a rescued message, say
                    self.memo.singles[index] = self.counter([self.messages[index]])
                    return self.memo.singles[index]
            counts = self._count_from(index)  # many asked for: count the stretch
        at = index - counts.split
        return counts.running[at + 1] - counts.running[at]

    def tokens_of(self, start: int, end: int) -> list[int]:
        """Tokens of each of ``messages[start:end]``: one slice of the running counts."""
        counts = self.memo.counts if start >= self.memo.counts.split else self._count_from(start)
        run = counts.running[start - counts.split : end - counts.split + 1]
        return list(map(operator.sub, run[1:], run[:-1]))

    def tokens_between(self, start: int, end: int) -> int:
        return self.prefix(end) - self.prefix(start)

    def first_reaching(self, need: float, low: int, high: int) -> int:
        """The first ``end`` in ``[low, high)`` with ``prefix(end) >= need``, else ``high``."""
        counts = self.memo.counts if low >= self.memo.counts.split else self._count_from(low)
        split = counts.split
        return split + bisect_left(counts.running, need - counts.head, low - split, high - split)

    def _count_from(self, index: int) -> _Counts:
        """Count one by one back to ``index``, at least doubling the stretch (walks stay linear)."""
        with self.memo.lock:
            counts = self.memo.counts
            if index >= counts.split:
                return counts
            stretch = max(_MIN_STRETCH, len(counts.running) - 1)
            start = max(0, min(index, counts.split - stretch))
            new = [self.counter([m]) for m in self.messages[start : counts.split]]
            running = list(accumulate(new, initial=0))
            running.extend(map(running[-1].__add__, counts.running[1:]))
            self.memo.counts = _Counts(start, counts.head - running[len(new)], running)
            return self.memo.counts

    def prefix_hash(self, end: int) -> str:
        """Hash of ``messages[:end]``: every message's identity and text, so an edit changes it."""
        known = self.memo.hashes.get(end)
        if known is not None:
            return known
        memo = self.memo
        with memo.lock:
            reached, state = memo.frontier
            if end < reached:  # an earlier prefix: from the block it falls in
                reached = end - end % _BLOCK
                state = memo.states[reached // _BLOCK]
            state = state.copy()
            while reached < end:
                stop = min(end, reached - reached % _BLOCK + _BLOCK)
                state.update(_run_bytes(memo.fields[reached:stop]))
                reached = stop
                if reached % _BLOCK == 0 and reached // _BLOCK == len(memo.states):
                    memo.states.append(state.copy())
            if end > memo.frontier[0]:
                memo.frontier = (end, state.copy())
        digest = HASH_TAG + state.hexdigest()
        with self.memo.lock:
            if len(self.memo.hashes) >= _MAX_HASHES:
                self.memo.hashes.clear()
            self.memo.hashes[end] = digest
        return digest

    def legacy_prefix_hash(self, end: int) -> str:
        """The earlier versions' hash of ``messages[:end]`` (summaries they stored)."""
        with self.memo.lock:
            chain = self.memo.legacy
            for index in range(len(chain) - 1, end):
                digest = legacy_digest(self.memo.fields[index])
                chain.append(hashlib.blake2b(chain[index] + digest, digest_size=16).digest())
        return chain[end].hex()

    def matches(self, end: int, stored: str) -> bool:
        """Whether ``stored``, a summary's prefix hash of either format, is ``messages[:end]``'s."""
        if stored.startswith(HASH_TAG):
            return self.prefix_hash(end) == stored
        return self.legacy_prefix_hash(end) == stored


class HistoryIndex:
    """Cache of the last scan per thread; thread-safe, bounded to the most recent threads."""

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter: TokenCounter = counter or estimate_tokens
        # Their per-message rounding makes counts add up: a head may be counted as one list.
        self.additive = self.counter in (estimate_tokens, count_tokens_approximately)
        self._each: Callable[[BaseMessage], int] = (
            message_tokens if self.counter is estimate_tokens else _one_by_one(self.counter)
        )
        self._memos: OrderedDict[tuple[str, str], _Memo] = OrderedDict()
        self._lock = threading.Lock()

    def scan(self, key: tuple[str, str], messages: Sequence[BaseMessage]) -> HistoryScan:
        """Scan a history, reusing what is unchanged since this thread's last scan."""
        with self._lock:
            previous = self._memos.get(key)
        same = _common_prefix(previous.fields, messages) if previous is not None else 0
        if previous is None or same == 0 or same < previous.counts.split:
            memo = self._fresh(messages)
        else:
            memo = self._extend(previous, same, messages)
        with self._lock:
            self._memos[key] = memo
            self._memos.move_to_end(key)
            while len(self._memos) > _MAX_THREADS:
                self._memos.popitem(last=False)
        return HistoryScan(messages, self.counter, memo)

    def _fresh(self, messages: Sequence[BaseMessage]) -> _Memo:
        snapshot = list(map(dict.copy, map(_FIELDS, messages)))
        if self.counter is estimate_tokens:  # each message counted once; the newest kept apart
            each = list(map(message_tokens, messages))
            split = max(0, len(each) - _FRESH_TAIL)
            running = list(accumulate(each[split:], initial=0))
            return _Memo(snapshot, _Counts(split, sum(each[:split]), running))
        if self.additive:  # one list call, the rest counted when asked for
            return _Memo(snapshot, _Counts(len(messages), self.counter(messages), [0]))
        running = list(accumulate(map(self._each, messages), initial=0))
        return _Memo(snapshot, _Counts(0, 0, running))

    def _extend(self, previous: _Memo, same: int, messages: Sequence[BaseMessage]) -> _Memo:
        """The previous history's first ``same`` messages are unchanged: count only the rest."""
        snapshot = previous.fields[:same]
        snapshot.extend(map(dict.copy, map(_FIELDS, messages[same:])))
        old = previous.counts
        running = old.running[: same - old.split + 1]
        new = map(self._each, messages[same:])
        running.extend(accumulate(new, initial=running[-1]))
        del running[same - old.split + 1]  # accumulate repeats its initial value
        with previous.lock:
            states = previous.states[: same // _BLOCK + 1]
            frontier = previous.frontier
            if frontier[0] > same:  # it ended past the change: back to the last whole block
                frontier = ((len(states) - 1) * _BLOCK, states[-1])
            return _Memo(
                snapshot,
                _Counts(old.split, old.head, running),
                states,
                frontier,
                _below(previous.hashes, same),
                previous.legacy[: same + 1],
                {i: n for i, n in previous.singles.items() if i < same},
                _below(previous.heads, same),
            )


def _one_by_one(counter: TokenCounter) -> Callable[[BaseMessage], int]:
    """A list counter asked about one message."""
    return lambda message: counter([message])


def _below(cache: Mapping[int, Any], limit: int) -> dict[int, Any]:
    return {end: value for end, value in cache.items() if end <= limit}


def _common_prefix(previous: list[Fields], messages: Sequence[BaseMessage]) -> int:
    """Length of the prefix the previous scan shares with this history.

    The usual case (the history grew by appending) is one pass in C over the messages'
    fields, building no list: the fields of each message against its copy from the last scan.
    """
    size = min(len(previous), len(messages))
    try:
        if all(map(operator.eq, previous, map(_FIELDS, messages))):  # stops at the shorter
            return size
    except Exception:  # a field whose comparison raises: find where, one by one
        pass
    for index in range(size):
        try:
            if previous[index] != vars(messages[index]):
                return index
        except Exception:
            return index
    return size
