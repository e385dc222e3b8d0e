"""Splitting what a summary evicts into summary calls: pure functions over token counts.

A call is sized by what the summarizer reads: each message's transcript, where a media block
is one reference line (``source_tokens`` still reports what the model pays for the messages).
``trim_tokens_to_summarize`` bounds one call, never what is summarized, and
``max_summary_chunks`` bounds the calls: past it the longest messages are shortened (the head
and tail of their text kept) to a common cap, and what still does not fit goes into the last
call, over the trim bound. No evicted message goes unseen, and both concessions are counted.
Shortening cuts text only: media, tool calls, ids and names stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from langgraph_compaction.content.estimate import estimate_tokens, message_tokens
from langgraph_compaction.content.messages import trim_middle
from langgraph_compaction.content.tokens import TokenCounter
from langgraph_compaction.summary.prompts import render_transcript

__all__ = [
    "ChunkPlan",
    "Measure",
    "plan_chunks",
    "shorten_message",
    "shorten_text",
    "transcript_tokens",
]

Measure = Callable[[BaseMessage], int]
"""The tokens of one message, by some rule (what the model pays, what a transcript takes)."""

_MARKER_CHARS = 48  # "\n\n[... N of M characters cut ...]\n\n"
_MIN_KEPT_CHARS = 32
_SEPARATOR = "\n\n"  # between two messages of a transcript
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
"""Blocks whose text is cut: those the transcript reads as text (``summary.prompts``)."""


@dataclass(frozen=True, slots=True)
class ChunkPlan:
    """The summary calls of one compaction, in order."""

    chunks: tuple[tuple[BaseMessage, ...], ...]
    shortened: int = 0
    """Messages shortened (head and tail kept) to fit ``max_summary_chunks`` calls."""
    over_trim: int = 0
    """Messages put into the last call beyond ``trim_tokens_to_summarize``, because even
    shortened they did not fit the calls allowed."""


def transcript_tokens(messages: Sequence[BaseMessage], counter: TokenCounter) -> list[int]:
    """What each message adds to a summary call's transcript, in ``counter``'s tokens."""
    return list(map(_transcript_measure(counter), messages))


def _transcript_measure(counter: TokenCounter) -> Measure:
    """A message's transcript lines and the blank line after them, counted as part of the one
    prompt message they are sent in (the counter's overhead for a message taken off)."""
    empty = counter([HumanMessage(content="")])

    def measure(message: BaseMessage) -> int:
        text = render_transcript([message]) + _SEPARATOR
        return max(counter([HumanMessage(content=text)]) - empty, 1)

    return measure


def shorten_text(text: str, max_chars: int) -> str:
    """Keep the head and tail of ``text`` within about ``max_chars``, with a marker between."""
    cut = _cut_middle([text], max_chars)
    return text if cut is None else cut[0]


def shorten_message(
    message: BaseMessage, max_tokens: int, measure: Measure = message_tokens
) -> BaseMessage:
    """The message with its text cut (head and tail kept) so that it measures about
    ``max_tokens``; every other block, the tool calls, the id and the name stay as they are.

    The cut follows what the text costs a character by ``measure``, so CJK text (about a
    token a character) is cut to the tokens asked as Latin text is.
    """
    size = measure(message)
    if size <= max_tokens:
        return message
    cut = _TextCut.of(message, size, measure)
    return message if cut is None else cut.to(max_tokens)


@dataclass(frozen=True, slots=True)
class _TextCut:
    """A message's text and what it costs, measured once for any number of cuts."""

    message: BaseMessage
    pieces: tuple[str, ...]
    chars: int
    size: int
    """The whole message, by the measure."""
    bare: int
    """The message without its text (media, tool calls, role): what no cut removes."""

    @classmethod
    def of(cls, message: BaseMessage, size: int, measure: Measure) -> _TextCut | None:
        """None when there is no text, or its text costs nothing by ``measure``."""
        pieces = tuple(_text_pieces(message.content))
        chars = sum(map(len, pieces))
        if not chars:
            return None
        bare = measure(_with_text(message, [""] * len(pieces)))
        return cls(message, pieces, chars, size, bare) if size > bare else None

    def to(self, max_tokens: int) -> BaseMessage:
        """The message cut to about ``max_tokens`` (itself when it fits already)."""
        if self.size <= max_tokens:
            return self.message
        max_chars = self.chars * max(max_tokens - self.bare, 0) // (self.size - self.bare)
        cut = _cut_middle(self.pieces, max_chars)
        return self.message if cut is None else _with_text(self.message, cut)


def _text_pieces(content: str | list[str | dict[str, Any]]) -> list[str]:
    """The text of the content, in order: the string, or its text blocks and bare strings."""
    if isinstance(content, str):
        return [content]
    return [text for block in content if (text := _block_text(block)) is not None]


def _block_text(block: object) -> str | None:
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type") in _TEXT_BLOCKS:
        text = block.get("text")
        return text if isinstance(text, str) else None
    return None


def _with_text(message: BaseMessage, pieces: Sequence[str]) -> BaseMessage:
    """A copy with its text pieces replaced in place; a text block left empty is dropped."""
    if isinstance(message.content, str):
        return message.model_copy(update={"content": pieces[0]})
    texts = iter(pieces)
    content: list[str | dict[str, Any]] = []
    for block in message.content:
        if _block_text(block) is None:
            content.append(block)
        elif text := next(texts):
            content.append(text if isinstance(block, str) else {**block, "text": text})
    return message.model_copy(update={"content": content})


def _cut_middle(pieces: Sequence[str], max_chars: int) -> list[str] | None:
    """The pieces with the middle of their joined text replaced by a marker (in the piece
    where the cut starts), or None when they already fit ``max_chars``."""
    total = sum(map(len, pieces))
    limit = max(max_chars - _MARKER_CHARS, _MIN_KEPT_CHARS)
    if total <= limit + _MARKER_CHARS:
        return None
    half = limit // 2
    if len(pieces) == 1:
        return [trim_middle(pieces[0], half, half)]
    joined = trim_middle("".join(pieces), half, half)
    marker = joined[half : len(joined) - half]
    start, end = half, total - half
    cut, position = [], 0
    for piece in pieces:
        first, position = position, position + len(piece)
        kept = piece[: max(min(position, start) - first, 0)]
        if first <= start < position:
            kept += marker
        if position > end:
            kept += piece[max(end - first, 0) :]
        cut.append(kept)
    return cut


def plan_chunks(
    messages: Sequence[BaseMessage],
    tokens: Sequence[int],
    trim: int | None,
    max_chunks: int,
    counter: TokenCounter = estimate_tokens,
) -> ChunkPlan:
    """Split evicted messages into at most ``max_chunks`` calls of at most ``trim`` tokens.

    ``tokens``: what each message adds to a call's transcript (:func:`transcript_tokens`
    with ``counter``), which also measures the shortened ones. When everything cannot fit,
    the longest messages are shortened to a common cap found by water-filling; none is
    dropped. When even that is not enough (thousands of tiny messages), the remainder joins
    the last call: ``max_chunks`` is a hard cap.
    """
    if not messages:
        return ChunkPlan(())
    if trim is None:
        return ChunkPlan((tuple(messages),))
    measure = _transcript_measure(counter)
    cuts: dict[int, _TextCut | None] = {}  # measured once across the search below

    def shortened_to(cap: int) -> list[tuple[BaseMessage, int]]:
        sized = []
        for index, (message, size) in enumerate(zip(messages, tokens, strict=True)):
            if size > cap:
                if index not in cuts:
                    cuts[index] = _TextCut.of(message, size, measure)
                cut = cuts[index]
                short = message if cut is None else cut.to(cap)
                if short is not message:
                    message, size = short, measure(short)
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
