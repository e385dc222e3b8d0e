"""CompactionMiddleware runs the compaction graph nested in the model node: its events reach a
subgraphs stream and stay out of another, its runs show to callbacks, on both paths."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_compaction import CompactionMiddleware, SummaryStore

CONFIG = {"trigger": {"type": "tokens", "value": 1500}, "keep": {"type": "messages", "value": 4}}
WORDS = ("Сводка разговора ", "总结对话 ", "ملخص المحادثة ")


def _say(turn: int) -> Any:
    return {"messages": [HumanMessage(f"turn {turn}: " + WORDS[turn % 3] * 40)]}


def _thread(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _agent(store: SummaryStore) -> tuple[Any, CompactionMiddleware]:
    middleware = CompactionMiddleware(CONFIG, model=RecordingSummarizer(), store=store)
    agent = create_agent(
        FakeToolCallingModel(), tools=[], middleware=[middleware], checkpointer=InMemorySaver()
    )
    return agent, middleware


def test_a_subgraphs_stream_still_gets_the_nested_graphs_events(store: SummaryStore) -> None:
    agent, _ = _agent(store)
    seen: list[tuple[tuple[str, ...], str]] = []
    for turn in range(20):
        for ns, event in agent.stream(
            _say(turn), _thread("nested"), stream_mode="custom", subgraphs=True
        ):
            seen.append((ns, event["type"]))
    types = [kind for _, kind in seen]
    assert types.index("context_compacting") < types.index("context_compacted")
    for ns, _ in seen:  # from inside the model node's nested graph
        assert len(ns) == 1 and ns[0].startswith("model:"), ns


def test_events_stay_out_of_a_stream_without_subgraphs(store: SummaryStore) -> None:
    agent, _ = _agent(store)
    seen: list[Any] = []
    for turn in range(20):
        seen.extend(agent.stream(_say(turn), _thread("quiet"), stream_mode="custom"))
    assert seen == []
    assert store.latest_summaries("quiet", "default", 1)  # it did compact


def test_async_path(store: SummaryStore) -> None:
    agent, _ = _agent(store)

    async def run() -> None:
        for turn in range(20):
            await agent.ainvoke(_say(turn), _thread("async"))

    asyncio.run(run())
    assert len(store.latest_summaries("async", "default", 5)) >= 2


class _Runs(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, name: str | None = None, **_: Any
    ) -> None:
        self.names.append(name or "")


def test_a_watched_run_still_shows_the_compaction_graph(store: SummaryStore) -> None:
    agent, _ = _agent(store)
    runs = _Runs()
    agent.invoke(_say(0), {**_thread("watched"), "callbacks": [runs]})
    assert "compaction" in runs.names and "measure" in runs.names
