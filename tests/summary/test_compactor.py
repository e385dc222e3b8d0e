"""Your own compactor (``summarize=``, DESIGN 6.11): used instead of the summary model, sync or
async on both paths, never on the event loop, bounded by ``summary_timeout``; its reply goes
through the same check, cap, events and storage, and a failure falls back to the fallback
model once."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
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
from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_compaction import SummaryStore
from langgraph_compaction.summary.compactor import compactor_name
from langgraph_compaction.summary.ledger import split_ledger


@dataclass
class Seen:
    """What one compactor call received, and where it ran."""

    messages: list[BaseMessage]
    previous: str | None
    instruction: str | None
    thread: threading.Thread
    on_loop: bool


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _summary_of(messages: Sequence[BaseMessage]) -> str:
    """A reply that is plainly a summary of them: it names their identifiers."""
    return "摘要 / summary: " + "; ".join(str(m.content) for m in messages)


@dataclass
class SyncCompactor:
    """A plain function compactor that records its calls (and may misbehave)."""

    reply: Any = None
    sleep: float = 0.0
    calls: list[Seen] = field(default_factory=list)

    def __call__(
        self, messages: list[BaseMessage], previous: str | None, instruction: str | None
    ) -> Any:
        self.calls.append(
            Seen(messages, previous, instruction, threading.current_thread(), _on_loop())
        )
        if self.sleep:
            time.sleep(self.sleep)  # blocking: blockbuster fails the test if it runs on the loop
        return _summary_of(messages) if self.reply is None else self.reply


@dataclass
class AsyncCompactor:
    """A coroutine function compactor that records its calls."""

    sleep: float = 0.0
    calls: list[Seen] = field(default_factory=list)

    async def __call__(
        self, messages: list[BaseMessage], previous: str | None, instruction: str | None
    ) -> str:
        self.calls.append(
            Seen(messages, previous, instruction, threading.current_thread(), _on_loop())
        )
        await asyncio.sleep(self.sleep)
        return _summary_of(messages)


def _agent(
    store: SummaryStore,
    compactor: Any,
    door: Door = "parent",
    *,
    model: Any = None,
    fallback_model: Any = None,
    **config: Any,
) -> Any:
    return build_agent(
        door,
        FakeToolCallingModel(),
        InMemorySaver(),
        store,
        {**TRIGGER, **config},
        model=model,
        fallback_model=fallback_model,
        summarize=compactor,
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", DOORS)
async def test_the_compactor_replaces_the_summary_model(
    store: SummaryStore, door: Door, mode: Mode
) -> None:
    compactor, summarizer = SyncCompactor(), RecordingSummarizer()
    # A small trim would take the model several calls: the compactor gets one with everything.
    agent = _agent(store, compactor, door, model=summarizer, trim_tokens_to_summarize=30)
    thread = f"replace-{door}-{mode}"
    config = thread_config(thread, instruction="Сохрани порты")
    await run(agent, {"messages": history(10)}, config, mode)
    assert summarizer.call_count == 0
    (seen,) = compactor.calls
    # The original messages, in order, as objects (not a rendered transcript).
    assert all(isinstance(m, BaseMessage) for m in seen.messages)
    evicted = [m.id for m in seen.messages]
    assert evicted == [m.id for m in history(10)][: len(evicted)] and len(evicted) >= 4
    assert seen.previous is None
    assert seen.instruction == "Сохрани порты"
    (record,) = await store.alist_summaries(thread)
    assert record.summary == _summary_of(seen.messages)
    assert record.model == compactor_name(compactor) == "custom:SyncCompactor"


@pytest.mark.parametrize("mode", MODES)
async def test_the_next_summary_gets_the_previous_text(store: SummaryStore, mode: Mode) -> None:
    compactor = SyncCompactor()
    agent = _agent(store, compactor, summary_instructions="Keep ids.")
    thread = f"previous-{mode}"
    await run(agent, {"messages": history(10)}, thread_config(thread), mode)
    first = (await store.alist_summaries(thread))[0]
    await run(agent, {"messages": history(8, start=10)}, thread_config(thread), mode)
    assert len(compactor.calls) == 2
    second = compactor.calls[1]
    assert second.previous == first.summary
    assert second.instruction == "Keep ids."
    assert second.messages[0].id not in {m.id for m in compactor.calls[0].messages}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_the_compactor_never_runs_on_the_event_loop(
    store: SummaryStore, mode: Mode, kind: str
) -> None:
    compactor: Any = SyncCompactor(sleep=0.01) if kind == "sync" else AsyncCompactor(sleep=0.01)
    agent = _agent(store, compactor)
    thread = f"where-{kind}-{mode}"
    await run(agent, {"messages": history(10)}, thread_config(thread), mode)
    (seen,) = compactor.calls
    # A plain function runs in a worker thread on both paths (blockbuster would catch its
    # time.sleep on the loop); a coroutine function is awaited on the caller's loop, or on
    # the sync path runs on a loop of its own, in a thread of its own.
    assert seen.on_loop is (kind == "async")
    on_callers_loop = kind == "async" and mode == "async"
    assert (seen.thread is threading.main_thread()) is on_callers_loop
    assert (await store.alist_summaries(thread))[0].model == compactor_name(compactor)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_compactor_past_summary_timeout_is_a_failure(
    store: SummaryStore, mode: Mode, kind: str
) -> None:
    compactor: Any = SyncCompactor(sleep=3) if kind == "sync" else AsyncCompactor(sleep=3)
    agent = _agent(store, compactor, summary_timeout=0.2)
    thread = f"slow-{kind}-{mode}"
    started = time.monotonic()
    events = await stream_events(agent, {"messages": history(10)}, thread_config(thread), mode)
    assert time.monotonic() - started < 2.5  # the call went ahead without waiting it out
    failed = [e for e in events if e["type"] == "context_compaction_failed"]
    assert len(failed) == 1
    assert "summary_timeout" in failed[0]["error"]
    assert compactor_name(compactor) in failed[0]["error"]
    assert failed[0]["consecutive_failures"] == 1
    assert await store.alist_summaries(thread) == []


@pytest.mark.parametrize(
    ("reply", "named"),
    [
        (RuntimeError("квота исчерпана"), "raised RuntimeError: квота исчерпана"),
        ("  \n ", "returned blank text"),
        (42, "returned int"),
        ("Please share the conversation you would like me to summarize.", "is not a summary"),
    ],
)
async def test_a_compactor_that_fails_stores_nothing(
    store: SummaryStore, reply: object, named: str
) -> None:
    def failing(messages: list[BaseMessage], previous: str | None, instruction: str | None) -> Any:
        if isinstance(reply, Exception):
            raise reply
        return reply

    agent = _agent(store, failing)
    thread = f"fails-{named[:6]}"
    events = await stream_events(agent, {"messages": history(10)}, thread_config(thread), "async")
    (failed,) = [e for e in events if e["type"] == "context_compaction_failed"]
    assert named in failed["error"]
    assert "custom:test_a_compactor_that_fails_stores_nothing.<locals>.failing" in failed["error"]
    assert await store.alist_summaries(thread) == []
    state = await store.athread_state(thread, "default")
    assert state.consecutive_failures == 1


@pytest.mark.parametrize("mode", MODES)
async def test_the_fallback_model_is_tried_once_after_the_compactor(
    store: SummaryStore, mode: Mode
) -> None:
    fallback, summarizer = RecordingSummarizer(model_name="agent-model"), RecordingSummarizer()
    compactor = SyncCompactor(reply="")
    agent = _agent(store, compactor, model=summarizer, fallback_model=fallback)
    thread = f"fallback-{mode}"
    await run(agent, {"messages": history(10)}, thread_config(thread, instruction="Be brief"), mode)
    assert len(compactor.calls) == 1
    assert summarizer.call_count == 0  # the compactor replaces it: not a second fallback
    (call,) = fallback.calls
    assert call.prompt.endswith("Additional instructions:\nBe brief")
    (record,) = await store.alist_summaries(thread)
    assert record.model == "agent-model"


async def test_the_compactors_reply_is_capped_and_announced(store: SummaryStore) -> None:
    long_reply = "Файл src/app_1.py: ошибка ValueError_1 исправлена. " * 400
    agent = _agent(store, SyncCompactor(reply=long_reply), max_summary_tokens=100)
    events = await stream_events(agent, {"messages": history(10)}, thread_config("capped"), "async")
    types = [e["type"] for e in events]
    assert types.index("context_compacting") < types.index("context_compacted")
    compacting = events[types.index("context_compacting")]
    compacted = events[types.index("context_compacted")]
    assert compacting["chunks"] == 1
    assert compacted["summary_cut"] is True and compacted["calls"] == 1
    (record,) = await store.alist_summaries("capped")
    prose = split_ledger(record.summary)[0]  # the cap is the prose's; the ledger has its own
    assert len(prose) < len(long_reply) / 10
    assert long_reply.startswith(prose.rstrip())
