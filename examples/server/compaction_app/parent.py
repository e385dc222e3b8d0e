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

from typing import Annotated

from langchain_core.messages import AnyMessage
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.graph import START, StateGraph, add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from typing_extensions import TypedDict

from langgraph_compaction import CompactionReport, create_compaction_graph

from .settings import CONFIG, STORE, agent_model, summarizer
from .tools import TOOLS

__all__ = ["Input", "State", "graph"]


class Input(TypedDict):
    """What a client sends: new messages, appended to the conversation."""

    messages: Annotated[list[AnyMessage], add_messages]


class State(Input):
    """The graph's state: the conversation plus the two untracked compaction outputs."""

    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


_bound = agent_model.bind_tools(TOOLS)


async def model(state: State) -> dict[str, list[AnyMessage]]:
    """Call the agent model on the compacted input (the whole conversation without one)."""
    reply = await _bound.ainvoke(state.get("llm_input_messages") or state["messages"])
    return {"messages": [reply]}


_builder = StateGraph(State, input_schema=Input)
_builder.add_node(
    "compaction", create_compaction_graph(CONFIG, model=summarizer, store=STORE, tools=TOOLS)
)
_builder.add_node("model", model)
_builder.add_node("tools", ToolNode(TOOLS))
_builder.add_edge(START, "compaction")
_builder.add_edge("compaction", "model")
_builder.add_conditional_edges("model", tools_condition)
_builder.add_edge("tools", "compaction")

graph = _builder.compile(name="parent")  # no checkpointer: the server provides its own
