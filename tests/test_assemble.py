"""assemble: the tool-pair safety net, oversized newest units, the gauge."""

from __future__ import annotations

from conversations import chat, graph_input, tool_batch
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction._messages import ensure_tool_pairs

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}


def test_a_valid_input_passes_the_pair_check_unchanged() -> None:
    messages = chat(2) + tool_batch("a", 3, call_ids=["x", "x", "y"]) + tool_batch("b", 1)
    output, repairs = ensure_tool_pairs(messages)
    assert repairs == 0
    assert all(a is b for a, b in zip(output, messages, strict=True))


def test_the_pair_check_repairs_orphans_and_unanswered_calls() -> None:
    batch = tool_batch("a", 2)
    orphan = ToolMessage("late", tool_call_id="nobody", id="orphan")
    messages: list[BaseMessage] = [HumanMessage("hi", id="h"), orphan, batch[0], batch[1]]
    output, repairs = ensure_tool_pairs(messages)
    assert repairs == 2  # the orphan dropped, the unanswered call answered
    assert [m.id for m in output[:3]] == ["h", "a-ai", "a-r0"]
    assert isinstance(output[3], ToolMessage) and output[3].tool_call_id == "a-call1"
    assert ensure_tool_pairs(output)[1] == 0


def test_an_oversized_newest_unit_is_shortened_in_the_copy(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    graph = create_compaction_graph(
        {"context_window": 4000, "keep": {"type": "messages", "value": 4}},
        model=summarizer,
        store=store,
    )
    messages: list[BaseMessage] = [*chat(3), *tool_batch("big", 2, size=20_000)]
    result = graph.invoke(graph_input(messages), THREAD)
    report = result["compaction"]
    assert report.tokens_after <= report.gauge.budget
    assert report.shortened_count >= 1
    big = [m for m in result["llm_input_messages"] if m.id and m.id.startswith("big-r")]
    assert len(big) == 2 and all("characters cut" in str(m.content) for m in big)
    assert len(str(messages[-1].content)) > 20_000  # the original is untouched


def test_the_gauge_reports_window_budget_and_baseline(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    graph = create_compaction_graph(
        {"context_window": 3000, "keep": {"type": "messages", "value": 6}},
        model=summarizer,
        store=store,
    )
    messages = chat(30)
    report = graph.invoke(graph_input(messages), THREAD)["compaction"]
    gauge = report.gauge
    assert report.action == "summarized"
    assert (gauge.context_window, gauge.budget) == (3000, 2850)
    assert gauge.input_tokens == report.tokens_after
    assert gauge.baseline_tokens <= gauge.input_tokens  # no rescued messages here
    assert gauge.usage is not None and 0 < gauge.usage < 0.75
    assert report.tokens_before > 2850 > report.tokens_after


def test_inputs_are_never_mutated(store: SummaryStore, summarizer: RecordingSummarizer) -> None:
    graph = create_compaction_graph(
        {"trigger": {"type": "tokens", "value": 1500}, "keep": {"type": "messages", "value": 4}},
        model=summarizer,
        store=store,
    )
    messages: list[BaseMessage] = [*chat(10), *tool_batch("t", 2), AIMessage("ok", id="ok")]
    snapshot = [m.model_dump_json() for m in messages]
    graph.invoke(graph_input(messages), THREAD)
    graph.invoke(graph_input(messages), THREAD)
    assert [m.model_dump_json() for m in messages] == snapshot
