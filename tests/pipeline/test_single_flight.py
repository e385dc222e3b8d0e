"""One summary per prefix: concurrent calls in a process, and workers racing on one store.

Five calls that need the same summary at once (threads on the sync path, tasks on one event
loop) make one summarizer call and reuse its result; four worker processes racing on one
thread, over SQLite and over PostgreSQL, make one summarizer call between them, the others
waiting on the store's lease.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from _fleet_worker import race
from conversations import chat, graph_input
from fakes import RecordingSummarizer
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph

CONFIG = {"trigger": {"type": "tokens", "value": 2000}, "keep": {"type": "messages", "value": 6}}
THREAD: RunnableConfig = {"configurable": {"thread_id": "shared"}}
CALLS = 5
WORKERS = 4


def _check_one_summary(reports: list[CompactionReport], summarizer_calls: int) -> None:
    assert summarizer_calls == 1
    assert sorted(r.action for r in reports) == ["reused"] * (len(reports) - 1) + ["summarized"]
    assert len({r.summary_id for r in reports}) == 1


def test_concurrent_threads_share_one_summary(store: SummaryStore) -> None:
    summarizer = RecordingSummarizer(delay=0.5)
    graphs = [create_compaction_graph(CONFIG, model=summarizer, store=store) for _ in range(2)]
    messages = chat(20)
    barrier = threading.Barrier(CALLS)
    reports: list[CompactionReport] = []

    def call(index: int) -> None:
        barrier.wait()
        graph = graphs[index % 2]  # two graph objects on one store coalesce too
        result = graph.invoke(graph_input([m.model_copy() for m in messages]), THREAD)
        reports.append(result["compaction"])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(CALLS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(reports) == CALLS
    _check_one_summary(reports, summarizer.call_count)
    assert len(store.list_summaries("shared")) == 1


async def test_concurrent_tasks_share_one_summary(store: SummaryStore) -> None:
    summarizer = RecordingSummarizer(delay=0.5)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    messages = chat(20)
    results = await asyncio.gather(
        *(graph.ainvoke(graph_input(list(messages)), THREAD) for _ in range(CALLS))
    )
    _check_one_summary([r["compaction"] for r in results], summarizer.call_count)
    assert len(await store.alist_summaries("shared")) == 1
    await store.aclose()


def _check_fleet(lines: list[dict[str, Any]]) -> None:
    assert sum(int(line["calls"]) for line in lines) == 1, lines
    actions = sorted(str(line["action"]) for line in lines)
    assert actions == ["reused"] * (WORKERS - 1) + ["summarized"], lines
    assert len({line["summary_id"] for line in lines}) == 1


@pytest.mark.slow
def test_workers_racing_make_one_summary(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        store.list_summaries("x")  # the schema exists before the workers start
        _check_fleet(race(store_url, "fleet", WORKERS))
        assert len(store.list_summaries("fleet")) == 1
