"""Review (``review: true``, DESIGN 6.11): a new summary is put to a person before its first use.

The summarize node saves the draft, then calls LangGraph's ``interrupt()``; the resumed re-run
finds the draft (the summarizer is called once) and stores it, the person's edit, or nothing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from _doors import (
    DOORS,
    MODES,
    TRIGGER,
    Door,
    Mode,
    build_agent,
    history,
    run,
    stream_events,
    thread_config,
)
from fakes import FakeToolCallingModel, RecordingSummarizer, SummarizerCall
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

from langgraph_compaction import SummaryStore
from langgraph_compaction.errors import CompactionConfigError
from langgraph_compaction.summary.ledger import split_ledger
from langgraph_compaction.summary.review import REJECTED, review_payload

REVIEWED = {**TRIGGER, "review": True}
EDITED = "سجل المحادثة: الملف src/app_1.py — исправлено ValueError_1."


def _draft_text(call: SummarizerCall) -> str:
    return f"草稿 #{call.index}: " + " ".join(call.transcript.split())[:120]


def _summarizer() -> RecordingSummarizer:
    return RecordingSummarizer(reply=_draft_text)


def _summary_in(agent_model: FakeToolCallingModel) -> str | None:
    """The summary text the agent model's latest call received, if any."""
    for message in agent_model.last_messages:
        if isinstance(message, HumanMessage) and message.name == "summary":
            return str(message.content)
    return None


def _interrupt_of(result: dict[str, Any]) -> dict[str, Any]:
    (pending,) = result["__interrupt__"]
    value: dict[str, Any] = pending.value
    return value


ANSWERS: dict[str, dict[str, Any]] = {
    "accept": {"action": "accept"},
    "edit": {"action": "edit", "summary": EDITED},
    "reject": {"action": "reject"},
}


@pytest.mark.parametrize("action", list(ANSWERS))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", DOORS)
async def test_a_new_summary_waits_for_the_person(
    store: SummaryStore, door: Door, mode: Mode, action: str
) -> None:
    summarizer, agent_model = _summarizer(), FakeToolCallingModel()
    agent = build_agent(door, agent_model, InMemorySaver(), store, REVIEWED, model=summarizer)
    thread = f"review-{door}-{mode}-{action}"
    config = thread_config(thread)

    first = await run(agent, {"messages": history(10)}, config, mode)
    payload = _interrupt_of(first)
    draft = payload["summary"]  # the summarizer's text, then the ledger of what it left out
    assert split_ledger(draft)[0] == _draft_text(summarizer.calls[0])
    assert payload == {
        "type": "compaction_review",
        "thread_id": thread,
        "version": 1,
        "summary": draft,
        "integrity": payload["integrity"],
    }
    assert payload["integrity"]["identifiers"] > 0
    assert agent_model.call_count == 0  # the model waits with the person
    assert await store.alist_summaries(thread) == []

    await run(agent, Command(resume=ANSWERS[action]), config, mode)
    assert summarizer.call_count == 1  # the re-run found the draft
    assert agent_model.call_count == 1
    stored = await store.alist_summaries(thread)
    if action == "reject":
        assert stored == []
        assert _summary_in(agent_model) is None
    else:
        (record,) = stored
        expected = draft if action == "accept" else EDITED
        assert split_ledger(record.summary)[0] == split_ledger(expected)[0]
        assert record.kind == ("initial" if action == "accept" else "edited")
        assert record.model == "recording-summarizer"
        expected = record.summary  # an edit gets the ledger of what it leaves out
        assert expected in (_summary_in(agent_model) or "")

    # The next call: a stored summary is reused with no question; a rejected one is asked again.
    later = await run(agent, {"messages": [HumanMessage("продолжай", id="h-next")]}, config, mode)
    if action == "reject":
        assert _interrupt_of(later)["version"] == 1
        assert summarizer.call_count == 2
    else:
        assert "__interrupt__" not in later
        assert summarizer.call_count == 1
        assert agent_model.call_count == 2
        assert expected in (_summary_in(agent_model) or "")


async def test_a_rejected_summary_reports_a_failure_that_is_no_summarizer_failure(
    store: SummaryStore,
) -> None:
    agent = build_agent(
        "parent", FakeToolCallingModel(), InMemorySaver(), store, REVIEWED, model=_summarizer()
    )
    config = thread_config("rejected")
    await run(agent, {"messages": history(10)}, config, "async")
    events = await stream_events(agent, Command(resume={"action": "reject"}), config, "async")
    (failed,) = [e for e in events if e["type"] == "context_compaction_failed"]
    assert failed["error"] == REJECTED and failed["cause"] == "review"
    assert (await store.athread_state("rejected", "default")).consecutive_failures == 0


@pytest.mark.parametrize("mode", MODES)
async def test_the_next_summary_is_reviewed_with_its_version(
    store: SummaryStore, mode: Mode
) -> None:
    summarizer = _summarizer()
    agent = build_agent(
        "parent", FakeToolCallingModel(), InMemorySaver(), store, REVIEWED, model=summarizer
    )
    config = thread_config(f"versions-{mode}")
    await run(agent, {"messages": history(10)}, config, mode)
    await run(agent, Command(resume={"action": "accept"}), config, mode)
    result = await run(agent, {"messages": history(8, start=10)}, config, mode)
    payload = _interrupt_of(result)
    assert payload["version"] == 2
    assert split_ledger(payload["summary"])[0] == _draft_text(summarizer.calls[1])
    assert _draft_text(summarizer.calls[0]) in summarizer.calls[1].prompt  # an update
    await run(agent, Command(resume={"action": "accept"}), config, mode)
    records = await store.alist_summaries(f"versions-{mode}")
    assert [(r.version, r.kind) for r in records] == [(1, "initial"), (2, "update")]


def test_review_with_a_sqlite_checkpointer(store: SummaryStore, tmp_path: Path) -> None:
    summarizer = _summarizer()
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        agent = build_agent(
            "parent", FakeToolCallingModel(), saver, store, REVIEWED, model=summarizer
        )
        config = thread_config("sqlite-saver")
        first = agent.invoke({"messages": history(10)}, config)
        shown = split_ledger(_interrupt_of(first)["summary"])[0]
        assert shown == _draft_text(summarizer.calls[0])
        agent.invoke(Command(resume={"action": "edit", "summary": EDITED}), config)
    assert summarizer.call_count == 1
    (record,) = store.list_summaries("sqlite-saver")
    assert (split_ledger(record.summary)[0], record.kind) == (EDITED, "edited")


async def test_review_with_an_async_sqlite_checkpointer(
    store: SummaryStore, tmp_path: Path
) -> None:
    summarizer = _summarizer()
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        agent = build_agent(
            "middleware", FakeToolCallingModel(), saver, store, REVIEWED, model=summarizer
        )
        config = thread_config("async-sqlite-saver")
        first = await agent.ainvoke({"messages": history(10)}, config)
        assert _interrupt_of(first)["version"] == 1
        await agent.ainvoke(Command(resume={"action": "accept"}), config)
    assert summarizer.call_count == 1
    (record,) = await store.alist_summaries("async-sqlite-saver")
    assert split_ledger(record.summary)[0] == _draft_text(summarizer.calls[0])


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        ("yes", "must be a mapping"),
        ({"action": "approve"}, "action 'approve'"),
        ({"summary": "x"}, "has no 'action'"),
        ({"action": "edit"}, "needs the edited text"),
        ({"action": "edit", "summary": "  \n"}, "got blank text"),
        ({"action": "accept", "summary": "x"}, "unknown key 'summary'"),
    ],
)
async def test_an_answer_it_cannot_read_is_a_clear_error(
    store: SummaryStore, answer: object, named: str
) -> None:
    summarizer = _summarizer()
    agent = build_agent(
        "parent", FakeToolCallingModel(), InMemorySaver(), store, REVIEWED, model=summarizer
    )
    config = thread_config("bad-answer")
    await run(agent, {"messages": history(10)}, config, "async")
    with pytest.raises(CompactionConfigError, match="compaction_review") as caught:
        await run(agent, Command(resume=answer), config, "async")
    assert named in str(caught.value)
    assert await store.alist_summaries("bad-answer") == []


@pytest.mark.parametrize("review", [False, True])
def test_background_precompaction_prepares_nothing_under_review(
    store: SummaryStore, review: bool
) -> None:
    summarizer = _summarizer()
    config = {**TRIGGER, "review": review, "precompact_ratio": 0.5}
    agent = build_agent(
        "parent", FakeToolCallingModel(), InMemorySaver(), store, config, model=summarizer
    )
    result = agent.invoke({"messages": history(6)}, thread_config(f"background-{review}"))
    assert "__interrupt__" not in result  # six messages stay under the trigger
    deadline = time.monotonic() + 3
    while not review and summarizer.call_count == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    if review:
        time.sleep(0.3)  # time enough for a background job to have called the summarizer
    assert summarizer.call_count == (0 if review else 1)


async def test_a_summary_made_without_review_is_reused_with_no_question(
    store: SummaryStore,
) -> None:
    plain = build_agent(
        "parent", FakeToolCallingModel(), InMemorySaver(), store, TRIGGER, model=_summarizer()
    )
    config = thread_config("made-before")
    saver = InMemorySaver()
    await run(plain, {"messages": history(10)}, config, "async")
    summarizer, agent_model = _summarizer(), FakeToolCallingModel()
    reviewed = build_agent("parent", agent_model, saver, store, REVIEWED, model=summarizer)
    result = await run(reviewed, {"messages": history(11)}, config, "async")
    assert "__interrupt__" not in result
    assert summarizer.call_count == 0
    assert _summary_in(agent_model) is not None


def test_the_payload_is_what_the_store_and_the_server_take() -> None:
    """A lone surrogate or a NUL (a custom compactor's reply, a thread id) reaches the person
    as U+FFFD, as it is stored: the server's JSON encoder refuses a lone surrogate."""
    payload = review_payload("線程-\ud800", 3, "摘要 \x00 ملخص \udc80")
    assert payload == {
        "type": "compaction_review",
        "thread_id": "線程-\ufffd",
        "version": 3,
        "summary": "摘要 \ufffd ملخص \ufffd",
        "integrity": None,
    }
    json.dumps(payload).encode("utf-8")
