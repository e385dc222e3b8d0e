"""What people and agents change in the store reaches the thread's next call, in any process.

A request to compact (``SummaryStore.request_compaction``) forces the next call and is consumed
once; an edited summary (``edit_summary``) is what the next call sends, byte for byte after
that, also from a graph that held the old one; a revoked summary (``revoke_summary``) is never
sent again and the next call over the trigger makes a new one, an update of the version before.
SQLite and PostgreSQL, sync and async; each graph has its own memory, as a process does.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Annotated, Any
from uuid import uuid4

import pytest
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph

KEEP = 4
QUIET: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 5000},
    "keep": {"type": "messages", "value": KEEP},
}
SMALL: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 300},
    "keep": {"type": "messages", "value": KEEP},
}
EDITED = "Goal: book the trip to 北京. Budget under 5 000 € (бюджет). Edited by a person."


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


class Agent:
    """A parent graph ``compaction -> model`` that records what the model would get."""

    def __init__(self, store: SummaryStore, config: dict[str, Any], thread: str) -> None:
        self.summarizer = RecordingSummarizer()
        self.seen: list[list[BaseMessage]] = []
        self.reports: list[CompactionReport] = []
        self.config: RunnableConfig = {"configurable": {"thread_id": thread}}

        def model(state: State) -> dict[str, Any]:
            self.seen.append(list(state["llm_input_messages"]))
            report = state.get("compaction")
            assert report is not None
            self.reports.append(report)
            return {}

        builder = StateGraph(State)
        compaction = create_compaction_graph(config, model=self.summarizer, store=store)
        builder.add_node("compaction", compaction)
        builder.add_node("model", model)
        builder.add_edge(START, "compaction")
        builder.add_edge("compaction", "model")
        self.graph: Any = builder.compile(checkpointer=InMemorySaver())

    async def say(self, messages: list[BaseMessage], is_async: bool) -> CompactionReport:
        state: dict[str, Any] = {"messages": messages}
        if is_async:
            await self.graph.ainvoke(state, self.config)
        else:  # in a worker thread, as a sync caller runs it (blockbuster guards the loop)
            await asyncio.to_thread(self.graph.invoke, state, self.config)
        return self.reports[-1]


def _turns(first: int, count: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    for turn in range(first, first + count):
        messages.append(HumanMessage(f"turn {turn}: поездка в 北京, день {turn} " + "w " * 25))
        messages.append(AIMessage(f"answer {turn}: " + "a " * 25))
    return messages


async def _call(store: SummaryStore, is_async: bool, name: str, *args: Any, **kw: Any) -> Any:
    if is_async:
        return await getattr(store, f"a{name}")(*args, **kw)
    return await asyncio.to_thread(getattr(store, name), *args, **kw)


@pytest.fixture
async def stores(store_url: str) -> Any:
    """Two SummaryStore objects on one database: the agent's and a person's (a UI, the CLI)."""
    opened = [SummaryStore(store_url), SummaryStore(store_url)]
    yield opened
    for store in opened:
        await store.aclose()


# -- requests ----------------------------------------------------------------------------------


async def test_a_request_forces_the_next_call_once(
    stores: list[SummaryStore], is_async: bool
) -> None:
    store, person = stores
    thread = f"req-{uuid4().hex[:8]}"
    agent = Agent(store, QUIET, thread)
    assert (await agent.say(_turns(0, 6), is_async)).action == "passthrough"
    await _call(person, is_async, "request_compaction", thread, instruction="keep the 预算 figures")

    report = await agent.say(_turns(6, 1), is_async)
    assert report.action == "summarized"
    assert report.triggers_fired == ("force",)
    assert agent.summarizer.call_count == 1
    assert "keep the 预算 figures" in agent.summarizer.calls[0].prompt
    assert agent.seen[-1][0].name == "summary"
    assert len(agent.seen[-1]) == 1 + KEEP

    # Consumed: the next call is not forced again; what was compacted stays compacted (the
    # summary serves under the trigger), in this process and in a fresh one alike.
    report = await agent.say(_turns(7, 1), is_async)
    assert agent.summarizer.call_count == 1
    assert report.triggers_fired == ()
    assert report.action == "reused"
    summary = agent.seen[-1][0]
    assert summary.name == "summary"
    other = Agent(person, QUIET, thread)
    history = (await agent.graph.aget_state(agent.config)).values["messages"]
    assert (await other.say(history, is_async)).action == "reused"
    assert other.seen[-1][0] == summary
    assert other.summarizer.call_count == 0


async def test_two_workers_consume_one_request_once(
    stores: list[SummaryStore], is_async: bool
) -> None:
    store, person = stores
    thread = f"two-{uuid4().hex[:8]}"
    first, second = Agent(store, QUIET, thread), Agent(person, QUIET, thread)
    history = _turns(0, 6)
    await _call(person, is_async, "request_compaction", thread)
    reports = await asyncio.gather(first.say(history, is_async), second.say(history, is_async))
    actions = sorted(r.action for r in reports)
    # The other passes through, or reuses the summary if it looks after it is stored.
    assert actions in (["passthrough", "summarized"], ["reused", "summarized"])
    assert first.summarizer.call_count + second.summarizer.call_count == 1


@pytest.mark.slow  # another process: seconds
def test_a_request_from_another_process_reaches_the_next_call(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'steer.db'}"
    store = SummaryStore(url)
    agent = Agent(store, QUIET, "proc")
    agent.graph.invoke({"messages": _turns(0, 6)}, agent.config)
    first = agent.reports[-1]
    assert first.action == "passthrough"
    code = (
        "from langgraph_compaction import SummaryStore;"
        f"SummaryStore({url!r}).request_compaction('proc', instruction='garder les dates')"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    agent.graph.invoke({"messages": _turns(6, 1)}, agent.config)
    assert agent.reports[-1].action == "summarized"
    assert "garder les dates" in agent.summarizer.calls[-1].prompt
    store.close()


# -- edit and revoke ----------------------------------------------------------------------------


async def _summarized(agent: Agent, is_async: bool) -> CompactionReport:
    report = await agent.say(_turns(0, 8), is_async)
    assert report.action == "summarized"
    report = await agent.say(_turns(8, 1), is_async)
    assert report.action == "reused"  # the summary is held: the edit must displace it
    return report


async def test_an_edited_summary_is_what_every_later_call_sends(
    stores: list[SummaryStore], is_async: bool
) -> None:
    store, person = stores
    thread = f"edit-{uuid4().hex[:8]}"
    agent = Agent(store, SMALL, thread)
    await _summarized(agent, is_async)
    held = agent.seen[-1][0]
    assert held.name == "summary" and EDITED not in str(held.content)

    edited = await _call(person, is_async, "edit_summary", thread, EDITED)
    assert edited.kind == "edited"
    report = await agent.say(_turns(9, 1), is_async)
    assert report.summary_id == edited.id
    first = agent.seen[-1][0]
    assert EDITED in str(first.content)
    await agent.say(_turns(10, 1), is_async)
    assert agent.seen[-1][0] == first  # byte for byte, call after call
    calls = agent.summarizer.call_count

    # Another process (fresh memory) reuses the edited text too, without a summary call.
    other = Agent(person, SMALL, thread)
    history = (await agent.graph.aget_state(agent.config)).values["messages"]  # same ids
    await other.say(history, is_async)
    assert other.seen[-1][0] == first
    assert other.summarizer.call_count == 0
    assert agent.summarizer.call_count == calls


async def test_a_revoked_summary_is_never_sent_again(
    stores: list[SummaryStore], is_async: bool
) -> None:
    store, person = stores
    thread = f"revoke-{uuid4().hex[:8]}"
    agent = Agent(store, SMALL, thread)
    await _summarized(agent, is_async)
    revoked_id = agent.reports[-1].summary_id
    calls = agent.summarizer.call_count

    assert await _call(person, is_async, "revoke_summary", thread) == 1
    report = await agent.say(_turns(9, 1), is_async)
    assert report.action == "summarized"
    assert report.summary_id != revoked_id
    assert agent.summarizer.call_count == calls + 1
    rows = await _call(person, is_async, "list_summaries", thread)
    assert [r.revoked_at is not None for r in rows] == [True, False]
    assert rows[-1].parent_id is None  # no version before the revoked one: a first summary
    assert "turn 0" in agent.summarizer.calls[-1].transcript  # made from the originals


async def test_a_forced_summary_serves_every_worker_under_the_trigger(
    stores: list[SummaryStore], is_async: bool
) -> None:
    store, other_store = stores
    thread = f"forced-{uuid4().hex[:8]}"
    agent = Agent(store, QUIET, thread)
    await agent.say(_turns(0, 6), is_async)
    forced: RunnableConfig = {"configurable": {"thread_id": thread, "compaction": {"force": True}}}
    state: dict[str, Any] = {"messages": _turns(6, 1)}
    if is_async:
        await agent.graph.ainvoke(state, forced)
    else:
        await asyncio.to_thread(agent.graph.invoke, state, forced)
    assert agent.reports[-1].action == "summarized"
    summary = agent.seen[-1][0]

    # A worker that never held it (its own memory) sends the same input under the trigger.
    other = Agent(other_store, QUIET, thread)
    history = (await agent.graph.aget_state(agent.config)).values["messages"]
    report = await other.say([*history, *_turns(7, 1)], is_async)
    assert report.action == "reused" and report.triggers_fired == ()
    assert other.seen[-1][0] == summary
    assert other.summarizer.call_count == 0
