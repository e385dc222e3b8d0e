"""A dynamic system prompt (``@dynamic_prompt``) that changes on every call: the middleware
counts it per request but keeps one memory and one job queue, so background pre-compaction
still runs one summary per thread at a time and stores one initial summary."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import PrivateAttr

from langgraph_compaction import CompactionMiddleware, SummaryStore

pytestmark = pytest.mark.slow  # a 0.5 s summarizer over 14 turns

CONFIG = {
    "trigger": {"type": "tokens", "value": 1500},
    "keep": {"type": "messages", "value": 4},
    "precompact_ratio": 0.5,
}
TURNS = 14
THREAD: RunnableConfig = {"configurable": {"thread_id": "dynamic"}}


class CountingSummarizer(RecordingSummarizer):
    """A slow summarizer (0.5 s) that counts how many of its calls run at once."""

    delay: float = 0.5
    _gauge: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _running: int = PrivateAttr(default=0)
    _most: int = PrivateAttr(default=0)

    @property
    def running(self) -> int:
        return self._running

    @property
    def most_at_once(self) -> int:
        return self._most

    def _enter(self) -> None:
        with self._gauge:
            self._running += 1
            self._most = max(self._most, self._running)

    def _leave(self) -> None:
        with self._gauge:
            self._running -= 1

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self._enter()
        try:
            return super()._generate(messages, *args, **kwargs)
        finally:
            self._leave()

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        self._enter()
        try:
            return await super()._agenerate(messages, *args, **kwargs)
        finally:
            self._leave()


@dynamic_prompt
def numbered_prompt(request: ModelRequest) -> str:
    """A prompt that changes on every model call: the turn it is at."""
    return f"You are a careful assistant. This is call {len(request.messages)} of the thread."


def _agent(store: SummaryStore, summarizer: BaseChatModel, checkpointer: Any) -> Any:
    middleware = CompactionMiddleware(CONFIG, model=summarizer, store=store)
    return create_agent(
        FakeToolCallingModel(),
        tools=[],
        middleware=[numbered_prompt, middleware],
        checkpointer=checkpointer,
    )


def _say(turn: int) -> Any:
    return {"messages": [HumanMessage(f"turn {turn}: " + "w" * 300)]}


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as checkpointer:
        yield checkpointer


def _initial_summaries(store: SummaryStore) -> int:
    return sum(r.kind == "initial" for r in store.list_summaries("dynamic"))


def test_one_background_summary_per_thread_whatever_the_prompt(
    store: SummaryStore, saver: SqliteSaver
) -> None:
    summarizer = CountingSummarizer()
    agent = _agent(store, summarizer, saver)
    for turn in range(TURNS):
        agent.invoke(_say(turn), THREAD)
    deadline = time.monotonic() + 60  # let a summary still in flight land
    while summarizer.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert summarizer.call_count >= 1
    assert summarizer.most_at_once == 1
    assert _initial_summaries(store) == 1


def test_one_background_summary_per_thread_whatever_the_prompt_async(
    store: SummaryStore, tmp_path: Path
) -> None:
    summarizer = CountingSummarizer()

    async def run() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.db")) as checkpointer:
            agent = _agent(store, summarizer, checkpointer)
            for turn in range(TURNS):
                await agent.ainvoke(_say(turn), THREAD)
            for _ in range(1200):  # up to 60 s for a summary still in flight
                if not summarizer.running:
                    break
                await asyncio.sleep(0.05)

    asyncio.run(run())
    assert summarizer.call_count >= 1
    assert summarizer.most_at_once == 1
    assert _initial_summaries(store) == 1
