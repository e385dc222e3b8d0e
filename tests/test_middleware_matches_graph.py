"""CompactionMiddleware and ``create_compaction_graph`` are one implementation: on the same
histories (under the trigger, over it, a summary made, then reused, then updated) the model
input and the ``compaction`` report of the middleware equal the subgraph's."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from conversations import graph_input
from fakes import FakeToolCallingModel, RecordingSummarizer, ai_tool_call
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_compaction import (
    CompactionMiddleware,
    CompactionReport,
    SummaryStore,
    create_compaction_graph,
)

CONFIG = {"trigger": {"type": "tokens", "value": 1500}, "keep": {"type": "messages", "value": 4}}
SYSTEM = "You answer from the wiki. " * 20
THREAD: RunnableConfig = {"configurable": {"thread_id": "same"}}


@tool
def lookup(query: str) -> str:
    """Look a term up in the team wiki."""
    return f"wiki entry for {query}: " + "x" * 200


class _Histories(AgentMiddleware):
    """The messages of each model request where it stands: outside the compaction middleware,
    the history; inside it, the model input."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.seen: list[list[BaseMessage]] = []
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        self.seen.append(list(request.messages))
        return handler(request)


class _Reports(BaseCallbackHandler):
    """The ``compaction`` output of every run of the nested compaction graph."""

    def __init__(self) -> None:
        self.names: dict[UUID, str] = {}
        self.reports: list[CompactionReport] = []

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, name: str | None = None, **_: Any
    ) -> None:
        self.names[run_id] = name or ""

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **_: Any) -> None:
        if self.names.get(run_id) == "compaction":
            self.reports.append(outputs["compaction"])


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as checkpointer:
        yield checkpointer


def _versions(store: SummaryStore) -> dict[str, str]:
    """Each summary row's id -> its version: ids are random, versions are not."""
    return {r.id: f"<summary v{r.version}>" for r in store.list_summaries("same")}


def _plain(messages: list[BaseMessage], ids: dict[str, str]) -> str:
    text = json.dumps([m.model_dump() for m in messages], sort_keys=True, default=str)
    for row_id, label in ids.items():
        text = text.replace(row_id, label)
    return text


def _report(report: CompactionReport, ids: dict[str, str]) -> CompactionReport:
    row_id = report.summary_id
    return dataclasses.replace(report, summary_id=ids.get(row_id, row_id) if row_id else None)


def test_the_middleware_gives_what_the_subgraph_gives(
    store: SummaryStore, tmp_path: Path, saver: SqliteSaver
) -> None:
    agent_model = FakeToolCallingModel(
        script=[ai_tool_call("lookup", {"query": "compaction"}, "call-1"), "found it"]
    )
    histories, inputs, reports = _Histories("histories"), _Histories("inputs"), _Reports()
    middleware = CompactionMiddleware(CONFIG, model=RecordingSummarizer(), store=store)
    agent = create_agent(
        agent_model,
        tools=[lookup],
        system_prompt=SYSTEM,
        middleware=[histories, middleware, inputs],
        checkpointer=saver,
    )
    for turn in range(24):
        message = HumanMessage(f"turn {turn}: " + "w" * 300, id=f"human-{turn}")
        agent.invoke({"messages": [message]}, {**THREAD, "callbacks": [reports]})

    graph_store = SummaryStore(f"sqlite:///{tmp_path / 'graph.db'}")
    graph = create_compaction_graph(
        CONFIG,
        model=RecordingSummarizer(),
        fallback_model=FakeToolCallingModel(),
        store=graph_store,
        tools=[lookup],
        system_prompt=SYSTEM,
    )
    outputs = [graph.invoke(graph_input(h), THREAD) for h in histories.seen]

    actions = [r.action for r in reports.reports]
    assert {"passthrough", "summarized", "reused"} <= set(actions), actions
    assert len(store.list_summaries("same")) >= 2  # a summary made, reused, then updated
    assert len(reports.reports) == len(histories.seen) == len(inputs.seen)
    ours, theirs = _versions(store), _versions(graph_store)
    assert sorted(ours.values()) == sorted(theirs.values())
    for call, output in enumerate(outputs):
        assert _plain(inputs.seen[call], ours) == _plain(output["llm_input_messages"], theirs), call
        assert _report(reports.reports[call], ours) == _report(output["compaction"], theirs), call
    graph_store.close()
