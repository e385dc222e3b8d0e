"""The other two ways in: create_agent middleware and the prebuilt agent's pre_model_hook.

Both run the compaction subgraph of ``create_compaction_graph`` (one implementation); these
tests drive real agents over many turns with a SQLite checkpointer and check what persists.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from fakes import FakeToolCallingModel, RecordingSummarizer, ai_tool_call, message_text
from langchain.agents import create_agent
from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from langgraph_compaction import (
    CompactionMiddleware,
    CompactionReport,
    SummaryStore,
    create_compaction_graph,
)
from langgraph_compaction.errors import CompactionConfigError

CONFIG = {"trigger": {"type": "tokens", "value": 1500}, "keep": {"type": "messages", "value": 4}}
QUIET = {"trigger": {"type": "tokens", "value": 1400}, "keep": {"type": "messages", "value": 4}}
"""A trigger ten short turns stay under (about 1,050 tokens), unless something else counts."""
LONG_TEXT = "Consult this before answering. " * 70  # about 2,200 characters, 550 tokens


@tool
def lookup(query: str) -> str:
    """Look a term up in the team wiki."""
    return f"wiki entry for {query}: " + "x" * 200


@tool(description="Search the archive. " + LONG_TEXT)
def archive_search(query: str) -> str:
    return f"archive hit for {query}"


def _say(turn: int, prefix: str = "") -> Any:  # each agent types its input differently
    return {"messages": [HumanMessage(f"{prefix}turn {turn}: " + "w" * 300)]}


def _thread(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as checkpointer:
        yield checkpointer


def _tool_loop_model() -> FakeToolCallingModel:
    """Calls `lookup` on the first turn, answers, then echoes."""
    return FakeToolCallingModel(
        script=[ai_tool_call("lookup", {"query": "compaction"}, "call-1"), "found it"]
    )


# -- create_agent middleware -----------------------------------------------------------------


def test_middleware_compacts_the_request_never_the_state(
    store: SummaryStore, saver: SqliteSaver
) -> None:
    agent_model = _tool_loop_model()
    summarizer = RecordingSummarizer()
    agent = create_agent(
        agent_model,
        tools=[lookup],
        middleware=[CompactionMiddleware(CONFIG, model=summarizer, store=store)],
        checkpointer=saver,
    )
    for turn in range(32):
        agent.invoke(_say(turn), _thread("mw"))
    state = agent.get_state(_thread("mw")).values
    assert len(state["messages"]) == 32 * 2 + 2  # every turn, the tool call and its result
    assert any(isinstance(m, ToolMessage) for m in state["messages"])
    assert not any(m.name == "summary" for m in state["messages"])
    assert set(state) == {"messages"}  # nothing of the compaction is checkpointed
    assert agent_model.saw_summary()
    assert len(agent_model.last_messages) < len(state["messages"])
    assert summarizer.call_count >= 1
    assert all("nostream" in call.tags for call in summarizer.calls)
    assert store.list_summaries("mw")


async def test_middleware_async_path(store: SummaryStore, tmp_path: Path) -> None:
    agent_model = _tool_loop_model()
    summarizer = RecordingSummarizer()
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        agent = create_agent(
            agent_model,
            tools=[lookup],
            middleware=[CompactionMiddleware(CONFIG, model=summarizer, store=store)],
            checkpointer=saver,
        )
        for turn in range(30):
            await agent.ainvoke(_say(turn), _thread("amw"))
        messages = (await agent.aget_state(_thread("amw"))).values["messages"]
    assert len(messages) == 30 * 2 + 2
    assert agent_model.saw_summary()
    assert (await store.alist_summaries("amw"))[0].model == "recording-summarizer"
    await store.aclose()


def test_middleware_events_reach_a_subgraphs_stream(
    store: SummaryStore, saver: SqliteSaver
) -> None:
    agent = create_agent(
        FakeToolCallingModel(),
        tools=[],
        middleware=[CompactionMiddleware(CONFIG, model=RecordingSummarizer(), store=store)],
        checkpointer=saver,
    )
    events: list[str] = []
    for turn in range(20):
        for _, event in agent.stream(
            _say(turn), _thread("events"), stream_mode="custom", subgraphs=True
        ):
            assert isinstance(event, dict)
            events.append(event["type"])
    assert "context_compacting" in events
    assert events.index("context_compacting") < events.index("context_compacted")


@pytest.mark.parametrize("extra", ["tools", "system_prompt"])
def test_middleware_counts_the_requests_tools_and_system_prompt(
    store: SummaryStore, extra: str
) -> None:
    def run(with_extra: bool) -> FakeToolCallingModel:
        agent_model = FakeToolCallingModel()
        kwargs: dict[str, Any] = {}
        if with_extra and extra == "tools":
            kwargs["tools"] = [archive_search]
        if with_extra and extra == "system_prompt":
            kwargs["system_prompt"] = LONG_TEXT
        agent = create_agent(
            agent_model,
            middleware=[CompactionMiddleware(QUIET, model=RecordingSummarizer(), store=store)],
            **kwargs,
        )
        messages: list[AnyMessage] = []
        for turn in range(10):
            messages = agent.invoke({"messages": [*messages, *_say(turn, extra)["messages"]]})[
                "messages"
            ]
        return agent_model

    assert not run(with_extra=False).saw_summary()  # the turns alone stay under the trigger
    assert run(with_extra=True).saw_summary()  # with what the request adds, they do not


def test_middleware_keeps_threads_apart(store: SummaryStore, saver: SqliteSaver) -> None:
    summarizer = RecordingSummarizer()
    agent = create_agent(
        FakeToolCallingModel(),
        tools=[],
        middleware=[CompactionMiddleware(CONFIG, model=summarizer, store=store)],
        checkpointer=saver,
    )
    for turn in range(20):
        agent.invoke(_say(turn, "alpha "), _thread("alpha"))
        agent.invoke(_say(turn, "beta "), _thread("beta"))
    alpha, beta = store.list_summaries("alpha"), store.list_summaries("beta")
    assert alpha and beta
    assert beta[0].kind == "initial" and beta[0].parent_id is None
    assert {r.id for r in alpha}.isdisjoint(r.id for r in beta)
    for call in summarizer.calls:  # each summary call saw one thread only
        assert ("alpha" in call.transcript) != ("beta" in call.transcript)


def test_middleware_uses_the_run_model_when_no_summarizer_is_given(
    store: SummaryStore, saver: SqliteSaver
) -> None:
    agent_model = FakeToolCallingModel(model_name="the-agent")
    agent = create_agent(
        agent_model,
        tools=[],
        middleware=[CompactionMiddleware(CONFIG, store=store)],
        checkpointer=saver,
    )
    for turn in range(20):
        agent.invoke(_say(turn), _thread("self"))
    records = store.list_summaries("self")
    assert records and records[0].model == "the-agent"
    summary_calls = [
        call for call in agent_model.calls if "<conversation>" in message_text(call[-1])
    ]
    assert summary_calls  # the agent's own model wrote the summary
    assert agent_model.saw_summary()


def test_middleware_prefers_an_explicit_fallback_model(
    store: SummaryStore, saver: SqliteSaver
) -> None:
    fallback = RecordingSummarizer(model_name="backup")
    middleware = CompactionMiddleware(
        CONFIG,
        model=RecordingSummarizer(fail_with=RuntimeError("summarizer down")),
        fallback_model=fallback,
        store=store,
    )
    agent = create_agent(
        FakeToolCallingModel(),
        tools=[],
        middleware=[middleware],
        checkpointer=saver,
    )
    for turn in range(20):
        agent.invoke(_say(turn), _thread("backup"))
    assert fallback.call_count >= 1
    assert store.list_summaries("backup")[0].model == "backup"


NULL_TRIGGER = {"trigger": None, "keep": {"type": "messages", "value": 4}}
"""Fires when the context no longer fits the window: only a window says when."""


def test_middleware_checks_at_construction_what_needs_no_run_model(store: SummaryStore) -> None:
    with pytest.raises(CompactionConfigError, match="namespace must be a non-empty string"):
        CompactionMiddleware(CONFIG, model=RecordingSummarizer(), store=store, namespace="")
    with pytest.raises(CompactionConfigError) as raised:
        CompactionMiddleware(NULL_TRIGGER, fallback_model=RecordingSummarizer(), store=store)
    assert str(raised.value) == (
        "CompactionMiddleware: a null trigger (fire when the context no longer fits the window) "
        "needs the model's context window, and fallback_model 'recording-summarizer' has no "
        "profile giving max_input_tokens: set context_window in the config, or pass a "
        "fallback_model whose profile does"
    )
    with pytest.raises(CompactionConfigError, match="namespace"):  # checked despite the window
        CompactionMiddleware(NULL_TRIGGER, store=store, namespace="")
    CompactionMiddleware({**NULL_TRIGGER, "context_window": 2000}, store=store)
    CompactionMiddleware(NULL_TRIGGER, store=store)  # the agent's model may give the window


@pytest.mark.parametrize(
    "config",
    [
        NULL_TRIGGER,
        {"trigger": {"type": "fraction", "value": 0.5}},
        {"trigger": {"type": "remaining_tokens", "value": 100}},
        {"keep": {"type": "fraction", "value": 0.3}, "enabled": False},
    ],
    ids=["null-trigger", "fraction-trigger", "remaining-tokens", "fraction-keep"],
)
def test_middleware_first_call_names_the_model_and_the_fix_when_no_window_is_known(
    store: SummaryStore, saver: SqliteSaver, config: dict[str, Any]
) -> None:
    middleware = CompactionMiddleware(config, model=RecordingSummarizer(), store=store)
    agent = create_agent(
        FakeToolCallingModel(model_name="no-profile"),
        tools=[],
        middleware=[middleware],
        checkpointer=saver,
    )
    with pytest.raises(CompactionConfigError) as raised:
        agent.invoke(_say(0), _thread("no-window"))
    message = str(raised.value)
    assert message.startswith("CompactionMiddleware: ")
    assert "the agent's model 'no-profile' has no profile giving max_input_tokens" in message
    assert "set context_window" in message and "fallback_model=" in message


async def test_middleware_first_async_call_names_the_fix(
    store: SummaryStore, tmp_path: Path
) -> None:
    middleware = CompactionMiddleware(NULL_TRIGGER, model=RecordingSummarizer(), store=store)
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        agent = create_agent(
            FakeToolCallingModel(), tools=[], middleware=[middleware], checkpointer=saver
        )
        with pytest.raises(CompactionConfigError, match="'fake-agent' has no profile"):
            await agent.ainvoke(_say(0), _thread("no-window"))
    await store.aclose()


def test_middleware_takes_the_window_from_the_agents_model_profile(
    store: SummaryStore, saver: SqliteSaver
) -> None:
    agent_model = FakeToolCallingModel(profile={"max_input_tokens": 2000})
    agent = create_agent(
        agent_model,
        tools=[],
        middleware=[CompactionMiddleware(NULL_TRIGGER, model=RecordingSummarizer(), store=store)],
        checkpointer=saver,
    )
    for turn in range(20):
        agent.invoke(_say(turn), _thread("profiled"))
    assert store.list_summaries("profiled")
    assert agent_model.saw_summary()


# -- the prebuilt react agent's pre_model_hook -------------------------------------------------


def _react_agent(hook: Any, model: FakeToolCallingModel, saver: SqliteSaver, **kwargs: Any) -> Any:
    from langgraph.prebuilt import create_react_agent

    return create_react_agent(
        model, tools=[lookup], pre_model_hook=hook, checkpointer=saver, **kwargs
    )


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # create_react_agent is deprecated
def test_pre_model_hook_of_the_prebuilt_agent(store: SummaryStore, saver: SqliteSaver) -> None:
    agent_model = _tool_loop_model()
    hook = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    agent = _react_agent(hook, agent_model, saver)
    for turn in range(32):
        agent.invoke(_say(turn), _thread("hook"))
    values = agent.get_state(_thread("hook")).values
    assert len(values["messages"]) == 32 * 2 + 2
    assert not any(m.name == "summary" for m in values["messages"])
    assert agent_model.saw_summary()
    # The prebuilt agent declares llm_input_messages as a plain key: its last value persists.
    assert values["llm_input_messages"] == agent_model.last_messages


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_pre_model_hook_with_untracked_keys_persists_messages_only(
    store: SummaryStore, saver: SqliteSaver
) -> None:
    from langgraph.prebuilt.chat_agent_executor import AgentState

    class State(AgentState):
        llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
        compaction: Annotated[CompactionReport | None, UntrackedValue]

    agent_model = _tool_loop_model()
    hook = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    agent = _react_agent(hook, agent_model, saver, state_schema=State)
    actions = []
    for turn in range(32):
        actions.append(agent.invoke(_say(turn), _thread("untracked"))["compaction"].action)
    values = agent.get_state(_thread("untracked")).values
    assert set(values) == {"messages"}
    assert len(values["messages"]) == 32 * 2 + 2
    assert agent_model.saw_summary()
    assert "summarized" in actions and "reused" in actions
