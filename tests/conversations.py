"""Synthetic conversations for the pipeline tests: chat turns, tool batches, skill reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    MessageLikeRepresentation,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.state import CompiledStateGraph

from langgraph_compaction.pipeline.state import CompactionInput, CompactionOutput, CompactionState

__all__ = ["CompactionGraph", "chat", "graph_input", "skill_read", "tool_batch"]

CompactionGraph = CompiledStateGraph[CompactionState, None, CompactionInput, CompactionOutput]
"""What ``create_compaction_graph`` returns."""


def graph_input(messages: Sequence[MessageLikeRepresentation]) -> CompactionInput:
    """The compaction graph's input for ``messages``, passed on as they are (not copied).

    The state declares ``list[AnyMessage]``, langgraph's convention, and a ``list[BaseMessage]``
    is not one to a type checker (lists are invariant, and ``AnyMessage`` is a union of the
    concrete classes); at run time the graph takes any message-like (objects, dicts, tuples)
    and coerces it, which is what the tests hand it.
    """
    return {"messages": cast(list[AnyMessage], messages)}


def chat(
    turns: int, *, size: int = 200, system: bool = True, prefix: str = ""
) -> list[BaseMessage]:
    """``turns`` user/assistant pairs of about ``size`` characters each, with stable ids."""
    messages: list[BaseMessage] = [SystemMessage("You are helpful.", id="sys")] if system else []
    for turn in range(turns):
        messages.append(
            HumanMessage(f"{prefix}question {turn} " + "q" * size, id=f"{prefix}h{turn}")
        )
        messages.append(AIMessage(f"{prefix}answer {turn} " + "a" * size, id=f"{prefix}a{turn}"))
    return messages


def tool_batch(
    tag: str,
    calls: int,
    *,
    size: int = 300,
    call_ids: list[str] | None = None,
    name: str = "search",
) -> list[BaseMessage]:
    """An AI message with ``calls`` parallel tool calls followed by their results."""
    ids = call_ids or [f"{tag}-call{i}" for i in range(calls)]
    ai = AIMessage(
        "",
        id=f"{tag}-ai",
        tool_calls=[
            {"name": name, "args": {"query": f"{tag} {i}"}, "id": ids[i], "type": "tool_call"}
            for i in range(calls)
        ],
    )
    results: list[BaseMessage] = [
        ToolMessage(
            f"result {tag} {i} " + "r" * size, tool_call_id=ids[i], id=f"{tag}-r{i}", name=name
        )
        for i in range(calls)
    ]
    return [ai, *results]


def skill_read(
    tag: str, path: str, *, size: int = 400, other_call: bool = False
) -> list[BaseMessage]:
    """A read of a skill file (optionally beside an unrelated call in the same batch)."""
    calls = [
        {"name": "read_file", "args": {"path": path}, "id": f"{tag}-skill", "type": "tool_call"}
    ]
    if other_call:
        calls.append(
            {"name": "search", "args": {"query": tag}, "id": f"{tag}-other", "type": "tool_call"}
        )
    ai = AIMessage("", id=f"{tag}-ai", tool_calls=calls)
    results: list[BaseMessage] = [
        ToolMessage(
            f"SKILL {path} " + "s" * size,
            tool_call_id=f"{tag}-skill",
            id=f"{tag}-skill-r",
            name="read_file",
        )
    ]
    if other_call:
        results.append(
            ToolMessage(
                f"other {tag} " + "o" * size,
                tool_call_id=f"{tag}-other",
                id=f"{tag}-other-r",
                name="search",
            )
        )
    return [ai, *results]
