"""Pins and kept user messages (DESIGN 6.11): which messages stay verbatim, by pure rules.

A message is pinned when ``additional_kwargs["pinned"] is True`` or its id, as the store keeps it
(``storable``), was pinned with ``SummaryStore.pin_messages``. A pin holds its whole tool unit
(``content.messages.split_tool_units``): pinning an AI message with tool calls pins every result
after it, and pinning one result pins its caller and the other results of the batch, so the
tool-pair rule never needs an invented result.

Choices:
- Pinned units of the summary's prefix are rescued newest first within ``pin_budget`` tokens;
  a unit that does not fit is skipped (an older, smaller one may still fit), goes to the
  summary and is counted as over the budget. The whole prefix is looked at, not only what a
  summary evicts now, so a message pinned in the store after it was summarized comes back
  verbatim with the next summary, and an unpinned one is folded into it.
- Kept user messages (``keep_user_messages``) are the real user turns of the prefix, newest
  first within that many tokens, stopping at the first that does not fit (Codex's rule: the
  most recent stretch of what the user said, not a scattering of short turns). The latest user
  request is rescued anyway and is not counted; a pinned one is counted with the pins.
- The pruning layers judge a message's ``pinned`` flag when they first see it (an agent sets
  it when it makes the message); store pins come from outside the history, so the caches of
  those layers are keyed by the pin set (:func:`pins_digest`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Sequence
from itertools import repeat

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langgraph_compaction.content.messages import (
    caller_index,
    is_real_user_message,
    split_tool_units,
)
from langgraph_compaction.store import storable

__all__ = [
    "choose_pinned",
    "choose_user_messages",
    "count_pinned",
    "in_pinned_unit",
    "is_pinned",
    "pinned_units",
    "pins_digest",
    "unit_span",
    "user_messages",
]

Unit = tuple[int, int]
"""``(first, end)``: a tool unit's span of history indexes."""


def is_pinned(message: BaseMessage, pins: Collection[str]) -> bool:
    """Whether this message itself is pinned: by its ``pinned`` flag, or by id in the store."""
    if message.additional_kwargs.get("pinned") is True:
        return True
    return bool(pins) and message.id is not None and storable(message.id) in pins


def unit_span(messages: Sequence[BaseMessage], index: int) -> Unit:
    """The tool unit ``messages[index]`` belongs to (a plain message is a unit of its own)."""
    first = index
    if isinstance(messages[index], ToolMessage):
        caller = caller_index(messages, index)
        if caller < 0 or not isinstance(messages[caller], AIMessage):
            return index, index + 1
        first = caller
    caller_message = messages[first]
    if not isinstance(caller_message, AIMessage) or not caller_message.tool_calls:
        return index, index + 1
    end = first + 1
    while end < len(messages) and isinstance(messages[end], ToolMessage):
        end += 1
    return first, end


def in_pinned_unit(messages: Sequence[BaseMessage], index: int, pins: Collection[str]) -> bool:
    """Whether ``messages[index]`` is pinned, itself or through its tool unit."""
    first, end = unit_span(messages, index)
    return any(is_pinned(messages[i], pins) for i in range(first, end))


def pinned_units(
    messages: Sequence[BaseMessage], start: int, end: int, pins: Collection[str]
) -> list[Unit]:
    """The tool units within ``messages[start:end]`` holding a pinned message, oldest first.

    ``start`` must be where a unit begins (the leading system messages' end, a cutoff).
    """
    if not any(map(is_pinned, messages[start:end], repeat(pins))):  # the usual case
        return []
    found = []
    for first, unit_end in split_tool_units(messages, start):
        if unit_end > end:
            break
        if any(is_pinned(messages[i], pins) for i in range(first, unit_end)):
            found.append((first, unit_end))
    return found


def choose_pinned(
    units: Sequence[Unit], before: int, token: Callable[[int], int], budget: int
) -> list[Unit]:
    """The pinned units ending at or before ``before`` that stay verbatim: newest first
    within ``budget`` tokens, a unit that does not fit skipped."""
    chosen: list[Unit] = []
    total = 0
    for first, end in reversed(units):
        if end > before:
            continue
        tokens = sum(token(i) for i in range(first, end))
        if total + tokens > budget:
            continue
        chosen.append((first, end))
        total += tokens
    return chosen


def choose_user_messages(
    users: Sequence[int], before: int, token: Callable[[int], int], budget: int
) -> list[int]:
    """The user messages (indexes, oldest first) before ``before`` that stay verbatim:
    newest first within ``budget`` tokens, stopping at the first that does not fit."""
    chosen: list[int] = []
    total = 0
    for index in reversed(users):
        if index >= before:
            continue
        tokens = token(index)
        if total + tokens > budget:
            break
        chosen.append(index)
        total += tokens
    return chosen


def user_messages(messages: Sequence[BaseMessage], start: int, end: int) -> list[int]:
    """Indexes of the real user turns in ``messages[start:end]`` (not an injected summary)."""
    return [i for i in range(start, end) if is_real_user_message(messages[i])]


def count_pinned(
    messages: Sequence[BaseMessage],
    start: int,
    end: int,
    rescued: Collection[int],
    pins: Collection[str],
) -> tuple[int, int]:
    """Of the messages of pinned units in ``messages[start:end]`` (a summary's prefix), how
    many are ``rescued`` (kept verbatim) and how many went to the summary."""
    kept = over = 0
    for first, unit_end in pinned_units(messages, start, end, pins):
        for index in range(first, unit_end):
            if index in rescued:
                kept += 1
            else:
                over += 1
    return kept, over


def pins_digest(pins: Collection[str]) -> str:
    """A short, order-free digest of a pin set ("" for none): part of the pruning caches' keys."""
    if not pins:
        return ""
    joined = "\x00".join(sorted(pins)).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(joined, digest_size=8).hexdigest()
