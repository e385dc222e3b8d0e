"""A parent agent graph around the compaction subgraph, driven turn by turn, sync or async.

``START -> compaction -> model -> END`` on an ``InMemorySaver``: each turn appends the given
messages to the checkpointed history, the subgraph builds the model input, and a scripted
model node records what it received (``llm_input_messages``, falling back to ``messages`` as
the README says) and the report, then answers. The sync driver runs ``invoke`` off the event
loop, the async one ``ainvoke``, so one async test body covers both paths.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph

__all__ = ["Agent", "ParentState"]


class ParentState(TypedDict):
    """The parent's state, declared as the README tells users to."""

    messages: Annotated[list[AnyMessage], add_messages]
    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


class Agent:
    """One parent graph and what its model node received, call by call."""

    def __init__(
        self,
        store: SummaryStore,
        summarizer: RecordingSummarizer,
        config: dict[str, Any],
        *,
        is_async: bool,
        thread_id: str = "t",
        reply_size: int = 120,
    ) -> None:
        self.is_async = is_async
        self.thread: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        self.inputs: list[list[BaseMessage]] = []
        self.reports: list[CompactionReport] = []
        self._reply_size = reply_size
        builder = StateGraph(ParentState)
        builder.add_node(
            "compaction", create_compaction_graph(config, model=summarizer, store=store)
        )
        builder.add_node("model", self._model)
        builder.add_edge(START, "compaction")
        builder.add_edge("compaction", "model")
        builder.add_edge("model", END)
        self.graph: CompiledStateGraph[ParentState, None, ParentState, ParentState] = (
            builder.compile(checkpointer=InMemorySaver())
        )

    def _model(self, state: ParentState) -> dict[str, list[AnyMessage]]:
        seen = state.get("llm_input_messages") or state["messages"]
        report = state.get("compaction")
        assert report is not None, "the compaction node wrote no report"
        self.inputs.append(list(seen))
        self.reports.append(report)
        turn = len(self.inputs)
        reply = AIMessage(f"noted {turn} " + "n" * self._reply_size, id=f"reply{turn}")
        return {"messages": [reply]}

    async def send(self, *messages: BaseMessage) -> tuple[list[BaseMessage], CompactionReport]:
        """Append ``messages`` and run one turn; the model input and report of that turn."""
        payload: Any = {"messages": list(messages)}
        if self.is_async:
            await self.graph.ainvoke(payload, self.thread)
        else:
            await asyncio.to_thread(self.graph.invoke, payload, self.thread)
        return self.inputs[-1], self.reports[-1]

    async def history(self) -> list[BaseMessage]:
        """The checkpointed history (every turn's messages and replies)."""
        if self.is_async:
            snapshot = await self.graph.aget_state(self.thread)
        else:
            snapshot = await asyncio.to_thread(self.graph.get_state, self.thread)
        return list(snapshot.values["messages"])
