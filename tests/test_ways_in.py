"""The other two ways in: create_agent middleware and the prebuilt agent's pre_model_hook."""

from __future__ import annotations

import pytest
from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_compaction import CompactionMiddleware, SummaryStore, create_compaction_graph

CONFIG = {"trigger": {"type": "tokens", "value": 1500}, "keep": {"type": "messages", "value": 4}}


def _say(turn: int) -> dict[str, list[HumanMessage]]:
    return {"messages": [HumanMessage(f"turn {turn}: " + "w" * 300)]}


def test_middleware_compacts_the_request_never_the_state(store: SummaryStore) -> None:
    agent_model = FakeToolCallingModel()
    summarizer = RecordingSummarizer()
    agent = create_agent(
        agent_model,
        tools=[],
        middleware=[CompactionMiddleware(CONFIG, model=summarizer, store=store)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "mw"}}
    for turn in range(30):
        agent.invoke(_say(turn), config)
    state = agent.get_state(config).values
    assert len(state["messages"]) == 60  # every user turn and reply is still in state
    assert not any(m.name == "summary" for m in state["messages"])
    assert agent_model.saw_summary()
    assert summarizer.call_count >= 1
    assert store.list_summaries("mw")


async def test_middleware_async_path(store: SummaryStore) -> None:
    agent_model = FakeToolCallingModel()
    agent = create_agent(
        agent_model,
        tools=[],
        middleware=[CompactionMiddleware(CONFIG, model=RecordingSummarizer(), store=store)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "amw"}}
    for turn in range(20):
        await agent.ainvoke(_say(turn), config)
    assert agent_model.saw_summary()
    assert len((await agent.aget_state(config)).values["messages"]) == 40
    await store.aclose()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_pre_model_hook_of_the_prebuilt_agent(store: SummaryStore) -> None:
    from langgraph.prebuilt import create_react_agent

    agent_model = FakeToolCallingModel()
    hook = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    agent = create_react_agent(
        agent_model, tools=[], pre_model_hook=hook, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "hook"}}
    for turn in range(30):
        agent.invoke(_say(turn), config)
    messages = agent.get_state(config).values["messages"]
    assert len(messages) == 60
    assert not any(m.name == "summary" for m in messages)
    assert agent_model.saw_summary()
