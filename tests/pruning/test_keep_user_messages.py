"""``keep_user_messages`` (DESIGN 6.11): evicted user turns stay verbatim after the summary.

The newest real user messages of the summarized prefix are kept, newest first within the
token budget, in their order (Codex's rule); the latest request is kept as always. Driven
through a parent agent graph (``agent_harness.Agent``), sync and async.
"""

# ruff: noqa: RUF001 (Chinese punctuation and Cyrillic letters in the conversation)

from __future__ import annotations

from typing import Any

import pytest
from agent_harness import Agent
from fakes import RecordingSummarizer
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langgraph_compaction import SummaryStore
from langgraph_compaction.content.estimate import estimate_tokens

TURNS = {
    "english": "Please also check the hotel near the station, turn {n}.",
    "chinese": "请再查一下车站附近的酒店，第{n}轮。",
    "russian": "Проверь ещё гостиницу у вокзала, ход {n}.",
}


def user_turn(language: str, n: int) -> HumanMessage:
    return HumanMessage(TURNS[language].format(n=n) + " " + "." * 150, id=f"u{n}")


def config(budget: int | None) -> dict[str, Any]:
    keep = {"type": "tokens", "value": budget} if budget is not None else None
    return {
        "trigger": {"type": "tokens", "value": 1200},
        "keep": {"type": "messages", "value": 4},
        "keep_user_messages": keep,
    }


def after_summary(output: list[BaseMessage]) -> list[BaseMessage]:
    assert output[1].name == "summary", [m.id for m in output[:3]]
    return output[2:]


@pytest.mark.parametrize("language", list(TURNS))
async def test_the_newest_user_messages_stay_within_the_budget_in_order(
    store: SummaryStore, summarizer: RecordingSummarizer, is_async: bool, language: str
) -> None:
    size = estimate_tokens([user_turn(language, 10)])
    agent = Agent(store, summarizer, config(3 * size), is_async=is_async, reply_size=300)
    await agent.send(SystemMessage("You plan trips.", id="sys"), user_turn(language, 0))
    sent: dict[str, BaseMessage] = {}
    for n in range(1, 14):
        message = user_turn(language, n)
        sent[f"u{n}"] = message
        output, report = await agent.send(message)
    assert report.summary_id is not None
    rest = after_summary(output)
    boundary = report.summarized_messages + 1  # the system message, then the prefix
    history = await agent.history()
    evicted_users = [m.id for m in history[1:boundary] if isinstance(m, HumanMessage)]
    kept = [m for m in rest[: report.rescued_count]]
    kept_ids = [m.id for m in kept]
    # the newest evicted user turns, three of them fit, in the history's order
    assert kept_ids == evicted_users[-3:], (kept_ids, evicted_users)
    assert all(m == sent[m.id or ""] for m in kept)
    transcripts = "".join(c.transcript for c in summarizer.calls)
    for older in evicted_users[:-3]:
        assert TURNS[language].format(n=(older or "u")[1:]) in transcripts, older
    latest = summarizer.calls[-1]
    for kept_message in kept:
        assert TURNS[language].format(n=(kept_message.id or "u")[1:]) not in latest.transcript
    assert output[-1] == sent["u13"]


async def test_keeping_stops_at_the_first_turn_that_does_not_fit(
    store: SummaryStore, summarizer: RecordingSummarizer, is_async: bool
) -> None:
    def turn(n: int) -> HumanMessage:
        long = n % 4 == 2  # a long turn now and then: older short ones would still fit
        return HumanMessage(
            TURNS["russian"].format(n=n) + " " + "." * (900 if long else 100), id=f"u{n}"
        )

    budget = 3 * estimate_tokens([turn(1)])
    agent = Agent(store, summarizer, config(budget), is_async=is_async, reply_size=300)
    await agent.send(SystemMessage("You plan trips.", id="sys"), turn(0))
    messages = {f"u{n}": turn(n) for n in range(14)}
    for n in range(1, 14):
        output, report = await agent.send(messages[f"u{n}"])
    assert report.summary_id is not None
    boundary = report.summarized_messages + 1
    evicted = [m for m in (await agent.history())[1:boundary] if isinstance(m, HumanMessage)]
    stop: list[str | None] = []
    skip: list[str | None] = []
    total_stop = total_skip = 0
    stopped = False
    for message in reversed(evicted):
        size = estimate_tokens([message])
        if not stopped and total_stop + size <= budget:
            stop.insert(0, message.id)
            total_stop += size
        else:
            stopped = True
        if total_skip + size <= budget:
            skip.insert(0, message.id)
            total_skip += size
    assert stop and stop != skip, (stop, skip)  # the conversation tells the two rules apart
    kept = after_summary(output)[: report.rescued_count]
    assert [m.id for m in kept] == stop
