"""The ``compact`` tool: the agent asks for its context to be compacted, the next call does it.

Through a real ``ToolNode`` in a parent ``StateGraph`` (compaction right before the model, an
``InMemorySaver``) on SQLite and PostgreSQL, sync and async, and through ``create_agent`` with
``CompactionMiddleware(compact_tool=True)``: a scripted model calls ``compact`` with a focus;
the tool files a request for the run's thread and answers with a confirmation, the agent's
loop goes on, and the compaction call before the next model call summarizes although no
trigger fires, with the focus in the summary prompt. The request is consumed: the call after
makes no summary. A run without a thread id and a store that fails get a sentence, not an
exception.
"""

# ruff: noqa: RUF001 (Chinese punctuation and Cyrillic letters in the conversation)

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from fakes import FakeToolCallingModel, RecordingSummarizer, ai_tool_call
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel
from typing_extensions import TypedDict

from langgraph_compaction import (
    CompactionMiddleware,
    CompactionReport,
    SummaryStore,
    create_compact_tool,
    create_compaction_graph,
)
from langgraph_compaction.errors import CompactionConfigError
from langgraph_compaction.tools import NO_THREAD, STORE_FAILED, confirmation

FOCUS = "保留航班号 LH 454 和座位 12C; сохрани номер брони"
"""The model's focus: Chinese and Russian, with identifiers to keep verbatim."""

CONFIG: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 100_000},  # never fires in these conversations
    "keep": {"type": "messages", "value": 2},
}

HISTORY: list[BaseMessage] = [
    HumanMessage("我的航班是 LH 454，飞往里斯本，座位 12C。", id="h0"),
    AIMessage("记下了：LH 454，座位 12C。", id="a1"),
    HumanMessage("Номер брони — QX7-2291, отель у реки.", id="h2"),
    AIMessage("Записал номер брони QX7-2291.", id="a3"),
    HumanMessage("رحلة العودة يوم الجمعة من لشبونة.", id="h4"),
    AIMessage("تمام، العودة يوم الجمعة.", id="a5"),
]
ASK = HumanMessage("The context is long: compact it, then tell me the seat.", id="ask")


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


def compact_call(focus: str = FOCUS) -> AIMessage:
    return ai_tool_call("compact", {"focus": focus}, "call-compact", msg_id="ai-compact")


def agent_model() -> FakeToolCallingModel:
    """Calls ``compact``, then answers twice (this turn and the next)."""
    return FakeToolCallingModel(script=[compact_call(), "Seat 12C.", "Friday, from Lisbon."])


def parent_graph(
    model: FakeToolCallingModel, summarizer: RecordingSummarizer, store: SummaryStore
) -> Any:
    """START -> compaction -> agent -> (tools -> compaction -> agent)* -> END."""
    tool = create_compact_tool(store)
    bound = model.bind_tools([tool])

    def agent(state: State) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke(state.get("llm_input_messages") or state["messages"])]}

    async def aagent(state: State) -> dict[str, list[BaseMessage]]:
        sent = state.get("llm_input_messages") or state["messages"]
        return {"messages": [await bound.ainvoke(sent)]}

    compaction = create_compaction_graph(CONFIG, model=summarizer, store=store, tools=[tool])
    builder = StateGraph(State)
    builder.add_node("compaction", compaction)
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent))
    builder.add_node("tools", ToolNode([tool]))
    builder.add_edge(START, "compaction")
    builder.add_edge("compaction", "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "compaction")
    return builder.compile(checkpointer=InMemorySaver())


async def run_turn(
    graph: Any, messages: Sequence[BaseMessage], config: RunnableConfig, is_async: bool
) -> list[CompactionReport]:
    """One turn; the report of each compaction call, in order."""
    inputs = {"messages": list(messages)}
    if is_async:
        parts = [part async for part in graph.astream(inputs, config, stream_mode="updates")]
    else:  # the sync path, off the loop (it reads the store with blocking calls)
        parts = await asyncio.to_thread(
            lambda: list(graph.stream(inputs, config, stream_mode="updates"))
        )
    return [part["compaction"]["compaction"] for part in parts if "compaction" in part]


def tool_answers(messages: Sequence[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


async def summaries(store: SummaryStore, thread_id: str) -> int:
    return len(await store.alist_summaries(thread_id))


async def test_through_a_tool_node_the_next_call_compacts_with_the_focus(
    summary_store: SummaryStore, is_async: bool, summarizer: RecordingSummarizer
) -> None:
    store = summary_store
    model = agent_model()
    graph = parent_graph(model, summarizer, store)
    config: RunnableConfig = {"configurable": {"thread_id": "t-compact"}}
    reports = await run_turn(graph, [*HISTORY, ASK], config, is_async)
    # Under the trigger: the first call passes through, the call after the tool compacts.
    assert [r.action for r in reports] == ["passthrough", "summarized"]
    assert model.call_count == 2, "the tool must not end the agent's loop"
    assert not model.saw_summary(0) and model.saw_summary(1)
    assert summarizer.call_count == 1
    assert FOCUS in summarizer.calls[0].prompt
    assert "LH 454" in summarizer.calls[0].transcript
    state = graph.get_state(config).values
    assert tool_answers(state["messages"]) == [confirmation(FOCUS)]
    assert state["messages"][-1].content == "Seat 12C."
    assert await summaries(store, "t-compact") == 1
    # The request was consumed: the next turn, still under the trigger, makes no summary.
    reports = await run_turn(graph, [HumanMessage("When do we fly back?")], config, is_async)
    assert [r.action for r in reports] != ["summarized"] and len(reports) == 1
    assert summarizer.call_count == 1
    assert await summaries(store, "t-compact") == 1
    # Another thread of the same store was never asked.
    other: RunnableConfig = {"configurable": {"thread_id": "t-other"}}
    plain = FakeToolCallingModel(script=["Hello."])
    reports = await run_turn(parent_graph(plain, summarizer, store), HISTORY, other, is_async)
    assert [r.action for r in reports] == ["passthrough"]


def test_through_create_agent_with_the_middleware(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    model = agent_model()
    middleware = CompactionMiddleware(CONFIG, model=summarizer, store=store, compact_tool=True)
    agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "t-agent"}}
    inputs: Any = {"messages": [*HISTORY, ASK]}
    out = agent.invoke(inputs, config)
    assert [tool_name(t) for t in model.bound_tools] == ["compact"]
    assert not model.saw_summary(0) and model.saw_summary(1)
    assert summarizer.call_count == 1 and FOCUS in summarizer.calls[0].prompt
    assert tool_answers(out["messages"]) == [confirmation(FOCUS)]
    assert [m.id for m in out["messages"][: len(HISTORY)]] == [m.id for m in HISTORY]
    agent.invoke({"messages": [HumanMessage("When do we fly back?")]}, config)
    assert summarizer.call_count == 1
    assert len(store.list_summaries("t-agent")) == 1


async def test_async_through_create_agent_with_the_middleware(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    model = agent_model()
    middleware = CompactionMiddleware(CONFIG, model=summarizer, store=store, compact_tool=True)
    agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "t-agent"}}
    inputs: Any = {"messages": [*HISTORY, ASK]}
    out = await agent.ainvoke(inputs, config)
    assert not model.saw_summary(0) and model.saw_summary(1)
    assert summarizer.call_count == 1 and FOCUS in summarizer.calls[0].prompt
    assert tool_answers(out["messages"]) == [confirmation(FOCUS)]
    await agent.ainvoke({"messages": [HumanMessage("When do we fly back?")]}, config)
    assert summarizer.call_count == 1
    assert len(await store.alist_summaries("t-agent")) == 1


def tool_name(tool: Any) -> str:
    return tool.name if isinstance(tool, BaseTool) else str(tool)


def test_the_middleware_adds_the_tool_only_when_asked(store: SummaryStore) -> None:
    assert CompactionMiddleware(CONFIG, store=store).tools == []
    both = CompactionMiddleware(
        {**CONFIG, "recall": {"enabled": True}}, store=store, compact_tool=True
    )
    assert [t.name for t in both.tools] == ["recall", "compact"]
    with pytest.raises(CompactionConfigError, match="compact_tool must be true or false"):
        CompactionMiddleware(CONFIG, store=store, compact_tool="yes")  # type: ignore[arg-type]


def test_the_model_sees_one_argument_and_a_blank_focus_asks_for_none(
    store: SummaryStore,
) -> None:
    tool = create_compact_tool(store, name="shrink_context")
    assert tool.name == "shrink_context"
    schema = tool.tool_call_schema
    assert isinstance(schema, type) and issubclass(schema, BaseModel)
    properties = schema.model_json_schema()["properties"]
    assert list(properties) == ["focus"] and properties["focus"]["description"]
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    assert tool.invoke({"focus": "  "}, config) == confirmation(None)
    assert confirmation(None).endswith("next model call.")
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        create_compact_tool(store, name="")
    with pytest.raises(TypeError, match="store must be a SummaryStore"):
        create_compact_tool("sqlite:///x.db")  # type: ignore[arg-type]


async def test_without_a_thread_id_or_with_a_failing_store_the_model_is_told(
    tmp_path: Path, store: SummaryStore, caplog: pytest.LogCaptureFixture
) -> None:
    tool = create_compact_tool(store)
    caplog.set_level(logging.WARNING, "langgraph_compaction")
    assert await tool.ainvoke({"focus": FOCUS}, {"configurable": {}}) == NO_THREAD
    assert "no thread id" in caplog.text
    broken = SummaryStore(f"sqlite:///{tmp_path / 'missing' / 'folder' / 'x.db'}")
    failing = create_compact_tool(broken)
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    assert await failing.ainvoke({"focus": FOCUS}, config) == STORE_FAILED
    assert "the summary store failed" in caplog.text
    assert await tool.ainvoke({"focus": FOCUS}, config) == confirmation(FOCUS)


def test_sync_without_a_thread_id_or_with_a_failing_store(tmp_path: Path) -> None:
    broken = SummaryStore(f"sqlite:///{tmp_path / 'missing' / 'folder' / 'x.db'}")
    tool = create_compact_tool(broken)
    assert tool.invoke({"focus": "x"}, {"configurable": {"thread_id": None}}) == NO_THREAD
    assert tool.invoke({"focus": "x"}, {"configurable": {"thread_id": "t1"}}) == STORE_FAILED
