"""assemble: the tool-pair safety net, oversized newest units, the gauge."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conversations import chat, graph_input, skill_read, tool_batch
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.content.messages import ensure_tool_pairs
from langgraph_compaction.summary.model_input import split_rescued_caller

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


def _skill_caller(form: str) -> AIMessage:
    """The AI message of ``skill_read(..., other_call=True)`` as each provider writes it."""
    calls = skill_read("k1", "/mnt/skills/docx/SKILL.md", other_call=True)[0]
    assert isinstance(calls, AIMessage)
    tool_calls = calls.tool_calls
    if form == "openai-chat":
        raw = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
            }
            for c in tool_calls
        ]
        return AIMessage(
            "Reading the skill.",
            id="k1-ai",
            tool_calls=tool_calls,
            additional_kwargs={"tool_calls": raw},
        )
    content: list[str | dict[str, Any]]
    if form == "anthropic":
        content = [
            {"type": "thinking", "thinking": "Read the skill first.", "signature": "EqQBsig=="},
            {"type": "text", "text": "Reading the skill."},
        ]
        content += [
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
            for c in tool_calls
        ]
        return AIMessage(content, id="k1-ai", tool_calls=tool_calls)
    # OpenAI Responses API, as langchain-openai keeps its output items
    content = [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan."}]}
    ]
    content += [
        {
            "type": "function_call",
            "id": f"fc_{c['id']}",
            "call_id": c["id"],
            "name": c["name"],
            "arguments": json.dumps(c["args"]),
        }
        for c in tool_calls
    ]
    return AIMessage(content, id="k1-ai", tool_calls=tool_calls)


@pytest.mark.parametrize("form", ["openai-chat", "anthropic", "openai-responses"])
def test_a_split_caller_drops_a_call_in_every_form_it_takes(
    store: SummaryStore, summarizer: RecordingSummarizer, form: str
) -> None:
    caller = _skill_caller(form)
    skill = skill_read("k1", "/mnt/skills/docx/SKILL.md", other_call=True)[1:]
    messages: list[BaseMessage] = [*chat(1), HumanMessage("build it", id="req"), caller, *skill]
    for step in range(12):
        messages += tool_batch(f"s{step}", 1)
    graph = create_compaction_graph(
        {"trigger": {"type": "tokens", "value": 1200}, "keep": {"type": "messages", "value": 4}},
        model=summarizer,
        store=store,
    )
    result = graph.invoke(graph_input(messages), THREAD)
    assert result["compaction"].action == "summarized"
    assert result["compaction"].repaired_pairs == 0
    split = next(m for m in result["llm_input_messages"] if m.id == "k1-ai")
    assert isinstance(split, AIMessage)
    assert [c["id"] for c in split.tool_calls] == ["k1-skill"]
    raw = split.additional_kwargs.get("tool_calls") or []
    assert [c["id"] for c in raw] == (["k1-skill"] if form == "openai-chat" else [])
    original = caller.content if isinstance(caller.content, list) else []
    blocks = split.content if isinstance(split.content, list) else []
    call_ids = [
        b.get("id") if b.get("type") == "tool_use" else b.get("call_id")
        for b in blocks
        if isinstance(b, dict) and b.get("type") in ("tool_use", "function_call")
    ]
    assert call_ids == (["k1-skill"] if original else [])
    # everything but the dropped call stays byte for byte (reasoning and its signature too)
    others = [b for b in original if not (isinstance(b, dict) and "k1-other" in json.dumps(b))]
    assert blocks == others
    if isinstance(caller.content, str):
        assert split.content == caller.content
    assert caller.tool_calls[1]["id"] == "k1-other"  # the history is untouched


def test_a_split_caller_pairs_repeated_call_ids_by_order() -> None:
    batch = tool_batch("d", 3, call_ids=["dup", "dup", "x"])
    caller = batch[0]
    assert isinstance(caller, AIMessage)
    raw = [
        {"id": c["id"], "type": "function", "function": {"name": "search", "arguments": str(n)}}
        for n, c in enumerate(caller.tool_calls)
    ]
    blocks = [
        {"type": "tool_use", "id": c["id"], "name": "search", "input": {"n": n}}
        for n, c in enumerate(caller.tool_calls)
    ]
    batch[0] = caller.model_copy(
        update={"content": blocks, "additional_kwargs": {"tool_calls": raw}}
    )
    split = split_rescued_caller(batch, 0, {2})  # the second result: the second "dup" call
    assert isinstance(split, AIMessage)
    assert split.tool_calls == [caller.tool_calls[1]]
    assert split.additional_kwargs["tool_calls"] == [raw[1]]
    assert split.content == [blocks[1]]
    assert split_rescued_caller(batch, 0, {1, 2, 3}) is batch[0]
