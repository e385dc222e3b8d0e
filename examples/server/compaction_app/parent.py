"""Graph ``parent``: a ``StateGraph`` whose model node reads the compacted input.

    START -> compaction -> model -> (tools -> compaction -> model)* -> END

- ``messages`` is the conversation (``add_messages``), checkpointed by the server;
- ``llm_input_messages`` and ``compaction`` are ``UntrackedValue`` keys, as in the
  compaction subgraph: written by it before every model call, never checkpointed;
- the model node reads ``llm_input_messages`` and falls back to ``messages`` when the key is
  absent (after an interrupt and resume), which is why compaction sits right before it;
- the compaction subgraph emits ``context_compacting`` / ``context_compacted`` custom events,
  which reach a client streaming with ``stream_mode="custom"`` and ``stream_subgraphs=True``.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.graph import START, StateGraph, add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from typing_extensions import TypedDict

from langgraph_compaction import CompactionConfig, CompactionReport, create_compaction_graph

from .settings import CONFIG, STORE, agent_model, summarizer
from .tools import TOOLS

__all__ = ["Input", "State", "build_parent", "graph"]


class Input(TypedDict):
    """What a client sends: new messages, appended to the conversation."""

    messages: Annotated[list[AnyMessage], add_messages]


class State(Input):
    """The graph's state: the conversation plus the two untracked compaction outputs."""

    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


def build_parent(config: CompactionConfig, name: str) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The parent graph over ``config``; ``review`` (the graph ``review``) builds it with review."""
    bound = agent_model.bind_tools(TOOLS)

    async def model(state: State) -> dict[str, list[AnyMessage]]:
        """Call the agent model on the compacted input (the whole conversation without one)."""
        reply = await bound.ainvoke(state.get("llm_input_messages") or state["messages"])
        return {"messages": [reply]}

    builder = StateGraph(State, input_schema=Input)
    builder.add_node(
        "compaction", create_compaction_graph(config, model=summarizer, store=STORE, tools=TOOLS)
    )
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_edge(START, "compaction")
    builder.add_edge("compaction", "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "compaction")
    return builder.compile(name=name)  # no checkpointer: the server provides its own


graph = build_parent(CONFIG, "parent")
