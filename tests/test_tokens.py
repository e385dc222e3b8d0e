"""The message digest behind every stored prefix hash: its bytes must never change.

Stored summaries are found by a chained hash of their prefix's message digests, so the digest
of a message is part of the store's format. Its fast path writes the JSON out by hand; it must
hash exactly the bytes of ``json.dumps([...], sort_keys=True, ensure_ascii=False)``.
"""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_compaction._tokens import _digest

TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
IDS = st.none() | TEXT


def _reference(message: BaseMessage) -> bytes:
    calls = getattr(message, "tool_calls", None) or []
    payload = json.dumps(
        [
            message.type,
            message.id,
            message.name,
            getattr(message, "tool_call_id", None),
            message.content,
            [[c.get("name"), c.get("args"), c.get("id")] for c in calls],
        ],
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    return hashlib.blake2b(payload.encode(), digest_size=16).digest()


@settings(max_examples=300, deadline=None)
@given(content=TEXT, message_id=IDS, name=IDS, kind=st.sampled_from(["human", "ai", "system"]))
def test_the_fast_path_hashes_the_bytes_json_dumps_gives(
    content: str, message_id: str | None, name: str | None, kind: str
) -> None:
    cls = {"human": HumanMessage, "ai": AIMessage, "system": SystemMessage}[kind]
    message = cls(content=content, id=message_id, name=name)
    assert _digest(message) == _reference(message)


@settings(max_examples=100, deadline=None)
@given(content=TEXT, call_id=TEXT, args=st.dictionaries(TEXT, st.integers() | TEXT, max_size=3))
def test_tool_calls_results_and_blocks_hash_as_before(
    content: str, call_id: str, args: dict[str, object]
) -> None:
    messages: list[BaseMessage] = [
        AIMessage(content, tool_calls=[{"name": "f", "args": args, "id": call_id}], id="a"),
        ToolMessage(content, tool_call_id=call_id, name="f", id="t"),
        HumanMessage([{"type": "text", "text": content}], id="h"),
    ]
    for message in messages:
        assert _digest(message) == _reference(message)
