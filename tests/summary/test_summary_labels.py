"""Every summary call is labelled (DESIGN 6.12): run name ``compaction_summary``, tags
``compaction`` and ``nostream``, metadata ``lc_source``, thread, namespace and the version the
summary gets, so a callback handler or LangSmith tells it apart from the agent's calls. The
labels are bound on the summary call itself: the agent model's calls carry none of them.

A real ``BaseCallbackHandler`` in the run's config watches every front door, sync and async.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest
from _doors import DOORS, MODES, TRIGGER, Door, Mode, build_agent, history, run, thread_config
from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_compaction import SummaryStore

LABEL_TAGS = {"compaction", "nostream"}


@dataclass(frozen=True)
class Started:
    """One run a callback handler saw start."""

    kind: str
    """``chat_model`` or ``chain``."""
    name: str | None
    tags: tuple[str, ...]
    metadata: dict[str, Any]

    @property
    def own_tags(self) -> set[str]:
        """The run's tags but the position tags LangChain and LangGraph add (``seq:step:1``)."""
        return {t for t in self.tags if not t.startswith(("seq:step:", "graph:step:"))}


class RunRecorder(BaseCallbackHandler):
    """Records the name, tags and metadata of every chat model and chain run that starts."""

    run_inline = True

    def __init__(self) -> None:
        self.started: list[Started] = []
        self._lock = threading.Lock()

    def _add(self, kind: str, tags: list[str] | None, metadata: Any, name: Any) -> None:
        with self._lock:
            self.started.append(Started(kind, name, tuple(tags or ()), dict(metadata or {})))

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._add("chat_model", tags, metadata, kwargs.get("name"))

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: dict[str, Any] | Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._add("chain", tags, metadata, kwargs.get("name"))

    def named(self, name: str) -> list[Started]:
        return [s for s in self.started if s.name == name]


def _config(thread: str, recorder: RunRecorder, **control: Any) -> RunnableConfig:
    config = thread_config(thread, **control)
    config["callbacks"] = [recorder]
    return config


def _assert_labelled(summary_run: Started, thread: str, version: int) -> None:
    assert summary_run.own_tags == LABEL_TAGS
    keys = ("lc_source", "namespace", "summary_version")
    assert {k: summary_run.metadata.get(k) for k in keys} == {
        "lc_source": "summarization",
        "namespace": "default",
        "summary_version": version,
    }
    assert summary_run.metadata["thread_id"] == thread


def _assert_agent_unlabelled(recorder: RunRecorder, runs: Sequence[Started]) -> None:
    """The agent model's calls (every chat model run but the summary's) carry no label, and
    nothing outside the summary run is tagged ``compaction`` or marked ``lc_source``."""
    agent_calls = [s for s in recorder.started if s.kind == "chat_model" and s not in runs]
    assert agent_calls, "the agent model was never called"
    others = [s for s in recorder.started if s.name != "compaction_summary"]
    for other in others:
        assert "compaction" not in other.tags, other
        assert "nostream" not in other.tags, other
        assert "lc_source" not in other.metadata, other
        assert "summary_version" not in other.metadata, other


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", DOORS)
async def test_the_summary_model_call_is_labelled_and_the_agents_is_not(
    store: SummaryStore, door: Door, mode: Mode
) -> None:
    summarizer, recorder = RecordingSummarizer(), RunRecorder()
    agent = build_agent(
        door, FakeToolCallingModel(), InMemorySaver(), store, TRIGGER, model=summarizer
    )
    thread = f"labels-{door}-{mode}-线程"
    await run(agent, {"messages": history(10)}, _config(thread, recorder), mode)

    assert summarizer.call_count == 1
    (summary_run,) = recorder.named("compaction_summary")
    assert summary_run.kind == "chat_model"
    _assert_labelled(summary_run, thread, version=1)
    assert set(summarizer.calls[0].tags) >= LABEL_TAGS  # what the model's run manager got
    _assert_agent_unlabelled(recorder, [summary_run])


@pytest.mark.parametrize("mode", MODES)
async def test_the_version_label_is_the_one_the_summary_gets(
    store: SummaryStore, mode: Mode
) -> None:
    """The second summary of a thread is labelled 2, also when version 1 was revoked (the
    store numbers past every version), and every chunk of it carries the label."""
    summarizer = RecordingSummarizer()
    agent = build_agent(
        "parent", FakeToolCallingModel(), InMemorySaver(), store, TRIGGER, model=summarizer
    )
    thread = f"labels-version-{mode}"
    await run(agent, {"messages": history(10)}, _config(thread, RunRecorder()), mode)
    await store.arevoke_summary(thread)
    recorder = RunRecorder()
    # A small trim: the second summary takes several calls.
    agent = build_agent(
        "parent",
        FakeToolCallingModel(),
        InMemorySaver(),
        store,
        {**TRIGGER, "trim_tokens_to_summarize": 40},
        model=summarizer,
    )
    await run(agent, {"messages": history(12)}, _config(thread, recorder), mode)

    records = await store.alist_summaries(thread)
    assert [r.version for r in records] == [1, 2]
    runs = recorder.named("compaction_summary")
    assert len(runs) == summarizer.call_count - 1 > 1
    for summary_run in runs:
        _assert_labelled(summary_run, thread, version=2)
    _assert_agent_unlabelled(recorder, runs)


def _compactor(messages: list[BaseMessage], previous: str | None, instruction: str | None) -> str:
    return "摘要 / summary: " + "; ".join(str(m.content) for m in messages)


async def _acompactor(
    messages: list[BaseMessage], previous: str | None, instruction: str | None
) -> str:
    return _compactor(messages, previous, instruction)


@pytest.mark.parametrize("is_coroutine", [False, True], ids=["function", "coroutine"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", DOORS)
async def test_a_custom_compactor_runs_as_one_labelled_run(
    store: SummaryStore, door: Door, mode: Mode, is_coroutine: bool
) -> None:
    recorder = RunRecorder()
    compactor = _acompactor if is_coroutine else _compactor
    agent = build_agent(
        door, FakeToolCallingModel(), InMemorySaver(), store, TRIGGER, summarize=compactor
    )
    thread = f"labels-compactor-{door}-{mode}-{is_coroutine}"
    await run(agent, {"messages": history(10)}, _config(thread, recorder), mode)

    (record,) = await store.alist_summaries(thread)
    assert record.summary.startswith("摘要")
    (summary_run,) = recorder.named("compaction_summary")
    assert summary_run.kind == "chain"
    _assert_labelled(summary_run, thread, version=1)
    _assert_agent_unlabelled(recorder, [summary_run])
