"""The ``recall`` tool through the ways an agent runs tools, on a real store.

A real ``ToolNode`` in a parent graph with a ``SqliteSaver``, ``create_agent`` and the prebuilt
``create_react_agent``: the model (scripted) calls ``recall``, the tool reads the thread from
the run's config and the state the node injects, and answers with the evicted originals. A
forked or edited history gets none of another branch's messages; a failing store gives a
sentence, not an exception.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from fakes import FakeToolCallingModel, ai_tool_call
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel
from typing_extensions import TypedDict

from langgraph_compaction import SummaryStore, create_recall_tool
from langgraph_compaction.store import IndexedMessage
from langgraph_compaction.store.summary_store import plumbing
from langgraph_compaction.summary.prompts import render_transcript
from langgraph_compaction.tools import MAX_HIT_CHARS

HISTORY = [
    HumanMessage("My flight is LH 454 to Lisbon, seat 12C.", id="h0"),
    AIMessage("Noted the flight number.", id="a1"),
    HumanMessage("The deploy failed with ECONNREFUSED on port 5432.", id="h2"),
    AIMessage("Start the database and retry.", id="a3"),
    HumanMessage("Long log: " + "ECONNREFUSED retry " * 80, id="h4"),
]


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def index(store: SummaryStore, thread: str, history: Sequence[BaseMessage]) -> None:
    """What the pipeline does when a summary evicts ``history``."""
    plumbing(store).add_summary(
        thread_id=thread, namespace="default", parent_id=None,
        boundary_message_id=history[-1].id or "", covered_messages=len(history),
        prefix_hash=f"{thread}-{len(history)}", summary="Summary.", summary_tokens=2,
        source_tokens=100, kind="initial", model=None, rescued_message_ids=(),
        recall_messages=[
            IndexedMessage(p, m.id or f"#{p}", m.type, m.name, render_transcript([m]))
            for p, m in enumerate(history)
        ],
    )  # fmt: skip


def recall_call(query: str, n: int = 1) -> AIMessage:
    return ai_tool_call("recall", {"query": query}, f"call-{n}")


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as checkpointer:
        yield checkpointer


def parent_graph(model: FakeToolCallingModel, store: SummaryStore, checkpointer: Any) -> Any:
    tool = create_recall_tool(store)
    builder = StateGraph(State)
    builder.add_node(
        "agent", lambda s: {"messages": [model.bind_tools([tool]).invoke(s["messages"])]}
    )
    builder.add_node("tools", ToolNode([tool]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def tool_answers(messages: Sequence[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


def test_through_a_tool_node_in_a_parent_graph(store: SummaryStore, saver: SqliteSaver) -> None:
    index(store, "t1", HISTORY)
    model = FakeToolCallingModel(script=[recall_call("flight number"), "LH 454."])
    graph = parent_graph(model, store, saver)
    config = {"configurable": {"thread_id": "t1"}}
    out = graph.invoke({"messages": [*HISTORY, HumanMessage("Which flight?", id="q")]}, config)
    (answer,) = tool_answers(out["messages"])
    assert answer.splitlines()[0].endswith("earlier message(s) match 'flight number', best first:")
    assert "[message 0] user: My flight is LH 454 to Lisbon, seat 12C." in answer
    assert out["messages"][-1].content == "LH 454."
    # Another thread holds nothing of this one's.
    model = FakeToolCallingModel(script=[recall_call("flight number"), "no idea"])
    other = parent_graph(model, store, saver).invoke(
        {"messages": [HumanMessage("Which flight?")]}, {"configurable": {"thread_id": "t2"}}
    )
    assert tool_answers(other["messages"]) == ["No earlier message matches 'flight number'."]


def test_long_texts_are_cut_with_a_marker(store: SummaryStore) -> None:
    index(store, "t1", HISTORY)
    tool = create_recall_tool(store, limit=1)
    answer = tool.invoke({"query": "long log"}, {"configurable": {"thread_id": "t1"}})
    assert "[message 4] user: Long log:" in answer
    cut = len(render_transcript([HISTORY[4]])) - MAX_HIT_CHARS
    assert answer.endswith(f"[... {cut} more characters cut]")


def test_a_forked_history_never_gets_another_branchs_messages(
    store: SummaryStore, saver: SqliteSaver
) -> None:
    # Branch A said things branch B never did; both share the thread's first two messages.
    branch_b = [*HISTORY[:2], HumanMessage("Let us talk about trains instead.", id="b2")]
    index(store, "t1", HISTORY)
    model = FakeToolCallingModel(script=[recall_call("ECONNREFUSED flight"), "done"])
    out = parent_graph(model, store, saver).invoke(
        {"messages": [*branch_b, HumanMessage("what failed?", id="q")]},
        {"configurable": {"thread_id": "t1"}},
    )
    (answer,) = tool_answers(out["messages"])
    hits = answer.splitlines()[1:]
    assert [line.split("]")[0] for line in hits] == ["[message 0", "[message 1"]
    # An edited message (same id, other text) is left out too.
    index(store, "t-edit", HISTORY)
    edited = [HumanMessage("My flight is BA 123.", id="h0"), *HISTORY[1:]]
    model = FakeToolCallingModel(script=[recall_call("flight"), "done"])
    out = parent_graph(model, store, saver).invoke(
        {"messages": edited}, {"configurable": {"thread_id": "t-edit"}}
    )
    (answer,) = tool_answers(out["messages"])
    assert "LH 454" not in answer


def test_through_create_agent(store: SummaryStore, saver: SqliteSaver) -> None:
    index(store, "t1", HISTORY)
    model = FakeToolCallingModel(script=[recall_call("port 5432 error"), "It was ECONNREFUSED."])
    agent = create_agent(model, tools=[create_recall_tool(store)], checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    inputs: Any = {"messages": [*HISTORY, HumanMessage("what failed?", id="q")]}
    out = agent.invoke(inputs, config)
    (answer,) = tool_answers(out["messages"])
    assert "[message 2] user: The deploy failed with ECONNREFUSED on port 5432." in answer


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # create_react_agent is deprecated
def test_through_the_prebuilt_react_agent(store: SummaryStore, saver: SqliteSaver) -> None:
    from langgraph.prebuilt import create_react_agent

    index(store, "t1", HISTORY)
    model = FakeToolCallingModel(script=[recall_call("Lisbon seat"), "12C"])
    agent = create_react_agent(model, tools=[create_recall_tool(store)], checkpointer=saver)
    out = agent.invoke({"messages": HISTORY}, {"configurable": {"thread_id": "t1"}})
    (answer,) = tool_answers(out["messages"])
    assert answer.splitlines()[1].startswith("[message 0] user: My flight is LH 454")


async def test_async_through_a_tool_node(store: SummaryStore, tmp_path: Path) -> None:
    await plumbing(store).aadd_summary(
        thread_id="t1", namespace="default", parent_id=None, boundary_message_id="a3",
        covered_messages=4, prefix_hash="p", summary="Summary.", summary_tokens=2,
        source_tokens=100, kind="initial", model=None, rescued_message_ids=(),
        recall_messages=[
            IndexedMessage(p, m.id or "", m.type, m.name, render_transcript([m]))
            for p, m in enumerate(HISTORY)
        ],
    )  # fmt: skip
    model = FakeToolCallingModel(script=[recall_call("flight"), "ok"])
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.db")) as checkpointer:
        out = await parent_graph(model, store, checkpointer).ainvoke(
            {"messages": HISTORY}, {"configurable": {"thread_id": "t1"}}
        )
    (answer,) = tool_answers(out["messages"])
    assert "LH 454" in answer


def test_a_failing_store_gives_a_sentence_not_an_error(tmp_path: Path) -> None:
    broken = SummaryStore(f"sqlite:///{tmp_path / 'missing' / 'folder' / 'x.db'}")
    tool = create_recall_tool(broken)
    answer = tool.invoke({"query": "flight"}, {"configurable": {"thread_id": "t1"}})
    assert answer.startswith("Recall is unavailable right now")


def test_the_model_sees_one_argument(store: SummaryStore) -> None:
    tool = create_recall_tool(store, name="search_history")
    assert tool.name == "search_history"
    schema = tool.tool_call_schema
    assert isinstance(schema, type) and issubclass(schema, BaseModel)
    assert list(schema.model_json_schema()["properties"]) == ["query"]
    with pytest.raises(ValueError, match="limit"):
        create_recall_tool(store, limit=0)
