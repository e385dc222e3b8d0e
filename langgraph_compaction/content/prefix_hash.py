"""The prefix hash a stored summary is matched by (DESIGN 6.4), and the formats kept readable.

A prefix hash (tag ``v3:``) is one blake2b (16 bytes) over each message's row, ``[type, id,
name, tool_call_id, content, tool_calls]``, written as canonical JSON (keys sorted, no
whitespace, ASCII with ``\\u`` escapes) and followed by a comma, message after message. The
bytes of a message depend on its values only: a tuple is written as the list a checkpointer
hands back, a dict's key order and a set's iteration order (which differs between processes)
do not count. A value JSON cannot write is written as its ``repr`` (a set: its items, sorted);
a row that still cannot be written (a self-referencing value) is ``repr:<length>:<repr>,``.
Since the stream is message after message, a growing thread extends the hasher with its new
messages only: the hasher is kept where the last hash ended and after every 64 messages.

Summaries stored by earlier versions keep matching, checked only when such a summary is
(``legacy_hashes``): ``v2:`` hashes (each row pickled) and untagged ones (a digest chain).
"""

from __future__ import annotations

import hashlib
import json
import operator
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from langgraph_compaction.content.legacy_hashes import legacy_digest, v2_row_bytes

__all__ = ["HASH_TAG", "V2_TAG", "Fields", "PrefixHashes", "message_rows", "run_bytes"]

HASH_TAG = "v3:"
"""Prefix of the prefix hashes this version stores."""
V2_TAG = "v2:"
"""The tag of the pickled rows' hashes (stored by the versions before ``HASH_TAG``)."""

Fields = dict[str, Any]
"""A message's fields, as pydantic keeps them in its ``__dict__``."""

_BLOCK = 64
_MAX_HASHES = 64
_TYPE, _ID, _NAME, _CONTENT = map(operator.itemgetter, ("type", "id", "name", "content"))
Row = tuple[object, ...]


def message_rows(fields: Sequence[Fields]) -> list[Row]:
    """What the hash covers of each message (built in C: no Python frame per message)."""
    return list(
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


def _jsonable(value: object) -> object:
    """What JSON cannot write: a set as its items in a fixed order, anything else its repr."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=_row_text)
    return repr(value)


_encode = json.JSONEncoder(
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=True,
    default=_jsonable,
    check_circular=False,  # a tenth faster; a cycle then ends in RecursionError, caught
).encode


def _row_text(value: object) -> str:
    try:
        return _encode(value)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _row_bytes(row: Row) -> bytes:
    try:
        return _encode(row).encode("ascii") + b","
    except (TypeError, ValueError, RecursionError):  # unsortable keys, a cycle
        text = repr(row).encode("utf-8", "surrogatepass")
        return b"repr:%d:%s," % (len(text), text)


def run_bytes(fields: Sequence[Fields]) -> bytes:
    """What a run of messages adds to a prefix hash: each row's JSON and a comma.

    The run is written as one JSON array (one call into C), whose brackets are dropped and a
    comma added: JSON writes an array as its items joined by the separator, so these are the
    bytes of the rows written one by one. A run with a row JSON cannot write goes row by row.
    """
    rows = message_rows(fields)
    if not rows:
        return b""
    try:
        return _encode(rows)[1:-1].encode("ascii") + b","
    except (TypeError, ValueError, RecursionError):
        return b"".join(map(_row_bytes, rows))


@dataclass(eq=False)
class PrefixHashes:
    """A thread's prefix hashes and the hasher states that extend them; thread-safe."""

    states: list[hashlib.blake2b] = field(default_factory=lambda: [hashlib.blake2b(digest_size=16)])
    """The hasher after every ``_BLOCK`` messages (never updated in place)."""
    frontier: tuple[int, hashlib.blake2b] = (0, hashlib.blake2b(digest_size=16))
    """Where the furthest hash ended, and the hasher there (never updated in place)."""
    hashes: dict[int, str] = field(default_factory=dict)
    legacy: list[bytes] = field(default_factory=lambda: [b""])
    """The untagged chain, ``legacy[i]`` for ``messages[:i]``; filled on demand."""
    v2: dict[int, str] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def digest(self, fields: Sequence[Fields], end: int) -> str:
        """Hash of the first ``end`` messages: from the nearest hasher state at or before it."""
        known = self.hashes.get(end)
        if known is not None:
            return known
        with self.lock:
            reached, state = self.frontier
            if end < reached:  # an earlier prefix: from the block it falls in
                reached = end - end % _BLOCK
                state = self.states[reached // _BLOCK]
            state = state.copy()
            while reached < end:
                stop = min(end, reached - reached % _BLOCK + _BLOCK)
                state.update(run_bytes(fields[reached:stop]))
                reached = stop
                if reached % _BLOCK == 0 and reached // _BLOCK == len(self.states):
                    self.states.append(state.copy())
            if end > self.frontier[0]:
                self.frontier = (end, state.copy())
            digest = HASH_TAG + state.hexdigest()
            if len(self.hashes) >= _MAX_HASHES:
                self.hashes.clear()
            self.hashes[end] = digest
        return digest

    def matches(self, fields: Sequence[Fields], end: int, stored: str) -> bool:
        """Whether ``stored``, a prefix hash of any format, is the first ``end`` messages'."""
        if stored.startswith(HASH_TAG):
            return self.digest(fields, end) == stored
        if stored.startswith(V2_TAG):
            return self.v2_digest(fields, end) == stored
        return self.legacy_digest(fields, end) == stored

    def v2_digest(self, fields: Sequence[Fields], end: int) -> str:
        """The ``v2:`` hash of the first ``end`` messages (a summary stored before ``v3:``)."""
        with self.lock:
            if end not in self.v2:
                hasher = hashlib.blake2b(digest_size=16)
                hasher.update(b"".join(map(v2_row_bytes, message_rows(fields[:end]))))
                self.v2[end] = V2_TAG + hasher.hexdigest()
            return self.v2[end]

    def legacy_digest(self, fields: Sequence[Fields], end: int) -> str:
        """The untagged hash of the first ``end`` messages (the oldest stored summaries)."""
        with self.lock:
            chain = self.legacy
            for index in range(len(chain) - 1, end):
                digest = legacy_digest(fields[index])
                chain.append(hashlib.blake2b(chain[index] + digest, digest_size=16).digest())
            return chain[end].hex()

    def kept(self, same: int) -> PrefixHashes:
        """What still holds for a history whose first ``same`` messages are unchanged."""
        with self.lock:
            states = self.states[: same // _BLOCK + 1]
            frontier = self.frontier
            if frontier[0] > same:  # it ended past the change: back to the last whole block
                frontier = ((len(states) - 1) * _BLOCK, states[-1])
            return PrefixHashes(
                states,
                frontier,
                _below(self.hashes, same),
                self.legacy[: same + 1],
                _below(self.v2, same),
            )


def _below(cache: Mapping[int, Any], limit: int) -> dict[int, Any]:
    return {end: value for end, value in cache.items() if end <= limit}
