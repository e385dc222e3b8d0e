"""Pins (DESIGN 6.11): pinned units stay verbatim after the summary, are never pruned.

Each test drives a parent agent graph (``agent_harness.Agent``: the compaction subgraph in a
``StateGraph`` with an ``InMemorySaver``), through ``invoke`` and ``ainvoke``, and checks what
the model received, what the summarizer saw, and what the report counts.
"""

# ruff: noqa: RUF001 (Chinese punctuation and Cyrillic letters in the conversation)

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_harness import Agent
from conversations import graph_input, tool_batch
from fakes import RecordingSummarizer, message_text
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from media_files import b64, png

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.content.estimate import estimate_tokens
from langgraph_compaction.content.messages import ensure_tool_pairs

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
SMALL: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 900},
    "keep": {"type": "messages", "value": 4},
}
REQUIREMENTS = {
    "english": "Budget must stay under 5 000 €, flights included.",
    "chinese": "预算必须低于五千欧元，包括机票。",
    "arabic": "يجب أن تبقى الميزانية أقل من خمسة آلاف يورو.",
    "russian": "Бюджет не должен превышать 5 000 евро, включая перелёты.",
}


def pinned(message: BaseMessage) -> BaseMessage:
    """The message with ``additional_kwargs["pinned"] = True``."""
    kwargs = {**message.additional_kwargs, "pinned": True}
    return message.model_copy(update={"additional_kwargs": kwargs})


def question(turn: int, size: int = 200) -> HumanMessage:
    return HumanMessage(f"question {turn} " + "q" * size, id=f"h{turn}")


def after_summary(output: list[BaseMessage]) -> list[BaseMessage]:
    """The model input after the summary message (asserting there is one, second)."""
    assert output[1].name == "summary", [m.id for m in output[:3]]
    return output[2:]


def seen_by_summarizer(summarizer: RecordingSummarizer, text: str) -> bool:
    return any(text in call.prompt for call in summarizer.calls)


@pytest.mark.parametrize("language", list(REQUIREMENTS))
async def test_a_pinned_requirement_survives_compactions_verbatim(
    store: SummaryStore, summarizer: RecordingSummarizer, is_async: bool, language: str
) -> None:
    text = REQUIREMENTS[language]
    agent = Agent(store, summarizer, SMALL, is_async=is_async)
    requirement = pinned(HumanMessage(text, id="req"))
    await agent.send(SystemMessage("You plan trips.", id="sys"), requirement)
    summaries: set[str] = set()
    for turn in range(30):
        output, report = await agent.send(question(turn))
        if report.summary_id is None:
            continue
        summaries.add(report.summary_id)
        rest = after_summary(output)
        assert rest[0] == requirement, f"turn {turn}: {[m.id for m in rest[:3]]}"
        assert report.pinned_count == 1
        assert report.unpinned_over_budget == 0
    assert len(summaries) >= 2, "two compactions at least"
    assert summarizer.call_count >= 2
    assert not seen_by_summarizer(summarizer, text)
    # Without the pin the same conversation summarizes it: the pin is what kept it out.
    plain = RecordingSummarizer()
    control = Agent(store, plain, SMALL, is_async=is_async, thread_id="unpinned")
    await control.send(SystemMessage("You plan trips.", id="sys"), HumanMessage(text, id="req"))
    for turn in range(10):
        await control.send(question(turn))
    assert seen_by_summarizer(plain, text)


async def test_a_pinned_tool_result_keeps_its_caller_and_siblings(
    store: SummaryStore, summarizer: RecordingSummarizer, is_async: bool
) -> None:
    batch = tool_batch("quote", 2)
    batch[2] = pinned(batch[2])  # the second result alone is pinned
    agent = Agent(store, summarizer, SMALL, is_async=is_async)
    await agent.send(SystemMessage("You plan trips.", id="sys"), question(0), *batch)
    for turn in range(1, 12):
        output, report = await agent.send(question(turn))
    assert report.summary_id is not None
    rest = after_summary(output)
    assert rest[:3] == batch, [m.id for m in rest[:4]]
    assert ensure_tool_pairs(output)[1] == 0
    assert report.pinned_count == 3  # the caller and both results
    for result in batch[1:]:
        assert not seen_by_summarizer(summarizer, message_text(result)[:30])
    assert seen_by_summarizer(summarizer, "question 1 ")


async def test_the_newest_pins_win_within_pin_budget(
    store: SummaryStore, summarizer: RecordingSummarizer, is_async: bool
) -> None:
    pins = [pinned(HumanMessage(f"rule {n}: " + "r" * 400, id=f"rule{n}")) for n in range(3)]
    size = estimate_tokens([pins[0]])
    config = {**SMALL, "trigger": {"type": "tokens", "value": 1500}, "pin_budget": 2 * size}
    agent = Agent(store, summarizer, config, is_async=is_async)
    await agent.send(SystemMessage("You plan trips.", id="sys"), *pins)
    for turn in range(16):
        output, report = await agent.send(question(turn))
    assert report.summary_id is not None
    rest = after_summary(output)
    assert [m.id for m in rest[:2]] == ["rule1", "rule2"]
    assert "rule0" not in [m.id for m in output]
    assert report.pinned_count == 2
    assert report.unpinned_over_budget == 1
    assert seen_by_summarizer(summarizer, "rule 0: ")
    assert not seen_by_summarizer(summarizer, "rule 1: ")
    assert not seen_by_summarizer(summarizer, "rule 2: ")


def read_turn(tag: str, size: int) -> list[BaseMessage]:
    """An assistant call and its large result."""
    ai = AIMessage(
        "",
        id=f"{tag}-ai",
        tool_calls=[{"name": "read", "args": {"k": tag}, "id": f"{tag}-c", "type": "tool_call"}],
    )
    result = ToolMessage(
        f"{tag} result: " + "x" * size + " END", tool_call_id=f"{tag}-c", name="read", id=f"{tag}-r"
    )
    return [ai, result]


PRUNING: dict[str, Any] = {
    "trigger": [{"type": "tokens", "value": 9000}, {"type": "messages", "value": 30}],
    "keep": {"type": "messages", "value": 6},
    "pruning": {
        "enabled": True,
        "min_prunable_tool_chars": 2000,
        "keep_last_assistants": 2,
        "soft_trim": {"max_chars": 1000, "head_chars": 300, "tail_chars": 300},
    },
}


async def test_pinned_results_are_never_pruned(
    store: SummaryStore, summarizer: RecordingSummarizer, is_async: bool
) -> None:
    turns = [read_turn(f"t{n}", 6000) for n in range(8)]
    turns[0][1] = pinned(turns[0][1])  # the oldest result: hard clear's first pick
    turns[3][0] = pinned(turns[3][0])  # a caller: its result is pinned with it
    originals = {turn[1].id: turn[1] for turn in turns}
    agent = Agent(store, summarizer, PRUNING, is_async=is_async)
    await agent.send(SystemMessage("You are a coding agent.", id="sys"), question(0, 40))
    for turn in turns:
        output, report = await agent.send(*turn)
    assert report.pruned_count > 0
    sent = {m.id: m for m in output}
    assert sent["t0-r"] == originals["t0-r"]
    assert sent["t3-r"] == originals["t3-r"]
    pruned = [i for i, m in originals.items() if i in sent and sent[i] != m]
    assert "t1-r" in pruned and "t2-r" in pruned, pruned
    # More turns: whatever pruning or summary comes next, the pins stay as they are.
    for n in range(8, 20):
        output, report = await agent.send(*read_turn(f"t{n}", 6000))
        sent = {m.id: m for m in output}
        assert sent.get("t0-r") == originals["t0-r"], (n, report.action)
        assert sent.get("t3-r") == originals["t3-r"], (n, report.action)
    assert summarizer.call_count > 0, "a summary took over (the pins rescued after it)"
    assert not seen_by_summarizer(summarizer, "t0 result")


async def test_a_pinned_image_is_kept_past_media_keep_last(
    store: SummaryStore, summarizer: RecordingSummarizer, is_async: bool
) -> None:
    image = {"type": "image", "base64": b64(png(8, 8)), "mime_type": "image/png"}

    def photo(tag: str) -> HumanMessage:
        return HumanMessage([{"type": "text", "text": f"photo {tag}"}, image], id=tag)

    config = {"trigger": {"type": "tokens", "value": 50_000}, "pruning": {"media_keep_last": 1}}
    agent = Agent(store, summarizer, config, is_async=is_async)
    keep, other = pinned(photo("receipt")), photo("beach")
    await agent.send(SystemMessage("You keep receipts.", id="sys"), keep, other)
    output, report = await agent.send(question(1))
    sent = {m.id: m for m in output}
    assert report.media_replaced == 1
    assert sent["receipt"] == keep
    assert sent["beach"] != other


async def test_drop_oldest_never_drops_a_pinned_unit(store: SummaryStore, is_async: bool) -> None:
    failing = RecordingSummarizer(fail_with=RuntimeError("summarizer down"))
    config = {"context_window": 2000, "keep": {"type": "messages", "value": 4}}
    agent = Agent(store, failing, config, is_async=is_async)
    batch = [
        pinned(tool_batch("contract", 1, size=200)[0]),
        *tool_batch("contract", 1, size=200)[1:],
    ]
    await agent.send(SystemMessage("You plan trips.", id="sys"), question(0), *batch)
    for turn in range(1, 20):
        output, report = await agent.send(question(turn, 300))
    assert report.action == "failed"
    assert report.dropped_count > 0
    ids = [m.id for m in output]
    assert ids[1:3] == ["contract-ai", "contract-r0"], ids
    assert "h1" not in ids


@pytest.mark.parametrize("language", ["chinese", "russian"])
async def test_a_reused_summary_gives_the_same_bytes(
    store: SummaryStore, summarizer: RecordingSummarizer, is_async: bool, language: str
) -> None:
    text = REQUIREMENTS[language]
    history: list[BaseMessage] = [SystemMessage("You plan trips.", id="sys")]
    history += [question(0), pinned(HumanMessage(text, id="req")), AIMessage("ok", id="a0")]
    history += [*tool_batch("fare", 2), pinned(HumanMessage("window seat", id="seat"))]
    for turn in range(1, 14):
        history += [question(turn), AIMessage(f"answer {turn} " + "a" * 200, id=f"a{turn}")]
    config = {**SMALL, "keep_user_messages": {"type": "tokens", "value": 150}}

    async def run(graph: Any) -> tuple[list[BaseMessage], Any]:
        if is_async:
            result = await graph.ainvoke(graph_input(history), THREAD)
        else:
            result = await asyncio.to_thread(graph.invoke, graph_input(history), THREAD)
        return result["llm_input_messages"], result["compaction"]

    first, report = await run(create_compaction_graph(config, model=summarizer, store=store))
    assert report.action == "summarized"
    assert report.pinned_count == 2
    assert [m.id for m in after_summary(first)][:2] == ["req", "seat"]
    # Another graph (another process's memory) reads the rescued ids from the store.
    fresh = create_compaction_graph(config, model=RecordingSummarizer(), store=store)
    again, reused = await run(fresh)
    assert reused.action == "reused"
    assert again == first
    assert [m.model_dump_json() for m in again] == [m.model_dump_json() for m in first]
    assert (reused.pinned_count, reused.unpinned_over_budget) == (2, 0)
    assert summarizer.call_count == 1


async def pin(store: SummaryStore, is_async: bool, ids: list[str], *, unpin: bool = False) -> None:
    """Pin or unpin through the store's sync methods (off the loop) or their async twins."""
    if is_async:
        await (store.aunpin_messages if unpin else store.apin_messages)("t", ids)
    else:
        await asyncio.to_thread(store.unpin_messages if unpin else store.pin_messages, "t", ids)


async def test_pins_by_id_in_the_store_then_unpinned_are_folded_in(
    summary_store: SummaryStore, summarizer: RecordingSummarizer, is_async: bool
) -> None:
    text = REQUIREMENTS["chinese"]
    requirement = HumanMessage(text, id="需求-1")  # a non-ASCII id, as the store keeps it
    agent = Agent(summary_store, summarizer, SMALL, is_async=is_async)
    await agent.send(SystemMessage("You plan trips.", id="sys"), question(0), requirement)
    await pin(summary_store, is_async, ["需求-1"])
    first = None
    for turn in range(1, 12):
        output, report = await agent.send(question(turn))
        if report.summary_id is not None:
            first = first or report.summary_id
            assert after_summary(output)[0] == requirement
            assert report.pinned_count == 1
    assert first is not None
    assert not seen_by_summarizer(summarizer, text)

    await pin(summary_store, is_async, ["需求-1"], unpin=True)
    for turn in range(12, 30):
        output, report = await agent.send(question(turn))
        if report.summary_id not in (None, first) and report.action == "summarized":
            break
    assert report.action == "summarized", "a new summary after the unpin"
    assert "需求-1" not in [m.id for m in output]
    assert report.pinned_count == 0
    assert text in summarizer.calls[-1].transcript, "folded into the next summary"


async def test_a_result_pinned_in_the_store_after_pruning_is_sent_whole_again(
    summary_store: SummaryStore, summarizer: RecordingSummarizer, is_async: bool
) -> None:
    turns = [read_turn(f"t{n}", 6000) for n in range(6)]
    agent = Agent(summary_store, summarizer, PRUNING, is_async=is_async)
    await agent.send(SystemMessage("You are a coding agent.", id="sys"), question(0, 40))
    for turn in turns:
        output, _ = await agent.send(*turn)
    sent = {m.id: m for m in output}
    assert sent["t1-r"] != turns[1][1], "pruned before the pin"
    await pin(summary_store, is_async, ["t1-r"])
    output, _ = await agent.send(question(1, 40))
    sent = {m.id: m for m in output}
    assert sent["t1-r"] == turns[1][1]
    assert sent["t2-r"] != turns[2][1], "the others stay pruned"
    again, _ = await agent.send(question(2, 40))
    assert again[: len(output)] == output, "the same bytes on the next call"
