"""Per-run control: ``config["configurable"]["compaction"] = {"force", "skip", "instruction"}``.

Through each front door (a parent graph, the prebuilt agent's ``pre_model_hook``,
``create_agent`` with the middleware), sync and async: ``force`` compacts a call that no
trigger fires (the keep window still applies), ``skip`` passes an over-trigger call through
untouched, and a bad value fails the call with an error naming the key.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Annotated, Any

import pytest
from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from langgraph_compaction import (
    CompactionMiddleware,
    CompactionReport,
    SummaryStore,
    create_compaction_graph,
)
from langgraph_compaction.config.run_control import RunControl, run_control
from langgraph_compaction.errors import CompactionConfigError

KEEP = 4
CONFIG: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 5000},
    "keep": {"type": "messages", "value": KEEP},
}
"""A trigger the short conversations below never reach."""
SMALL: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 300},
    "keep": {"type": "messages", "value": KEEP},
}
"""A trigger they pass."""


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


def _history(turns: int = 6) -> list[BaseMessage]:
    history: list[BaseMessage] = []
    for turn in range(turns):
        history.append(HumanMessage(f"turn {turn}: книга {turn} и 预算 {turn} " + "w " * 30))
        history.append(AIMessage(f"answer {turn}: " + "a " * 30))
    return history


def _control(thread: str, **control: Any) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "compaction": control}}


def _parent(store: SummaryStore, summarizer: RecordingSummarizer, config: dict[str, Any]) -> Any:
    """compaction -> a node that records what the model would get."""
    seen: list[list[BaseMessage]] = []
    reports: list[CompactionReport] = []

    def model(state: State) -> dict[str, Any]:
        seen.append(list(state["llm_input_messages"]))
        report = state.get("compaction")
        assert report is not None
        reports.append(report)
        return {}

    builder = StateGraph(State)
    builder.add_node("compaction", create_compaction_graph(config, model=summarizer, store=store))
    builder.add_node("model", model)
    builder.add_edge(START, "compaction")
    builder.add_edge("compaction", "model")
    graph = builder.compile(checkpointer=InMemorySaver())
    graph.seen, graph.reports = seen, reports  # type: ignore[attr-defined]
    return graph


# -- parsing ---------------------------------------------------------------------------------


def test_parsing_the_control() -> None:
    assert run_control({}) == RunControl()
    assert run_control({"configurable": {"compaction": None}}) == RunControl()
    parsed = run_control(_control("t", force=True, instruction="  keep the 预算 figures "))
    assert parsed == RunControl(force=True, instruction="keep the 预算 figures")
    assert run_control(_control("t", skip=True)).skip


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("force", "must be a mapping"),
        ({"froce": True}, "unknown key 'froce'"),
        ({"force": "yes"}, "['force'] must be true or false"),
        ({"skip": 1}, "['skip'] must be true or false"),
        ({"force": True, "skip": True}, "both force and skip"),
        ({"instruction": 3}, "['instruction'] must be a string"),
    ],
)
def test_a_bad_control_fails_the_call_naming_the_key(
    value: object, words: str, store: SummaryStore
) -> None:
    graph = _parent(store, RecordingSummarizer(), CONFIG)
    config: RunnableConfig = {"configurable": {"thread_id": "bad", "compaction": value}}
    with pytest.raises(CompactionConfigError, match="compaction") as caught:
        graph.invoke({"messages": _history()}, config)
    assert words in str(caught.value)


# -- force and skip, parent graph --------------------------------------------------------------


async def _run(graph: Any, state: dict[str, Any], config: RunnableConfig, is_async: bool) -> Any:
    """``ainvoke``, or ``invoke`` in a worker thread, as a sync caller runs it (async tests
    run under blockbuster, which refuses a sync database call on the loop)."""
    if is_async:
        return await graph.ainvoke(state, config)
    return await asyncio.to_thread(graph.invoke, state, config)


async def test_force_compacts_under_every_trigger(store: SummaryStore, is_async: bool) -> None:
    summarizer = RecordingSummarizer()
    graph = _parent(store, summarizer, CONFIG)
    history = _history()
    await _run(graph, {"messages": history}, {"configurable": {"thread_id": "f"}}, is_async)
    assert graph.reports[-1].action == "passthrough"
    assert summarizer.call_count == 0

    await _run(graph, {"messages": []}, _control("f", force=True), is_async)
    report = graph.reports[-1]
    assert report.action == "summarized"
    assert report.triggers_fired == ("force",)
    assert summarizer.call_count == 1
    sent = graph.seen[-1]
    assert sent[0].name == "summary"
    assert [m.content for m in sent[-KEEP:]] == [m.content for m in history[-KEEP:]]
    assert len(sent) == 1 + KEEP  # the keep window still applies: the rest was summarized
    assert "turn 0" in summarizer.calls[0].transcript

    # Not forced any more: the summary serves (no trigger fires), nothing is made again.
    await _run(graph, {"messages": []}, {"configurable": {"thread_id": "f"}}, is_async)
    assert summarizer.call_count == 1
    assert graph.reports[-1].action in ("passthrough", "reused")
    if is_async:
        await store.aclose()


async def test_force_makes_a_new_summary_where_one_would_serve(
    store: SummaryStore, is_async: bool
) -> None:
    summarizer = RecordingSummarizer()
    graph = _parent(store, summarizer, SMALL)
    thread: RunnableConfig = {"configurable": {"thread_id": "again"}}
    await _run(graph, {"messages": _history(8)}, thread, is_async)
    assert graph.reports[-1].action == "summarized"
    await _run(graph, {"messages": _history(2)}, thread, is_async)
    served = graph.reports[-1]
    calls = summarizer.call_count

    await _run(graph, {"messages": []}, _control("again", force=True), is_async)
    forced = graph.reports[-1]
    assert forced.action == "summarized"
    assert summarizer.call_count == calls + 1
    assert forced.summary_version is not None and served.summary_version is not None
    assert forced.summary_version > served.summary_version
    if is_async:
        await store.aclose()


async def test_skip_passes_an_over_trigger_call_through_untouched(
    store: SummaryStore, is_async: bool
) -> None:
    summarizer = RecordingSummarizer()
    graph = _parent(store, summarizer, SMALL)
    history = _history(8)
    await _run(graph, {"messages": history}, _control("skip", skip=True), is_async)
    report = graph.reports[-1]
    assert report.action == "passthrough"
    assert report.tokens_before > 300  # the trigger would have fired
    assert [m.content for m in graph.seen[-1]] == [m.content for m in history]
    assert summarizer.call_count == 0
    assert await store.alist_summaries("skip") == []
    # The next call, not skipped, compacts as usual.
    await _run(graph, {"messages": []}, {"configurable": {"thread_id": "skip"}}, is_async)
    assert graph.reports[-1].action == "summarized"
    if is_async:
        await store.aclose()


# -- the other two front doors -----------------------------------------------------------------


def _last_input(model: FakeToolCallingModel) -> Sequence[BaseMessage]:
    return model.last_messages


async def test_force_and_skip_through_pre_model_hook(store: SummaryStore, is_async: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        summarizer = RecordingSummarizer()
        model = FakeToolCallingModel()
        hook = create_compaction_graph(CONFIG, model=summarizer, store=store)
        agent = create_react_agent(
            model, tools=[], pre_model_hook=hook, checkpointer=InMemorySaver()
        )
    history = _history()
    await _run(agent, {"messages": history}, _control("hook", skip=True), is_async)
    assert summarizer.call_count == 0
    await _run(agent, {"messages": [HumanMessage("go on")]}, _control("hook", force=True), is_async)
    assert summarizer.call_count == 1
    sent = _last_input(model)
    assert sent[0].name == "summary"
    assert sent[-1].content == "go on"
    if is_async:
        await store.aclose()


async def test_force_and_skip_through_the_middleware(store: SummaryStore, is_async: bool) -> None:
    summarizer = RecordingSummarizer()
    model = FakeToolCallingModel()
    agent = create_agent(
        model,
        tools=[],
        middleware=[CompactionMiddleware(SMALL, model=summarizer, store=store)],
        checkpointer=InMemorySaver(),
    )
    await _run(agent, {"messages": _history(8)}, _control("mw", skip=True), is_async)
    assert summarizer.call_count == 0
    assert len(_last_input(model)) == 16

    quiet = create_agent(
        model,
        tools=[],
        middleware=[CompactionMiddleware(CONFIG, model=summarizer, store=store)],
        checkpointer=InMemorySaver(),
    )
    await _run(quiet, {"messages": _history()}, _control("mw2", force=True), is_async)
    assert summarizer.call_count == 1
    assert _last_input(model)[0].name == "summary"
    if is_async:
        await store.aclose()
