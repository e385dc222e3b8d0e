"""What one compaction graph learns while its process runs: per-thread caches, behind a lock.

Nothing here is durable (the store is); everything is bounded, so a long-lived worker does not
grow. Every write goes through a method that takes the lock, since the sync path runs calls
on many threads and background summaries run on their own.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langgraph_compaction.content.history_scan import HistoryIndex
from langgraph_compaction.content.messages import make_summary_message
from langgraph_compaction.content.tokens import TokenCounter
from langgraph_compaction.pipeline.records import Epochs
from langgraph_compaction.pipeline.remembered import LastInput, OldMedia, Overflow
from langgraph_compaction.store import SummaryRecord, SummaryStore
from langgraph_compaction.store.summary_store import plumbing

__all__ = ["BoundedCache", "Memory", "SummarizerLimits", "ThreadKey"]

K = TypeVar("K")
V = TypeVar("V")
ThreadKey = tuple[str, str]
"""``(namespace, thread_id)``."""

CACHE_LIMIT = 4096
_WINDOW_MARGIN = 0.85
"""Share of the summarizer's known window a prompt may fill (our count is an estimate)."""
_MIN_TRANSCRIPT_TOKENS = 64
_SUMMARIZER_RATIO_BOUNDS = (0.5, 4.0)

logger = logging.getLogger("langgraph_compaction")


class BoundedCache(Generic[K, V]):
    """A dict that forgets its oldest entries past ``limit``; thread-safe."""

    def __init__(self, limit: int = CACHE_LIMIT) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        return self._items.get(key)  # a dict read is atomic; no lock on the hot path

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._limit:
                self._items.popitem(last=False)

    def pop(self, key: K) -> None:
        with self._lock:
            self._items.pop(key, None)

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        found = self._items.get(key)
        if found is None:
            found = make()
            self.put(key, found)
        return found


@dataclass(frozen=True, slots=True)
class SummarizerLimits:
    """What the summarizer's replies and refusals taught about its context."""

    window: int | None = None
    """Its context window, once a refused prompt has told it."""
    ratio: float | None = None
    """Its own token count over our estimate, from the usage it reports."""
    limit: int | None = None
    """Most prompt tokens (our estimate) to send, learned from a refusal."""


@dataclass(frozen=True, slots=True)
class _Sent:
    index: int
    message_id: str | None
    estimate: int


class Memory:
    """Per-process memory of one compaction graph."""

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.history = HistoryIndex(counter)
        self._calibration: BoundedCache[ThreadKey, float] = BoundedCache()
        self._dirty: set[ThreadKey] = set()
        self._sent: BoundedCache[ThreadKey, _Sent] = BoundedCache()
        self._inputs: BoundedCache[ThreadKey, LastInput] = BoundedCache()
        self._in_use: BoundedCache[ThreadKey, tuple[SummaryRecord, int]] = BoundedCache()
        self._rescued: BoundedCache[str, tuple[int, ...]] = BoundedCache()
        self._summaries: BoundedCache[tuple[str, str | None, bool], tuple[HumanMessage, int]] = (
            BoundedCache()
        )
        self.epochs: BoundedCache[tuple[str, str, str], Epochs] = BoundedCache()
        """Per (namespace, thread, phase): the derived pruning epochs, extended call by call."""
        self.media: BoundedCache[ThreadKey, OldMedia] = BoundedCache()
        """Per thread: its old media and their copies (``media_keep_last``), extended likewise."""
        self.pin_counts: BoundedCache[tuple[str, frozenset[str]], tuple[int, int]] = BoundedCache()
        """Per (summary row, store pins): its pinned messages kept verbatim and summarized."""
        self._summarizer = SummarizerLimits()
        self._controls: BoundedCache[ThreadKey, tuple[int, frozenset[str]]] = BoundedCache()
        self._controls_paused_until = 0.0
        self._store_failure: str | None = None
        self._lock = threading.Lock()

    @property
    def counter(self) -> TokenCounter:
        return self.history.counter

    # -- calibration against the usage the agent's model reports ----------------------------

    def ratio(self, key: ThreadKey) -> float | None:
        return self._calibration.get(key)

    def observe_usage(self, key: ThreadKey, messages: Sequence[BaseMessage]) -> None:
        """Calibrate from the usage a provider reported for the input this thread last sent."""
        sent = self._sent.get(key)
        if sent is None:
            return
        if len(messages) <= sent.index + 1 or messages[sent.index].id != sent.message_id:
            return
        reply = messages[sent.index + 1]
        usage = reply.usage_metadata if isinstance(reply, AIMessage) else None
        if usage and usage.get("input_tokens") and sent.estimate > 0:
            self._calibration.put(key, usage["input_tokens"] / sent.estimate)
            with self._lock:
                self._dirty.add(key)
        self._sent.pop(key)

    def take_unsaved_ratio(self, key: ThreadKey) -> float | None:
        """The ratio measured since it was last saved to the store, once."""
        with self._lock:
            if key not in self._dirty:
                return None
            self._dirty.discard(key)
        return self._calibration.get(key)

    def load_ratio(self, key: ThreadKey, ratio: float | None) -> None:
        """Adopt the store's ratio for a thread this process has not measured."""
        if ratio and self._calibration.get(key) is None:
            self._calibration.put(key, ratio)

    def remember_sent(
        self, key: ThreadKey, messages: Sequence[BaseMessage], tokens: int, ratio: float | None
    ) -> None:
        """Note what this thread sends, to calibrate against the usage the reply reports."""
        if messages:
            raw = tokens / ratio if ratio else tokens
            self._sent.put(key, _Sent(len(messages) - 1, messages[-1].id, int(raw)))

    def remember_input(self, key: ThreadKey, last: LastInput) -> None:
        """Keep the model input this thread's call sent (message references, not copies)."""
        self._inputs.put(key, last)

    def last_input(
        self, key: ThreadKey, messages: Sequence[BaseMessage], summary_id: str | None
    ) -> LastInput | None:
        """The thread's last input, when ``messages`` extends the history it was built from
        and it carried the summary ``summary_id``; else None."""
        last = self._inputs.get(key)
        if last is None or last.summary_id != summary_id or not 0 < last.history <= len(messages):
            return None
        return last if messages[last.history - 1].id == last.last_id else None

    # -- the summary in use ---------------------------------------------------------------------

    def hold(self, key: ThreadKey, record: SummaryRecord, epoch: int) -> None:
        """Remember the summary served, with the deletion epoch of the call that found it."""
        self._in_use.put(key, (record, epoch))

    def held(self, key: ThreadKey, store: SummaryStore) -> SummaryRecord | None:
        """The summary this process served the thread last, unless the thread was deleted
        (through any SummaryStore of this process) since the call that found it started."""
        entry = self._in_use.get(key)
        if entry is None:
            return None
        record, epoch = entry
        if plumbing(store).deletion_epoch(key[1], key[0]) != epoch:
            self._in_use.pop(key)
            return None
        return record

    def forget_held(self, key: ThreadKey) -> None:
        """Drop the summary held for a thread: a person edited or revoked its summaries."""
        self._in_use.pop(key)

    # -- what people and agents changed (``Plumbing.thread_controls``) ---------------------

    def controls(self, key: ThreadKey) -> tuple[int, frozenset[str]] | None:
        """The thread's control version this process last saw, and its pins then."""
        return self._controls.get(key)

    def note_controls(self, key: ThreadKey, version: int, pins: frozenset[str]) -> None:
        self._controls.put(key, (version, pins))

    def controls_paused(self, now: float) -> bool:
        """Whether control reads are paused after a store failure (see ``pause_controls``)."""
        return now < self._controls_paused_until

    def pause_controls(self, now: float, seconds: float) -> None:
        """Skip control reads for a while: a store that is down would otherwise be asked on
        every passing call, each paying its connection timeout."""
        with self._lock:
            self._controls_paused_until = now + seconds

    def rescued(
        self, record: SummaryRecord, find: Callable[[], tuple[int, ...]]
    ) -> tuple[int, ...]:
        """A summary's rescued positions, found once per row (its prefix is stable)."""
        return self._rescued.get_or_make(record.id, find)

    def summary_message(
        self, record: SummaryRecord, recall_tool: str | None, cache_breakpoint: bool = False
    ) -> tuple[HumanMessage, int]:
        """The summary message of a stored row and its token count, built once per row and form.

        Callers that need only the count may leave ``cache_breakpoint`` out: both forms carry
        the same text, so the default counter gives them the same count.
        """

        def make() -> tuple[HumanMessage, int]:
            message = make_summary_message(
                record.summary, record.id, recall_tool, cache_breakpoint=cache_breakpoint
            )
            return message, self.counter([message])

        return self._summaries.get_or_make((record.id, recall_tool, cache_breakpoint), make)

    # -- the store's health -----------------------------------------------------------------------

    def note_store_failure(self, error: str) -> None:
        """Log a store outage once, not on every turn it lasts."""
        with self._lock:
            first, self._store_failure = self._store_failure is None, error
        if first:
            logger.warning("%s; compaction goes on without it until it recovers", error)

    def note_store_ok(self, store: SummaryStore) -> None:
        with self._lock:
            was, self._store_failure = self._store_failure, None
        if was is not None:
            logger.info("summary store %r works again", store)

    # -- the summarizer's context ---------------------------------------------------------------

    def learn_summarizer_usage(self, estimate: int, reported: int | None) -> None:
        """Calibrate our count of summary prompts against the summarizer's own."""
        if reported and estimate > 0:
            low, high = _SUMMARIZER_RATIO_BOUNDS
            ratio = min(max(reported / estimate, low), high)
            with self._lock:
                self._summarizer = replace(self._summarizer, ratio=ratio)

    def learn_summarizer_overflow(
        self, overflow: Overflow, estimate: int, max_summary_tokens: int
    ) -> None:
        """Take in what a prompt refused as too long says about the summarizer's window."""
        if overflow.prompt_tokens and estimate > 0:
            self.learn_summarizer_usage(estimate, overflow.prompt_tokens)
        with self._lock:
            limits = self._summarizer
            if overflow.window:
                limits = replace(limits, window=overflow.window)
            # Whatever the message says, the next prompt is smaller than the refused one.
            room = _window_limit(limits, max_summary_tokens)
            shrunk = int(estimate * 0.6)
            self._summarizer = replace(
                limits, limit=min(room, shrunk) if room is not None else shrunk
            )

    def transcript_capacity(
        self, trim: int | None, overhead: int, max_summary_tokens: int
    ) -> int | None:
        """Most transcript tokens one summary call may carry: ``trim``, or less when the
        summarizer is known to take less (its window, a refused prompt)."""
        limits = self._summarizer
        known = [
            x for x in (_window_limit(limits, max_summary_tokens), limits.limit) if x is not None
        ]
        if not known:
            return trim
        capacity = max(min(known) - overhead, _MIN_TRANSCRIPT_TOKENS)
        return capacity if trim is None else min(trim, capacity)


def _window_limit(limits: SummarizerLimits, max_summary_tokens: int) -> int | None:
    if limits.window is None:
        return None
    room = limits.window * _WINDOW_MARGIN - max_summary_tokens
    return int(room / (limits.ratio or 1.0))
