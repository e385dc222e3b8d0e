"""Splitting what a summary evicts into summary calls: pure functions over token counts.

``trim_tokens_to_summarize`` bounds one call, never what is summarized, and
``max_summary_chunks`` bounds the calls: past it the longest messages are shortened (head and
tail kept) to a common cap, and what still does not fit goes into the last call, over the
trim bound. No evicted message goes unseen, and both concessions are counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from ._estimate import estimate_tokens
from ._messages import trim_middle
from ._tokens import TokenCounter

__all__ = ["ChunkPlan", "plan_chunks", "shorten_message", "shorten_text"]

_CHARS_PER_TOKEN = 4
_MARKER_CHARS = 48  # "\n\n[... N of M characters cut ...]\n\n"
_MIN_KEPT_CHARS = 32


@dataclass(frozen=True, slots=True)
class ChunkPlan:
    """The summary calls of one compaction, in order."""

    chunks: tuple[tuple[BaseMessage, ...], ...]
    shortened: int = 0
    """Messages shortened (head and tail kept) to fit ``max_summary_chunks`` calls."""
    over_trim: int = 0
    """Messages put into the last call beyond ``trim_tokens_to_summarize``, because even
    shortened they did not fit the calls allowed."""


def shorten_text(text: str, max_chars: int) -> str:
    """Keep the head and tail of ``text`` within about ``max_chars``, with a marker between."""
    limit = max(max_chars - _MARKER_CHARS, _MIN_KEPT_CHARS)
    if len(text) <= limit + _MARKER_CHARS:
        return text
    half = limit // 2
    return trim_middle(text, half, half)


def shorten_message(message: BaseMessage, max_tokens: int) -> BaseMessage:
    """The message with its text cut to about ``max_tokens`` (head and tail kept)."""
    text = message.text if not isinstance(message.content, str) else message.content
    shortened = shorten_text(text, max_tokens * _CHARS_PER_TOKEN)
    if shortened is text:
        return message
    return message.model_copy(update={"content": shortened})


def plan_chunks(
    messages: Sequence[BaseMessage],
    tokens: Sequence[int],
    trim: int | None,
    max_chunks: int,
    counter: TokenCounter = estimate_tokens,
) -> ChunkPlan:
    """Split evicted messages into at most ``max_chunks`` calls of at most ``trim`` tokens.

    When everything cannot fit, the longest messages are shortened to a common cap found by
    water-filling; none is dropped. When even that is not enough (thousands of tiny
    messages), the remainder joins the last call: ``max_chunks`` is a hard cap.
    """
    if not messages:
        return ChunkPlan(())
    if trim is None:
        return ChunkPlan((tuple(messages),))

    def shortened_to(cap: int) -> list[tuple[BaseMessage, int]]:
        sized = []
        for message, size in zip(messages, tokens, strict=True):
            if size > cap:
                message = shorten_message(message, cap)
                size = counter([message])
            sized.append((message, size))
        return sized

    sized = shortened_to(trim)  # one message never exceeds a call on its own
    if _packed_chunks([t for _, t in sized], trim) > max_chunks:
        low, high = 1, trim
        while low < high:  # the largest cap at which everything fits the calls allowed
            middle = (low + high + 1) // 2
            if _packed_chunks([t for _, t in shortened_to(middle)], trim) <= max_chunks:
                low = middle
            else:
                high = middle - 1
        sized = shortened_to(low)
    shortened = sum(
        1 for (m, _), original in zip(sized, messages, strict=True) if m is not original
    )
    chunks: list[list[BaseMessage]] = []
    over_trim = 0
    used = trim + 1
    for message, size in sized:
        if used + size > trim:
            if len(chunks) < max_chunks:
                chunks.append([])
                used = 0
            else:
                over_trim += 1
        chunks[-1].append(message)
        used += size
    return ChunkPlan(tuple(tuple(c) for c in chunks), shortened, over_trim)


def _packed_chunks(sizes: Sequence[int], trim: int) -> int:
    """How many calls greedy packing needs (a message over ``trim`` gets a call of its own)."""
    count, used = 0, trim + 1
    for size in sizes:
        if used + size > trim:
            count += 1
            used = 0
        used += size
    return count
