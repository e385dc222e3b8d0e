"""Token counting: langchain-core's approximate counter, cached per message.

The history arrives as fresh objects on every turn (it is loaded from a checkpointer), so
the cache cannot key on object identity. Instead each thread keeps the id, content and
tool-call lists of the last history it saw; comparing lists runs in C, and only messages
past the first difference are counted and hashed again. A steady-state call therefore
counts and hashes only new messages; what it still does per message is read three
attributes and compare them in C. An edit is recognised by its id, content or tool calls (an
edit of a call's arguments alone, as a human-in-the-loop review makes, counts); the stored
prefix hash covers all three, digested once per message.
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool

__all__ = [
    "HistoryIndex",
    "HistoryScan",
    "TokenCounter",
    "calibrated",
    "count_fixed_tokens",
]

TokenCounter = Callable[[Sequence[BaseMessage]], int]
"""Any callable that counts the tokens of a list of messages (LangChain's convention)."""

CALIBRATION_BOUNDS = (0.5, 2.0)
_KEY = operator.itemgetter("id", "content")
_TOOL_CALLS = operator.methodcaller("get", "tool_calls")
_HASHING = threading.Lock()
_MAX_THREADS = 1024


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


_ENCODE = json.encoder.encode_basestring  # json.dumps's own string encoder (C), unescaped


def _text(value: object) -> str:
    return "null" if value is None else _ENCODE(value)  # type: ignore[arg-type]


def _digest(message: BaseMessage) -> bytes:
    """Stable digest of everything that makes a message what it is.

    The bytes hashed are ``json.dumps([type, id, name, tool_call_id, content, calls],
    sort_keys=True, ensure_ascii=False)``: stored prefix hashes depend on them. The common
    case (text content, no tool calls, string or absent ids) is written out directly, to the
    same bytes, since the general encoder costs more than the hash.
    """
    own = vars(message)  # not getattr: a missing field costs pydantic an exception
    tool_calls = own.get("tool_calls") or []
    fields = (own["type"], own["id"], own["name"], own.get("tool_call_id"), own["content"])
    if not tool_calls and all(value is None or type(value) is str for value in fields):
        payload = f"[{', '.join(map(_text, fields))}, []]"
    else:
        payload = json.dumps(
            [*fields, [[c.get("name"), c.get("args"), c.get("id")] for c in tool_calls]],
            sort_keys=True,
            default=str,
            ensure_ascii=False,
        )
    return hashlib.blake2b(payload.encode(), digest_size=16).digest()


@dataclass
class HistoryScan:
    """Per-message token counts and prefix hashes of one history, shared across calls."""

    keys: list[tuple[str | None, Any]]
    """Each message's ``(id, content)``: what the next call compares."""
    tokens: list[int]
    cumulative: list[int] = field(default_factory=lambda: [0])
    """``cumulative[i]`` is the token count of ``messages[:i]``."""
    hashes: list[bytes] = field(default_factory=lambda: [b""])
    """``hashes[i]`` is the chained hash of ``messages[:i]``, filled lazily."""
    messages: Sequence[BaseMessage] = ()
    calls: list[Any] = field(default_factory=list)
    """Each message's tool calls (None for messages that cannot make any)."""

    def tokens_between(self, start: int, end: int) -> int:
        return self.cumulative[end] - self.cumulative[start]

    def prefix_hash(self, end: int) -> str:
        """Hash of ``messages[:end]``: ids and contents, so an edit changes it."""
        hashes = self.hashes
        if len(hashes) <= end:
            with _HASHING:  # a background summary may extend the same chain
                for index in range(len(hashes) - 1, end):
                    chained = hashlib.blake2b(hashes[index], digest_size=16)
                    chained.update(_digest(self.messages[index]))
                    hashes.append(chained.digest())
        return hashes[end].hex()


class HistoryIndex:
    """Cache of the last scan per thread; thread-safe, bounded to the most recent threads."""

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter: TokenCounter = counter or count_tokens_approximately
        self._scans: OrderedDict[tuple[str, str], HistoryScan] = OrderedDict()
        self._lock = threading.Lock()

    def scan(self, key: tuple[str, str], messages: Sequence[BaseMessage]) -> HistoryScan:
        """Scan a history, reusing what is unchanged since this thread's last scan."""
        # In C (map, itemgetter over each message's __dict__, where pydantic keeps its fields):
        # touching every message once is most of a steady-state call's cost.
        fields = list(map(vars, messages))
        keys = list(map(_KEY, fields))
        calls = list(map(_TOOL_CALLS, fields))
        with self._lock:
            previous = self._scans.get(key)
        same = _common_prefix(previous, keys, calls) if previous else 0
        if previous is not None and same == len(previous.keys):
            tokens = previous.tokens
            cumulative = previous.cumulative
            hashes = previous.hashes
        else:
            tokens = previous.tokens[:same] if previous else []
            cumulative = previous.cumulative[: same + 1] if previous else [0]
            hashes = previous.hashes[: same + 1] if previous else [b""]
        counter = self.counter
        running = cumulative[-1]
        for message in messages[len(tokens) :]:
            count = counter([message])
            tokens.append(count)
            running += count
            cumulative.append(running)
        scan = HistoryScan(keys, tokens, cumulative, hashes, messages, calls)
        with self._lock:
            self._scans[key] = scan
            self._scans.move_to_end(key)
            while len(self._scans) > _MAX_THREADS:
                self._scans.popitem(last=False)
        return scan


def _common_prefix(
    previous: HistoryScan, keys: list[tuple[str | None, Any]], calls: list[Any]
) -> int:
    """Length of the prefix the previous scan shares with this history."""
    size = min(len(previous.keys), len(keys))
    if size == len(previous.keys):  # the usual case: the history grew by appending
        if previous.keys == keys[:size] and previous.calls == calls[:size]:
            return size
    elif previous.keys[:size] == keys and previous.calls[:size] == calls:
        return size
    for index in range(size):
        if previous.keys[index] != keys[index] or previous.calls[index] != calls[index]:
            return index
    return size
