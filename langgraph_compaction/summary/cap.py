"""The summary cap: a reply well over ``max_summary_tokens`` is cut before it is stored.

The summary call asks the model for at most ``max_summary_tokens``, but not every server
honours the bound, and a custom compactor has none. A stored summary is sent on every later
call, so one too large costs every turn after it. A reply over the cap by more than
:data:`CAP_SLACK` (counted with the pipeline's counter) is cut to the cap where a line or a
sentence ends (:func:`sentence_ends`); failing that, where a word ends; failing that, anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import HumanMessage

from langgraph_compaction.content.tokens import TokenCounter

__all__ = ["CAP_SLACK", "cap_summary", "sentence_ends"]

CAP_SLACK = 0.1
"""A reply up to this share over the cap is kept whole: a count is an estimate."""

_SENTENCE_ENDS = re.compile(
    r"\n|[.!?][\"')\]\u2019\u201d]*(?=\s)|[.!?]$"  # Latin: a space or the end follows
    r"|[\u3002\uff01\uff1f\uff0e\uff61][\u300d\u300f\u3011\uff09\u201d\u2019)]*"  # CJK
    # Devanagari danda, Arabic question mark, Urdu full stop, Armenian, Ethiopic, Myanmar
    r"|[\u0964\u0965\u061f\u06d4\u0589\u1362\u104b]",
    re.MULTILINE,
)
"""Where a line or a sentence ends (the cut keeps what comes before ``\\n``)."""
_WORD_ENDS = re.compile(r"\S(?=\s)")


def sentence_ends(text: str) -> list[int]:
    """Where ``text`` may end after a complete sentence or line, ascending.

    A sentence ends at ``.``, ``!`` or ``?`` followed by a space or the end of the text (with
    any closing quote or bracket), at the CJK full stop and the full-width ``!`` and ``?``, and
    at the end marks of other scripts (the danda, the Arabic question mark and the Urdu full
    stop); a line ends before its ``\\n``.
    """
    return _positions(_SENTENCE_ENDS, text)


def _positions(ends: re.Pattern[str], text: str) -> list[int]:
    return [m.end() if m.group() != "\n" else m.start() for m in ends.finditer(text)]


def cap_summary(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """``text``, or its longest head that ends a line or sentence within ``max_tokens``.

    Returns ``text`` itself when it is at most :data:`CAP_SLACK` over the cap.
    """
    if _tokens(text, counter) <= max_tokens * (1 + CAP_SLACK):
        return text
    for ends in (_SENTENCE_ENDS, _WORD_ENDS):
        head = _longest_head(text, _positions(ends, text), max_tokens, counter)
        if head:
            return head
    anywhere = _longest_head(text, list(range(1, len(text))), max_tokens, counter)
    # A cap below the counter's own overhead per message fits nothing: never store blank text.
    return anywhere or text[: max(max_tokens, 1)].strip() or text


def _longest_head(
    text: str, positions: Sequence[int], max_tokens: int, counter: TokenCounter
) -> str:
    """The longest ``text[:p].rstrip()`` within ``max_tokens`` over ``positions`` (ascending)."""
    best, low, high = "", 0, len(positions) - 1
    while low <= high:  # the count grows with the head: search the positions by halves
        middle = (low + high) // 2
        head = text[: positions[middle]].rstrip()
        if head and _tokens(head, counter) <= max_tokens:
            best, low = head, middle + 1
        else:
            high = middle - 1
    return best


def _tokens(text: str, counter: TokenCounter) -> int:
    return counter([HumanMessage(content=text)])
