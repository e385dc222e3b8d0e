"""A restarted worker's first call (a new graph on a store that holds the thread's summary).

It serves the stored summary from measure, in one LangGraph step, with one summaries lookup:
no prune, partition or summarize, no ``thread_state`` read; it sends what the worker before it
sent, and it counts with the thread's stored calibration from its first call on.
"""

from __future__ import annotations

from typing import Any

import pytest
from conversations import chat, graph_input
from fakes import RecordingSummarizer
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryRecord, SummaryStore, create_compaction_graph
from langgraph_compaction.store import ThreadState
from langgraph_compaction.store.summary_store import plumbing

THREAD: RunnableConfig = {"configurable": {"thread_id": "线程-restart"}}
CONFIG = {"trigger": {"type": "tokens", "value": 1500}, "keep": {"type": "messages", "value": 6}}


def _history() -> list[BaseMessage]:
    return chat(20, prefix="Привет ")


class _CountingStore(SummaryStore):
    """Counts the thread-state and summaries reads of a call."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.reads: list[str] = []

    def thread_state(self, thread_id: str, namespace: str = "default") -> ThreadState:
        self.reads.append("thread_state")
        return super().thread_state(thread_id, namespace)

    def latest_summaries(
        self, thread_id: str, namespace: str = "default", limit: int = 8
    ) -> list[SummaryRecord]:
        self.reads.append("latest_summaries")
        return super().latest_summaries(thread_id, namespace, limit)


@pytest.fixture
def counting_store(tmp_path: Any) -> Any:
    store = _CountingStore(f"sqlite:///{tmp_path / 'store.db'}")
    yield store
    store.close()


def test_a_restarted_worker_serves_the_stored_summary_from_measure(counting_store: Any) -> None:
    messages = _history()
    first = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=counting_store)
    before = first.invoke(graph_input(messages), THREAD)
    assert before["compaction"].action == "summarized"

    summarizer = RecordingSummarizer()
    restarted = create_compaction_graph(CONFIG, model=summarizer, store=counting_store)
    grown = [*messages, HumanMessage("Ещё один вопрос", id="h-new")]
    counting_store.reads.clear()
    steps = list(restarted.stream(graph_input(grown), THREAD, stream_mode="updates"))
    assert [next(iter(step)) for step in steps] == ["measure"]  # one step, no prune/partition
    after = steps[0]["measure"]
    assert counting_store.reads == ["latest_summaries"]
    assert after["compaction"].action == "reused"
    assert after["compaction"].summary_id == before["compaction"].summary_id
    assert summarizer.call_count == 0
    # the same input as the worker before it sends (its kept messages, then the new one)
    assert after["llm_input_messages"][:-1] == before["llm_input_messages"]


def test_a_restarted_worker_counts_with_the_stored_calibration(store: SummaryStore) -> None:
    messages = _history()
    config = {"trigger": {"type": "tokens", "value": 10**9}}
    plain = create_compaction_graph(config, store=store)
    raw = plain.invoke(graph_input(messages), THREAD)["compaction"].tokens_before
    plumbing(store).set_calibration("线程-restart", "default", 1.5)
    restarted = create_compaction_graph(config, store=store)
    calibrated = restarted.invoke(graph_input(messages), THREAD)["compaction"].tokens_before
    assert calibrated == pytest.approx(raw * 1.5, abs=2)
