"""The three front doors, built alike for the steering tests (instructions, compactor, review).

``parent``: the subgraph as a node of a parent StateGraph; ``react``: the prebuilt agent's
``pre_model_hook``; ``middleware``: ``CompactionMiddleware`` in ``create_agent``. Each is a
real agent with a real checkpointer; ``run`` drives one sync (off the loop, in a thread) or
async, so one async test body covers both paths with blockbuster watching the loop.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from fakes import FakeToolCallingModel
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph, add_messages
from typing_extensions import TypedDict

from langgraph_compaction import (
    CompactionMiddleware,
    CompactionReport,
    SummaryStore,
    create_compaction_graph,
)
from langgraph_compaction.config.settings import Compactor

__all__ = [
    "DOORS",
    "MODES",
    "TRIGGER",
    "Door",
    "Mode",
    "build_agent",
    "history",
    "run",
    "stream_events",
    "thread_config",
]

Door = Literal["parent", "react", "middleware"]
Mode = Literal["sync", "async"]
DOORS: tuple[Door, ...] = ("parent", "react", "middleware")
MODES: tuple[Mode, ...] = ("sync", "async")

TRIGGER = {"trigger": {"type": "messages", "value": 8}, "keep": {"type": "messages", "value": 2}}
"""Fires on a ten-message history; the summary and what follows it stay under it for a while."""

_LINES = (
    "请检查文件 src/app_{n}.py 里的错误 ValueError_{n}",
    "سأراجع الملف src/app_{n}.py وأصلح الخطأ ValueError_{n}",
    "Проверь конфигурацию deploy_{n}.yaml, порт 80{n}",
)


class ParentState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


def history(count: int, start: int = 0) -> list[BaseMessage]:
    """``count`` alternating user and assistant messages (Chinese, Arabic, Russian), with ids."""
    messages: list[BaseMessage] = []
    for n in range(start, start + count):
        text = _LINES[n % len(_LINES)].format(n=n)
        if n % 2 == 0:
            messages.append(HumanMessage(text, id=f"h{n}"))
        else:
            messages.append(AIMessage(text, id=f"a{n}"))
    return messages


def thread_config(thread_id: str, **control: Any) -> RunnableConfig:
    """A run's config: the thread, and ``configurable.compaction`` when given."""
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if control:
        configurable["compaction"] = control
    return {"configurable": configurable}


def build_agent(
    door: Door,
    agent_model: FakeToolCallingModel,
    checkpointer: BaseCheckpointSaver[Any],
    store: SummaryStore,
    config: dict[str, Any],
    *,
    model: BaseChatModel | None = None,
    fallback_model: BaseChatModel | None = None,
    summarize: Compactor | None = None,
    system_prompt: str | None = None,
    tools: Sequence[BaseTool] = (),
) -> Any:
    """An agent of ``agent_model`` that compacts through ``door``.

    ``system_prompt`` and ``tools``: what the agent's model node adds to each call itself, as
    each door's own model node adds them (the parent's is written here the same way).
    """
    if door == "middleware":
        middleware = CompactionMiddleware(
            config, model=model, fallback_model=fallback_model, store=store, summarize=summarize
        )
        return create_agent(
            agent_model,
            tools=list(tools),
            system_prompt=system_prompt,
            middleware=[middleware],
            checkpointer=checkpointer,
        )
    graph = create_compaction_graph(
        config,
        model=model,
        fallback_model=fallback_model,
        store=store,
        summarize=summarize,
        tools=tools or None,
        system_prompt=system_prompt,
    )
    if door == "react":
        from langgraph.prebuilt import create_react_agent

        with warnings.catch_warnings():  # create_react_agent is deprecated, still supported
            warnings.simplefilter("ignore", DeprecationWarning)
            return create_react_agent(
                agent_model,
                tools=list(tools),
                prompt=system_prompt,
                pre_model_hook=graph,
                checkpointer=checkpointer,
            )
    bound = agent_model.bind_tools(list(tools)) if tools else agent_model
    head: list[BaseMessage] = [SystemMessage(content=system_prompt)] if system_prompt else []

    def agent(state: ParentState) -> dict[str, Any]:
        sent = state.get("llm_input_messages") or state["messages"]
        return {"messages": [bound.invoke([*head, *sent])]}

    async def aagent(state: ParentState) -> dict[str, Any]:
        sent = state.get("llm_input_messages") or state["messages"]
        return {"messages": [await bound.ainvoke([*head, *sent])]}

    builder = StateGraph(ParentState)
    builder.add_node("compaction", graph)
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent, name="agent"))
    builder.add_edge(START, "compaction")
    builder.add_edge("compaction", "agent")
    builder.add_edge("agent", END)
    return builder.compile(checkpointer=checkpointer)


async def run(agent: Any, value: Any, config: RunnableConfig, mode: Mode) -> dict[str, Any]:
    """One run: ``ainvoke`` on the loop, or ``invoke`` on a worker thread (the sync path)."""
    if mode == "async":
        result: dict[str, Any] = await agent.ainvoke(value, config)
    else:
        result = await asyncio.to_thread(agent.invoke, value, config)
    return result


async def stream_events(
    agent: Any, value: Any, config: RunnableConfig, mode: Mode
) -> list[dict[str, Any]]:
    """The custom stream events of one run (subgraphs included), in order."""

    def collect() -> list[dict[str, Any]]:
        return [
            event for _, event in agent.stream(value, config, stream_mode="custom", subgraphs=True)
        ]

    if mode == "sync":
        return await asyncio.to_thread(collect)
    return [
        event
        async for _, event in agent.astream(value, config, stream_mode="custom", subgraphs=True)
    ]
