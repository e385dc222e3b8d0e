"""At the boundaries: what the graph accepts, what invalidates a summary, what it reports.

- ``messages`` given as dicts or tuples are accepted as ``add_messages`` accepts them; anything
  else fails with one error type that names what was given and what is expected; ``store=``
  given as a URL opens that store, or fails when the graph is built.
- Every edit invalidates: an edit of a tool call's arguments alone (same id, same content, as
  a human-in-the-loop review makes) gets a fresh summary, also on a warm graph object.
- The report never claims what did not happen: ``reused`` only with a summary in use, and an
  input still over the budget is reported (``over_budget``) and announced by an event.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from conversations import chat, graph_input
from fakes import RecordingSummarizer, ai_tool_call
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.errors import (
    CompactionConfigError,
    CompactionInputError,
    SummaryStoreError,
)
from langgraph_compaction.pipeline.state import CompactionInput

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
CONFIG = {"trigger": {"type": "tokens", "value": 2000}, "keep": {"type": "messages", "value": 6}}


def test_message_dicts_and_tuples_are_accepted_like_add_messages(store: SummaryStore) -> None:
    graph = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    objects = chat(20)
    as_dicts = [
        {
            "role": {"system": "system", "human": "user", "ai": "assistant"}[m.type],
            "content": m.content,
            "id": m.id,
        }
        for m in objects
    ]
    as_tuples = [("system" if m.type == "system" else m.type, str(m.content)) for m in objects]
    from_objects = graph.invoke(graph_input(objects), THREAD)["compaction"]
    from_dicts = graph.invoke(graph_input(as_dicts), THREAD)["compaction"]
    assert from_dicts.action == "reused"  # the same messages, ids included
    assert from_dicts.summary_id == from_objects.summary_id
    result = graph.invoke(graph_input(as_tuples), {"configurable": {"thread_id": "tuples"}})
    assert result["compaction"].action == "summarized"
    assert all(isinstance(m, BaseMessage) for m in result["llm_input_messages"])


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"messages": "hello"}, "str 'hello'"),
        ({"messages": None}, "NoneType None"),
        ({"messages": 42}, "int 42"),
        ({"messages": [HumanMessage("hi"), 3.5]}, "'messages'[1] is float 3.5"),
        ({"messages": [{"content": "no role"}]}, "'messages'[0] is dict"),
        ({}, "no 'messages' key"),
    ],
    ids=["string", "none", "number", "number-item", "dict-without-role", "missing-key"],
)
def test_anything_else_fails_naming_what_was_given(
    store: SummaryStore, given: dict[str, Any], named: str
) -> None:
    graph = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    with pytest.raises(CompactionInputError) as raised:
        graph.invoke(cast(CompactionInput, given), THREAD)  # deliberately not one
    message = str(raised.value)
    assert named in message
    assert "expected a list of messages" in message


def test_store_given_as_a_url_opens_that_store(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'by-url.db'}"
    graph = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=url)
    graph.invoke(graph_input(chat(20)), THREAD)
    with SummaryStore(url) as store:
        assert len(store.list_summaries("t")) == 1


@pytest.mark.parametrize(
    ("store", "error"),
    [(42, CompactionConfigError), ("mysql://db/x", SummaryStoreError), ("::", SummaryStoreError)],
)
def test_a_store_that_cannot_work_fails_when_the_graph_is_built(
    store: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)


def _tool_history(city: str) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("You book trips.", id="sys")]
    for turn in range(12):
        messages.append(HumanMessage(f"request {turn} " + "r" * 300, id=f"h{turn}"))
        args = {"city": city if turn == 1 else f"city-{turn}", "nights": 2}
        messages.append(ai_tool_call("book_hotel", args, f"call-{turn}", msg_id=f"ai{turn}"))
        messages.append(
            ToolMessage("booked " + "b" * 300, tool_call_id=f"call-{turn}", id=f"t{turn}")
        )
        messages.append(AIMessage(f"done {turn}", id=f"done{turn}"))
    return messages


def test_an_edit_of_tool_call_arguments_alone_gets_a_fresh_summary_on_a_warm_graph(
    store: SummaryStore,
) -> None:
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    first = graph.invoke(graph_input(_tool_history("Oslo")), THREAD)["compaction"]
    assert first.action == "summarized"
    assert "Oslo" in summarizer.calls[0].transcript
    edited = _tool_history("Bergen")  # same ids, same content: only the call's args differ
    again = graph.invoke(graph_input(edited), THREAD)["compaction"]  # the same graph object
    assert again.action == "summarized" and again.summary_id != first.summary_id
    assert "Bergen" in summarizer.calls[-1].transcript
    assert "Oslo" not in summarizer.calls[-1].transcript


def test_nothing_to_evict_is_never_reported_as_reused(store: SummaryStore) -> None:
    # A trigger on the message count fires, but one parallel batch is a single unit.
    batch: list[BaseMessage] = [
        HumanMessage("look these up", id="ask"),
        AIMessage(
            "",
            id="batch",
            tool_calls=[
                {"name": "search", "args": {"q": str(i)}, "id": f"c{i}", "type": "tool_call"}
                for i in range(12)
            ],
        ),
        *(ToolMessage(f"result {i}", tool_call_id=f"c{i}", id=f"r{i}") for i in range(12)),
    ]
    config = {
        "trigger": {"type": "messages", "value": 10},
        "keep": {"type": "messages", "value": 4},
    }
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(config, model=summarizer, store=store)
    result = graph.invoke(graph_input(batch), THREAD)
    report = result["compaction"]
    assert report.action != "reused" and report.summary_id is None
    assert report.action == "passthrough" and not report.over_budget
    assert result["llm_input_messages"] == batch
    assert summarizer.call_count == 0


def test_an_input_still_over_the_budget_is_reported_and_announced(store: SummaryStore) -> None:
    config = {"context_window": 1000, "keep": {"type": "messages", "value": 2}}
    graph = create_compaction_graph(config, model=RecordingSummarizer(), store=store)
    huge = [SystemMessage("Be brief.", id="sys"), HumanMessage("x " * 6000, id="huge")]
    events: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    stream = graph.stream(graph_input(huge), THREAD, stream_mode=["custom", "values"])
    # With a list of modes it yields (mode, chunk) pairs; langgraph types them as chunks.
    for mode, chunk in cast(Iterator[tuple[str, Any]], stream):
        if mode == "custom":
            events.append(chunk)
        else:
            values = chunk
    report = values["compaction"]
    assert report.over_budget and report.action == "failed"
    assert report.tokens_after > report.gauge.budget
    assert "over the budget" in (report.error or "")
    assert [e["cause"] for e in events if e["type"] == "context_compaction_failed"] == [
        "over_budget"
    ]
