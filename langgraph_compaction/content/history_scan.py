"""Token counts and prefix hashes of one history, cached per thread and filled lazily.

The history arrives as fresh objects on every turn (a checkpointer loads it), or as the same
objects, edited in place or not (an in-memory graph, the steps of one run), so nothing can key
on object identity. Each thread keeps a copy of every message's fields from its last scan:
nested lists and dicts (content blocks, tool calls and their arguments, ``additional_kwargs``,
``response_metadata``) are copied too, so that an edit in place anywhere in them is seen.
An object of another kind inside a field (an artifact's documents, an enum) is held, not
copied, and compares by its own ``==``: an edit in place of such an object is not seen.
Comparing the copies with the messages' fields runs in C, and only messages past the first
difference are counted and hashed again. A steady-state call compares each message once and
copies and counts only the new ones.

Counting is done once per message. The default counter (``estimate_tokens``) counts a message
on its own, so a history seen for the first time (a restarted worker) gets its newest
messages' counts (the kept tail's) in the one pass that gives its total, and they are not
counted again; the older ones are kept as one total, so that a warm call copies no count per
message. langchain-core's approximate counter rounds per message too, but takes a list: with
it such a history is counted in one call, and per-message counts are made only for the
stretches a caller asks about (the kept tail, a rescued message). Any other counter is called
once per message. Prefix hashes are ``prefix_hash``'s.
"""

from __future__ import annotations

import marshal
import operator
import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

from langgraph_compaction.content.estimate import estimate_tokens, message_tokens
from langgraph_compaction.content.prefix_hash import Fields, PrefixHashes
from langgraph_compaction.content.tokens import TokenCounter

__all__ = ["HistoryIndex", "HistoryScan"]

_MIN_STRETCH = 32
_MAX_SINGLES = 16
_SHORT_HEAD = 8
_FRESH_TAIL = 256
"""Messages at the end of a first-seen history whose counts are kept one by one (the kept
tail's); the rest is one total, so a warm call does not copy a count per message."""
_MAX_THREADS = 1024
_FIELDS = operator.attrgetter("__dict__")
"""A message's fields: what ``vars`` gives, a fifth faster over a history (no argument tuple)."""


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
    """Copies of each message's fields, nested lists and dicts included: what the next call
    compares; never changed."""
    counts: _Counts
    hashes: PrefixHashes = field(default_factory=PrefixHashes)
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
        return self.memo.hashes.digest(self.memo.fields, end)

    def legacy_prefix_hash(self, end: int) -> str:
        """The first versions' (untagged) hash of ``messages[:end]``."""
        return self.memo.hashes.legacy_digest(self.memo.fields, end)

    def matches(self, end: int, stored: str) -> bool:
        """Whether ``stored``, a summary's prefix hash of any format, is ``messages[:end]``'s."""
        return self.memo.hashes.matches(self.memo.fields, end, stored)


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
        snapshot = _snapshot(messages)
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
        snapshot.extend(_snapshot(messages[same:]))
        old = previous.counts
        running = old.running[: same - old.split + 1]
        new = map(self._each, messages[same:])
        running.extend(accumulate(new, initial=running[-1]))
        del running[same - old.split + 1]  # accumulate repeats its initial value
        with previous.lock:
            return _Memo(
                snapshot,
                _Counts(old.split, old.head, running),
                previous.hashes.kept(same),
                {i: n for i, n in previous.singles.items() if i < same},
                {end: n for end, n in previous.heads.items() if end <= same},
            )


def _snapshot(messages: Sequence[BaseMessage]) -> list[Fields]:
    """Copies of the messages' fields, nested lists and dicts included, other objects held.

    All at once through ``marshal`` (in C) when the fields hold only built-in values; a
    message holding anything else is copied on its own, its other objects held as they are.
    """
    fields = list(map(_FIELDS, messages))
    try:
        copied: list[Fields] = marshal.loads(marshal.dumps(fields))
    except ValueError:  # an object marshal does not write (an enum, a model), or too deep
        return [_copied(one) for one in fields]
    return copied


def _copied(fields: Fields) -> Fields:
    try:
        one: Fields = marshal.loads(marshal.dumps(fields))
    except ValueError:
        return {name: _nested(value) for name, value in fields.items()}
    return one


def _nested(value: Any) -> Any:
    """A copy of the lists and dicts in ``value`` (to any depth); any other object as it is."""
    if type(value) is dict:
        return {key: _nested(item) for key, item in value.items()}
    if type(value) is list:
        return [_nested(item) for item in value]
    return value


def _one_by_one(counter: TokenCounter) -> Callable[[BaseMessage], int]:
    """A list counter asked about one message."""
    return lambda message: counter([message])


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
