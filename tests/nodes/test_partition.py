"""partition: tool units, rescued user request and skills, stickiness headroom."""

from __future__ import annotations

from conversations import CompactionGraph, chat, graph_input, skill_read, tool_batch
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.content.messages import ensure_tool_pairs, split_tool_units

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}


def _graph(
    store: SummaryStore, summarizer: RecordingSummarizer, **config: object
) -> CompactionGraph:
    return create_compaction_graph(config, model=summarizer, store=store)


def _ids(messages: list[BaseMessage]) -> list[str | None]:
    return [m.id for m in messages]


def test_a_parallel_batch_is_one_unit_even_with_reused_ids() -> None:
    messages = tool_batch("a", 3, call_ids=["dup", "dup", "x"]) + tool_batch(
        "b", 1, call_ids=["dup"]
    )
    assert split_tool_units(messages) == [(0, 4), (4, 6)]


def test_the_cutoff_never_splits_an_ai_message_from_its_results(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    messages: list[BaseMessage] = chat(3)
    for batch in range(12):
        messages += [HumanMessage(f"do {batch}", id=f"u{batch}"), *tool_batch(f"b{batch}", 3)]
    graph = _graph(
        store,
        summarizer,
        trigger={"type": "tokens", "value": 1200},
        keep={"type": "messages", "value": 2},
    )
    for end in range(2, len(messages) + 1):
        last = messages[end - 1]
        if isinstance(last, AIMessage) and last.tool_calls:
            continue  # the model is never called with unanswered calls
        if end < len(messages) and isinstance(messages[end], ToolMessage):
            continue  # nor in the middle of a parallel batch
        output = graph.invoke(graph_input(messages[:end]), THREAD)["llm_input_messages"]
        assert ensure_tool_pairs(output)[1] == 0, f"pair broken at {end}"
    assert summarizer.call_count > 0


def test_the_latest_user_request_is_rescued(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    messages: list[BaseMessage] = [*chat(2), HumanMessage("the one real request", id="request")]
    for step in range(15):
        messages += tool_batch(f"s{step}", 1)
    graph = _graph(
        store,
        summarizer,
        trigger={"type": "tokens", "value": 1000},
        keep={"type": "messages", "value": 4},
    )
    result = graph.invoke(graph_input(messages), THREAD)
    output, report = result["llm_input_messages"], result["compaction"]
    assert report.action == "summarized"
    assert report.rescued_count == 1
    assert _ids(output)[:3] == ["sys", f"compaction-summary-{report.summary_id}", "request"]
    assert "the one real request" not in summarizer.calls[0].transcript
    # reused: the same bytes on the next call
    again = graph.invoke(graph_input(messages), THREAD)["llm_input_messages"]
    assert again == output


def test_a_rescued_request_is_folded_in_once_a_newer_one_arrives(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    messages: list[BaseMessage] = [*chat(1), HumanMessage("first request", id="first")]
    for step in range(15):
        messages += tool_batch(f"s{step}", 1)
    graph = _graph(
        store,
        summarizer,
        trigger={"type": "tokens", "value": 1000},
        keep={"type": "messages", "value": 4},
    )
    graph.invoke(graph_input(messages), THREAD)
    messages.append(HumanMessage("second request", id="second"))
    for step in range(15):
        messages += tool_batch(f"t{step}", 1)
    output = graph.invoke(graph_input(messages), THREAD)["llm_input_messages"]
    assert "first" not in _ids(output)
    assert "second" in _ids(output)
    assert "first request" in summarizer.calls[-1].transcript


def test_skill_files_are_rescued_within_their_budgets(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    messages: list[BaseMessage] = [*chat(1), HumanMessage("build it", id="req")]
    messages += skill_read("k0", "/mnt/skills/pdf/SKILL.md")
    messages += skill_read("k1", "/mnt/skills/docx/SKILL.md", other_call=True)
    messages += skill_read("k2", "/mnt/skills/huge/SKILL.md", size=40_000)  # over per-skill budget
    messages += skill_read("k3", "/home/user/notes.md")  # not under the skills container
    for step in range(12):
        messages += tool_batch(f"s{step}", 1)
    graph = _graph(
        store,
        summarizer,
        trigger={"type": "tokens", "value": 3000},
        keep={"type": "messages", "value": 4},
        preserve_recent_skill_count=2,
    )
    result = graph.invoke(graph_input(messages), THREAD)
    ids = _ids(result["llm_input_messages"])
    assert result["compaction"].action == "summarized"
    assert {"k0-skill-r", "k1-skill-r"} <= set(ids)
    assert "k2-skill-r" not in ids and "k3-skill-r" not in ids
    assert "k1-other-r" not in ids  # the unrelated call of the mixed batch is summarized
    split = next(m for m in result["llm_input_messages"] if m.id == "k1-ai")
    assert isinstance(split, AIMessage)
    assert [c["id"] for c in split.tool_calls] == ["k1-skill"]
    assert ensure_tool_pairs(result["llm_input_messages"])[1] == 0
    transcript = summarizer.calls[0].transcript
    assert "SKILL /mnt/skills/pdf" not in transcript and "other k1" in transcript


def test_skill_count_budget_keeps_the_newest(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    messages: list[BaseMessage] = [*chat(1), HumanMessage("go", id="req")]
    for index in range(4):
        messages += skill_read(f"k{index}", f"/mnt/skills/s{index}/SKILL.md")
    for step in range(12):
        messages += tool_batch(f"s{step}", 1)
    graph = _graph(
        store,
        summarizer,
        trigger={"type": "tokens", "value": 1500},
        keep={"type": "messages", "value": 4},
        preserve_recent_skill_count=2,
    )
    result = graph.invoke(graph_input(messages), THREAD)
    assert result["compaction"].action == "summarized"
    ids = _ids(result["llm_input_messages"])
    assert [i for i in ids if i and i.endswith("skill-r")] == ["k2-skill-r", "k3-skill-r"]


def test_headroom_keeps_the_next_calls_from_summarizing_again(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    graph = _graph(
        store,
        summarizer,
        trigger={"type": "tokens", "value": 2000},
        keep={"type": "messages", "value": 40},
    )
    messages = chat(40)
    report = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert report.action == "summarized"
    # keep asked for 40 messages, but they alone sit above 0.75 x trigger: the cutoff moved
    assert report.tokens_after < 0.75 * 2000
    actions = []
    for turn in range(3):
        messages = [*messages, HumanMessage(f"more {turn}", id=f"m{turn}")]
        actions.append(graph.invoke(graph_input(messages), THREAD)["compaction"].action)
    assert actions == ["reused", "reused", "reused"]
    assert summarizer.call_count == 1


def _lost_call(tag: str, text: str = "let me look that up") -> AIMessage:
    """An AI message whose call never got a result (the run was interrupted)."""
    call = {"name": "lookup", "args": {"query": tag}, "id": f"{tag}-call", "type": "tool_call"}
    return AIMessage(text, id=f"{tag}-ai", tool_calls=[call])


def test_a_call_without_a_result_goes_to_the_summary_with_its_message(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    messages: list[BaseMessage] = [*chat(10), _lost_call("lost")]
    messages += [HumanMessage("never mind, go on", id="go"), AIMessage("going on", id="on")]
    messages += chat(2, system=False, prefix="late-")
    graph = _graph(
        store,
        summarizer,
        trigger={"type": "tokens", "value": 1000},
        keep={"type": "messages", "value": 8},
    )
    result = graph.invoke(graph_input(messages), THREAD)
    output, report = result["llm_input_messages"], result["compaction"]
    assert report.action == "summarized"
    assert report.repaired_pairs == 0  # no invented result
    assert "lost-ai" not in _ids(output)
    assert not any(isinstance(m, ToolMessage) for m in output)
    transcript = summarizer.calls[0].transcript
    assert "let me look that up" in transcript and "lookup(" in transcript
    # the keep window still holds what follows the lost call
    assert _ids(output)[-6:] == ["go", "on", "late-h0", "late-a0", "late-h1", "late-a1"]


def test_a_call_without_a_result_as_the_newest_message_is_still_answered(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    messages: list[BaseMessage] = [*chat(10), _lost_call("newest")]
    graph = _graph(
        store,
        summarizer,
        trigger={"type": "tokens", "value": 1000},
        keep={"type": "messages", "value": 4},
    )
    result = graph.invoke(graph_input(messages), THREAD)
    output, report = result["llm_input_messages"], result["compaction"]
    assert report.action == "summarized"
    assert report.repaired_pairs == 1  # nothing else can be done with the newest message
    assert _ids(output)[-2] == "newest-ai" and isinstance(output[-1], ToolMessage)


def test_a_rescued_caller_with_a_lost_call_keeps_only_the_rescued_call(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    skill = skill_read("k", "/mnt/skills/pdf/SKILL.md")
    caller = skill[0]
    assert isinstance(caller, AIMessage)
    lost = {"name": "lookup", "args": {"query": "gone"}, "id": "k-lost", "type": "tool_call"}
    caller = caller.model_copy(update={"tool_calls": [*caller.tool_calls, lost]})
    messages: list[BaseMessage] = [*chat(1), HumanMessage("build it", id="req"), caller, skill[1]]
    for step in range(12):
        messages += tool_batch(f"s{step}", 1)
    graph = _graph(
        store,
        summarizer,
        trigger={"type": "tokens", "value": 1200},
        keep={"type": "messages", "value": 4},
    )
    result = graph.invoke(graph_input(messages), THREAD)
    output, report = result["llm_input_messages"], result["compaction"]
    assert report.action == "summarized" and report.repaired_pairs == 0
    split = next(m for m in output if m.id == "k-ai")
    assert isinstance(split, AIMessage)
    assert [c["id"] for c in split.tool_calls] == ["k-skill"]
    assert "k-skill-r" in _ids(output)
    # the lost call reached the summarizer with its message
    assert "lookup({'query': 'gone'})" in summarizer.calls[0].transcript
