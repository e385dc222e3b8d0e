"""Records a compiled graph keeps between calls, below the modules that compute them.

:class:`OldMedia` is what ``pruning.old_media`` derives of a history's media, and
:class:`Overflow` what a refused summary prompt told of the summarizer's window
(``summary.model_call``), :class:`LastInput` the model input a thread's last call sent (a
conversation summary call extends it, DESIGN 6.15); the graph's memory (:mod:`.memory`) holds
them per thread or model.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

__all__ = ["LastInput", "MediaCopy", "OldMedia", "Overflow"]


@dataclass(frozen=True, slots=True)
class LastInput:
    """The model input a thread's last call sent, exactly (shortened and pruned copies too)."""

    messages: tuple[BaseMessage, ...]
    history: int
    """Length of the history it was built from."""
    last_id: str | None
    """Id of that history's last message: a later history extends it when it holds it there."""
    summary_id: str | None
    """The summary it carried (None: none)."""


@dataclass(frozen=True, slots=True)
class MediaCopy:
    """The model input copy of one message with its media replaced."""

    message: BaseMessage
    tokens: int
    """What the copy counts."""
    saving: int
    """What the original counts beyond the copy."""
    blocks: int
    """Media blocks replaced."""


@dataclass(frozen=True, slots=True)
class OldMedia:
    """Which messages of a history carry old media, and their copies (an immutable snapshot).

    Every figure of a prefix ``messages[:end]`` depends on that prefix alone (``cutoff_at``,
    ``saved_between``), which lets the pruning epochs find their crossings with the copies
    counted.
    """

    keep: int
    """``media_keep_last`` it was derived for."""
    lead: int
    """Leading system messages (never touched)."""
    checked: int
    """Length of the history this was derived over."""
    digest: str
    """Prefix hash of ``messages[:checked]``: it is extended only on that history."""
    media: tuple[int, ...] = ()
    """Indexes of the messages after the leading system ones that hold a media block."""
    users: tuple[int, ...] = ()
    """Indexes of the real user messages."""
    copies: Mapping[int, MediaCopy] = field(default_factory=dict)
    """The messages of ``media`` before :attr:`cutoff`, with their media replaced."""
    young: Mapping[int, tuple[BaseMessage, int]] = field(default_factory=dict)
    """The other messages of ``media``: their copies and blocks replaced, made when first seen
    (so each block is read once), counted when they become old."""
    running: tuple[int, ...] = (0,)
    """Running sum of the copies' savings, in the order of ``media``."""
    pins: frozenset[str] = frozenset()
    """The store pins it was derived under (pinned messages keep their media)."""

    def cutoff_at(self, end: int) -> int:
        """Media of ``messages[:end]`` before this index are old (in that prefix)."""
        if self.keep == 0:
            return end
        turns = bisect_left(self.users, end)
        return self.users[turns - self.keep] if turns >= self.keep else 0

    @property
    def cutoff(self) -> int:
        return self.cutoff_at(self.checked)

    def saved_between(self, start: int, cutoff: int, skip: Mapping[int, object]) -> int:
        """Tokens the copies in ``[start, cutoff)`` save, but for the indexes in ``skip``.

        ``cutoff`` is at most :attr:`cutoff` (the copies exist up to there).
        """
        media, copies = self.media, self.copies
        low, high = bisect_left(media, start), bisect_left(media, cutoff)
        total = self.running[high] - self.running[low] if high > low else 0
        for index in skip:
            if start <= index < cutoff and index in copies:
                total -= copies[index].saving
        return total

    def saved(self, start: int, skip: Mapping[int, object]) -> int:
        """Tokens the copies at or after ``start`` save, but for the indexes in ``skip``."""
        return self.saved_between(start, self.cutoff, skip)

    def saving_at(self, index: int, end: int) -> int:
        """What ``messages[index]``'s copy saves in the prefix ``messages[:end]`` (0: none)."""
        copy = self.copies.get(index)
        return copy.saving if copy is not None and index < self.cutoff_at(end) else 0

    def breaks(self, low: int, high: int) -> list[int]:
        """The prefix ends in ``(low, high)`` where ``cutoff_at`` may move (a prefix of ends
        between two of them has one set of old media)."""
        marks = self.media if self.keep == 0 else self.users
        first = bisect_left(marks, low)  # a mark m moves the cutoff at end m + 1
        return [m + 1 for m in marks[first : bisect_left(marks, high - 1)]]


@dataclass(frozen=True, slots=True)
class Overflow:
    """What a refused prompt tells about the summarizer's window, when its message says."""

    window: int | None
    prompt_tokens: int | None
    """Tokens of the refused prompt as the summarizer counted them."""
