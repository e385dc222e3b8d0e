"""A compaction request lives until the summary it asked for is stored (DESIGN 6.11).

A request (``SummaryStore.request_compaction``, the ``compact`` tool) or a run's ``force`` is
consumed in the transaction that stores its summary, never before: a review's interrupt and
resume, or a summary that fails, leave it pending, so the person's answer is stored and the
requester's instruction reaches the next attempt.
"""

from __future__ import annotations

from typing import Any

import pytest
from _doors import DOORS, MODES, Door, Mode, build_agent, history, run, stream_events, thread_config
from fakes import FakeToolCallingModel, RecordingSummarizer, SummarizerCall
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langgraph_compaction import SummaryStore
from langgraph_compaction.summary.ledger import split_ledger

# Far over six messages: only a request (or force) compacts these short histories.
QUIET = {"trigger": {"type": "messages", "value": 40}, "keep": {"type": "messages", "value": 2}}
REVIEWED = {**QUIET, "review": True}
EDITED = "Сводка, исправленная человеком: файл src/app_1.py, ошибка ValueError_1."
FOCUS = "keep the port numbers"


def _reply(call: SummarizerCall) -> str:
    return f"摘要 #{call.index}: " + " ".join(call.transcript.split())[:100]


def _summary_in(agent_model: FakeToolCallingModel) -> str | None:
    for message in agent_model.last_messages:
        if isinstance(message, HumanMessage) and message.name == "summary":
            return str(message.content)
    return None


def _interrupt_of(result: dict[str, Any]) -> dict[str, Any]:
    (pending,) = result["__interrupt__"]
    value: dict[str, Any] = pending.value
    return value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", DOORS)
async def test_a_reviewed_request_stores_the_persons_answer(
    store: SummaryStore, door: Door, mode: Mode
) -> None:
    summarizer, agent_model = RecordingSummarizer(reply=_reply), FakeToolCallingModel()
    agent = build_agent(door, agent_model, InMemorySaver(), store, REVIEWED, model=summarizer)
    thread = f"request-review-{door}-{mode}"
    config = thread_config(thread)
    await store.arequest_compaction(thread, instruction=FOCUS)

    first = await run(agent, {"messages": history(6)}, config, mode)
    assert _interrupt_of(first)["summary"].startswith("摘要 #1")
    assert FOCUS in summarizer.calls[0].prompt
    assert (await store.athread_state(thread, "default")).consecutive_failures == 0

    await run(agent, Command(resume={"action": "edit", "summary": EDITED}), config, mode)
    assert summarizer.call_count == 1  # the resumed run found its draft
    (record,) = await store.alist_summaries(thread)
    # the person's words, then the ledger of what they leave out (DESIGN 6.13)
    assert (split_ledger(record.summary)[0], record.kind) == (EDITED, "edited")
    assert record.summary in (_summary_in(agent_model) or "")

    # Consumed with the summary: the next call under the trigger is not compacted again.
    later = await run(agent, {"messages": [HumanMessage("дальше", id="h-next")]}, config, mode)
    assert "__interrupt__" not in later
    assert summarizer.call_count == 1
    assert len(await store.alist_summaries(thread)) == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", ["parent", "middleware"])
async def test_a_reviewed_force_resumes_with_a_plain_config(
    store: SummaryStore, door: Door, mode: Mode
) -> None:
    """``force`` in the first run's config only: the resume, with the thread alone, still
    finds the pending review and stores the person's answer."""
    summarizer, agent_model = RecordingSummarizer(reply=_reply), FakeToolCallingModel()
    agent = build_agent(door, agent_model, InMemorySaver(), store, REVIEWED, model=summarizer)
    thread = f"force-review-{door}-{mode}"
    forced = thread_config(thread, force=True, instruction=FOCUS)

    first = await run(agent, {"messages": history(6)}, forced, mode)
    draft = _interrupt_of(first)["summary"]
    await run(agent, Command(resume={"action": "accept"}), thread_config(thread), mode)
    assert summarizer.call_count == 1
    (record,) = await store.alist_summaries(thread)
    assert record.summary == draft
    assert draft in (_summary_in(agent_model) or "")
    later = await run(agent, {"messages": [HumanMessage("next", id="h-next")]}, forced, mode)
    assert "__interrupt__" in later  # forced again: a new review, as asked
    await run(agent, Command(resume={"action": "reject"}), thread_config(thread), mode)
    plain = thread_config(thread)
    later = await run(agent, {"messages": [HumanMessage("on", id="h-on")]}, plain, mode)
    assert "__interrupt__" not in later  # answered: nothing is held for the thread any more
    assert summarizer.call_count == 2


@pytest.mark.parametrize("mode", MODES)
async def test_a_rejected_request_is_consumed(store: SummaryStore, mode: Mode) -> None:
    summarizer, agent_model = RecordingSummarizer(reply=_reply), FakeToolCallingModel()
    agent = build_agent("parent", agent_model, InMemorySaver(), store, REVIEWED, model=summarizer)
    thread = f"request-reject-{mode}"
    config = thread_config(thread)
    await store.arequest_compaction(thread)
    await run(agent, {"messages": history(6)}, config, mode)
    await run(agent, Command(resume={"action": "reject"}), config, mode)
    assert await store.alist_summaries(thread) == []
    later = await run(agent, {"messages": [HumanMessage("next", id="h-next")]}, config, mode)
    assert "__interrupt__" not in later  # the person said no: the request is answered
    assert summarizer.call_count == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", DOORS)
async def test_a_failed_request_stays_pending_with_its_instruction(
    store: SummaryStore, door: Door, mode: Mode
) -> None:
    summarizer = RecordingSummarizer(
        reply=_reply, fail_with=RuntimeError("provider down"), fail_times=1
    )
    agent_model = FakeToolCallingModel()
    agent = build_agent(
        door,
        agent_model,
        InMemorySaver(),
        store,
        QUIET,
        model=summarizer,
        fallback_model=summarizer,
    )
    thread = f"request-fails-{door}-{mode}"
    config = thread_config(thread)
    await store.arequest_compaction(thread, instruction=FOCUS)

    events = await stream_events(agent, {"messages": history(6)}, config, mode)
    (failed,) = [e for e in events if e.get("type") == "context_compaction_failed"]
    assert failed["request"] == {"pending": True, "instruction": FOCUS}
    assert await store.alist_summaries(thread) == []

    # The next call is compacted as asked, with the request's instruction.
    more = {"messages": [HumanMessage("ещё", id="h-more")]}
    events = await stream_events(agent, more, config, mode)
    assert [e["type"] for e in events if e.get("type", "").startswith("context_")] == [
        "context_compacting",
        "context_compacted",
    ]
    assert FOCUS in summarizer.calls[-1].prompt
    (record,) = await store.alist_summaries(thread)
    assert (_summary_in(agent_model) or "").endswith(record.summary)

    # Consumed with that summary: the call after is not forced.
    await run(agent, {"messages": [HumanMessage("и ещё", id="h-again")]}, config, mode)
    assert summarizer.call_count == 2


async def test_the_breaker_still_applies_to_a_pending_request(store: SummaryStore) -> None:
    summarizer = RecordingSummarizer(reply=_reply, fail_with=RuntimeError("provider down"))
    agent_model = FakeToolCallingModel()
    config = {**QUIET, "max_failures": 2, "failure_cooldown_messages": 50}
    agent = build_agent(
        "parent",
        agent_model,
        InMemorySaver(),
        store,
        config,
        model=summarizer,
        fallback_model=summarizer,
    )
    thread = "request-breaker"
    await store.arequest_compaction(thread, instruction=FOCUS)
    messages = history(6)
    for turn in range(4):
        messages = [*messages, HumanMessage(f"turn {turn}", id=f"t{turn}")]
        await run(agent, {"messages": messages}, thread_config(thread), "async")
    assert summarizer.call_count == 2  # then the breaker holds; the request waits for it
    assert agent_model.call_count == 4
