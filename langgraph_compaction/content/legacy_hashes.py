"""The bytes of the prefix hashes earlier versions stored, so that their summaries keep matching.

Nothing new is hashed this way: these run only when a stored summary of such a format is
checked against a history, and their bytes must never change.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
from typing import Any

__all__ = ["legacy_digest", "v2_row_bytes"]


def v2_row_bytes(row: tuple[object, ...]) -> bytes:
    """A message's bytes in a ``v2:`` hash: its row pickled on its own (protocol 2, no memo),
    without the protocol's two-byte header and its stop opcode; ``repr:`` and the row's repr
    when pickle cannot write it."""
    try:
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=2)
        pickler.fast = True  # no memo: a repeated object is written again, not referenced
        pickler.dump(row)
        return buffer.getvalue()[2:-1]
    except Exception:  # not picklable, or self-referencing
        return b"repr:" + repr(row).encode("utf-8", "surrogatepass")


def legacy_digest(fields: dict[str, Any]) -> bytes:
    """A message's digest in the untagged chain (the first versions' format)."""
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
