"""Deletion is final (DESIGN 6.9): nothing of a deleted thread comes back.

A summary started before ``delete_thread`` (in the background, or by a concurrent call) is
discarded inside the insert transaction; the deleting process never serves the deleted
summary from memory again, also when the deletion went through another SummaryStore object
for the same database. A conversation that goes on after the deletion simply starts over.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from conversations import chat, graph_input
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryStore, create_compaction_graph

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
CONFIG = {"trigger": {"type": "tokens", "value": 2000}, "keep": {"type": "messages", "value": 6}}


def _rows(url: str) -> tuple[int, int]:
    with SummaryStore(url) as other:
        state = other.thread_state("t", "default")
        return len(other.list_summaries("t")), state.consecutive_failures


@pytest.mark.slow
def test_a_summary_in_flight_when_the_thread_is_deleted_is_discarded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    summarizer = RecordingSummarizer(delay=0.8)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=SummaryStore(url))
    reports = []
    call = threading.Thread(
        target=lambda: reports.append(graph.invoke(graph_input(chat(20)), THREAD)["compaction"])
    )
    call.start()
    time.sleep(0.3)  # the summarizer is at work
    assert summarizer.call_count == 1
    with SummaryStore(url) as admin:  # another object, as an admin script would use
        admin.delete_thread("t")
    call.join(10)
    assert reports[0].action == "failed" and "deleted" in (reports[0].error or "")
    assert _rows(url) == (0, 0)  # no summary, no failure row: the thread stays deleted


@pytest.mark.slow
def test_a_background_summary_running_at_deletion_never_lands(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    summarizer = RecordingSummarizer(delay=0.8)
    config = {**CONFIG, "precompact_ratio": 0.6}
    graph = create_compaction_graph(config, model=summarizer, store=SummaryStore(url))
    messages: list[BaseMessage] = chat(1)
    started = False
    for turn in range(30):  # grow until a background summary starts
        messages = [*messages, HumanMessage(f"q{turn} " + "x" * 300, id=f"q{turn}")]
        events = list(graph.stream(graph_input(messages), THREAD, stream_mode="custom"))
        if any(e.get("background") for e in events):
            started = True
            break
        messages = [*messages, AIMessage(f"a{turn} " + "y" * 300, id=f"a{turn}")]
    assert started
    deadline = time.monotonic() + 5
    while summarizer.call_count == 0 and time.monotonic() < deadline:
        time.sleep(0.01)  # the job's summarizer is at work
    with SummaryStore(url) as admin:
        admin.delete_thread("t")
    time.sleep(1.5)  # the job finishes after the deletion
    assert summarizer.call_count == 1
    assert _rows(url) == (0, 0)


def _summarized_then_deleted(url: str, *, via_other_object: bool) -> None:
    store = SummaryStore(url)
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    messages = chat(20)
    first = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert first.action == "summarized"
    messages = [*messages, HumanMessage("one more", id="more")]
    again = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert again.action == "reused" and again.summary_id == first.summary_id  # from memory
    deleted = store.list_summaries("t")[0].summary
    if via_other_object:
        with SummaryStore(url) as admin:
            admin.delete_thread("t")
    else:
        store.delete_thread("t", "default")
    after = graph.invoke(graph_input(messages), THREAD)
    report = after["compaction"]
    assert report.summary_id != first.summary_id  # never the deleted summary again
    assert all(deleted not in str(m.content) for m in after["llm_input_messages"])
    assert report.action == "summarized" and summarizer.call_count == 2  # it starts over
    store.close()


def test_the_deleting_process_never_serves_the_deleted_summary(tmp_path: Path) -> None:
    _summarized_then_deleted(f"sqlite:///{tmp_path / 'd.db'}", via_other_object=False)


def test_a_deletion_through_another_store_object_is_seen_too(tmp_path: Path) -> None:
    _summarized_then_deleted(f"sqlite:///{tmp_path / 'd.db'}", via_other_object=True)


async def test_a_concurrent_async_summary_is_discarded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    store = SummaryStore(url)
    summarizer = RecordingSummarizer(delay=0.6)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    task = asyncio.ensure_future(graph.ainvoke(graph_input(chat(20)), THREAD))
    await asyncio.sleep(0.3)
    await store.adelete_thread("t")
    report = (await task)["compaction"]
    assert report.action == "failed"
    assert await store.alist_summaries("t") == []
    await store.aclose()
