"""Total recall wired into the pipeline (DESIGN 6.8): what a summary evicts gets indexed.

With ``recall.enabled`` the summary's transaction also indexes the messages it newly covers,
the summary message names the tool in its last line, and ``CompactionMiddleware`` adds the
tool to the agent; with recall off nothing is indexed.
"""

from __future__ import annotations

from conversations import chat, graph_input
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import CompactionMiddleware, SummaryStore, create_compaction_graph

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
CONFIG = {"trigger": {"type": "tokens", "value": 2000}, "keep": {"type": "messages", "value": 6}}


def _history() -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("You book flights.", id="sys")]
    messages.append(HumanMessage("My booking code is XQ7ZPL, flight LH4521 on May 3.", id="u0"))
    messages.append(AIMessage("Noted: XQ7ZPL.", id="a0"))
    return messages + chat(20, system=False)


def test_recall_on_indexes_what_the_summary_evicts(store: SummaryStore) -> None:
    config = {**CONFIG, "recall": {"enabled": True, "tool_name": "recall"}}
    graph = create_compaction_graph(config, model=RecordingSummarizer(), store=store)
    result = graph.invoke(graph_input(_history()), THREAD)
    report = result["compaction"]
    assert report.action == "summarized"
    summary = result["llm_input_messages"][1]
    assert summary.name == "summary"
    assert str(summary.content).rstrip().endswith("with the `recall` tool.")
    hits = store.search_messages("t", "booking code XQ7ZPL")
    assert hits and hits[0].message_id == "u0"
    assert "XQ7ZPL" in hits[0].text
    # the reused summary keeps the same bytes on the next call
    again = graph.invoke(graph_input(_history()), THREAD)["llm_input_messages"][1]
    assert again.content == summary.content


def test_recall_off_indexes_nothing(store: SummaryStore) -> None:
    graph = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    result = graph.invoke(graph_input(_history()), THREAD)
    assert result["compaction"].action == "summarized"
    assert "recall" not in str(result["llm_input_messages"][1].content)
    assert store.search_messages("t", "booking code XQ7ZPL") == []


def test_the_middleware_adds_the_recall_tool(store: SummaryStore) -> None:
    on = CompactionMiddleware({"recall": {"enabled": True, "tool_name": "look_back"}}, store=store)
    assert [tool.name for tool in on.tools] == ["look_back"]
    off = CompactionMiddleware(store=store)
    assert list(off.tools) == []
