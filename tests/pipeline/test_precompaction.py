"""Background pre-compaction: the agent never waits for a summary it could have had earlier."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conversations import chat, graph_input
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryStore, create_compaction_graph

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
SLOW = 1.05  # seconds per summary call: longer than any pause between turns
PAUSE = 0.35  # the agent's own model call between two compaction calls
CONFIG = {
    "trigger": {"type": "tokens", "value": 2000},
    "keep": {"type": "messages", "value": 6},
    "precompact_ratio": 0.6,
}


def _turn(messages: list[BaseMessage], turn: int) -> list[BaseMessage]:
    return [*messages, HumanMessage(f"q{turn} " + "x" * 300, id=f"q{turn}")]


def _reply(messages: list[BaseMessage], turn: int) -> list[BaseMessage]:
    return [*messages, AIMessage(f"a{turn} " + "y" * 300, id=f"a{turn}")]


def _check_run(
    durations: list[float], actions: list[str], summarizer: RecordingSummarizer, store: SummaryStore
) -> None:
    assert max(durations) < SLOW, f"a call waited for the summarizer: {max(durations):.2f}s"
    assert "summarized" not in actions  # every compaction found its summary ready
    assert actions.count("reused") >= 10
    records = store.list_summaries("t")
    assert len(records) >= 3
    prefixes = [r.prefix_hash for r in records]
    assert len(prefixes) == len(set(prefixes))  # no prefix summarized twice
    assert summarizer.call_count == len(records)  # no call wasted on a duplicate


@pytest.mark.slow
def test_sync_turns_never_wait_for_a_summary(store: SummaryStore) -> None:
    summarizer = RecordingSummarizer(delay=SLOW)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    messages: list[BaseMessage] = chat(1)
    durations, actions = [], []
    for turn in range(30):
        messages = _turn(messages, turn)
        started = time.perf_counter()
        report = graph.invoke(graph_input(messages), THREAD)["compaction"]
        durations.append(time.perf_counter() - started)
        actions.append(report.action)
        time.sleep(PAUSE)
        messages = _reply(messages, turn)
    time.sleep(SLOW * 1.5)  # let the last background job land
    _check_run(durations, actions, summarizer, store)


@pytest.mark.slow
async def test_async_turns_never_wait_inside_one_event_loop(store: SummaryStore) -> None:
    summarizer = RecordingSummarizer(delay=SLOW)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    messages: list[BaseMessage] = chat(1)
    durations, actions = [], []
    for turn in range(30):
        messages = _turn(messages, turn)
        started = time.perf_counter()
        report = (await graph.ainvoke(graph_input(messages), THREAD))["compaction"]
        durations.append(time.perf_counter() - started)
        actions.append(report.action)
        await asyncio.sleep(PAUSE)
        messages = _reply(messages, turn)
    await asyncio.sleep(SLOW * 1.5)  # let the last background job land
    await asyncio.to_thread(_check_run, durations, actions, summarizer, store)  # sync reads
    await store.aclose()


@pytest.mark.slow
def test_fast_turns_wait_for_the_running_job_instead_of_a_second_summary(
    store: SummaryStore,
) -> None:
    summarizer = RecordingSummarizer(delay=SLOW)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    messages: list[BaseMessage] = chat(1)
    actions = []
    for turn in range(16):  # no pause: the trigger fires while the job still runs
        messages = _reply(_turn(messages, turn), turn)
        actions.append(graph.invoke(graph_input(messages), THREAD)["compaction"].action)
    time.sleep(SLOW * 1.5)  # let the last background job land
    records = store.list_summaries("t")
    assert "reused" in actions
    assert len({r.prefix_hash for r in records}) == len(records) == summarizer.call_count


@pytest.mark.slow
def test_events_say_when_a_summary_runs_in_the_background_and_when_it_lands(
    store: SummaryStore,
) -> None:
    summarizer = RecordingSummarizer(delay=0.2)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    messages: list[BaseMessage] = chat(1)
    events: list[dict[str, Any]] = []
    for turn in range(12):
        messages = _reply(_turn(messages, turn), turn)
        for chunk in graph.stream(graph_input(messages), THREAD, stream_mode="custom"):
            events.append(chunk)
        time.sleep(0.3)
    kinds = [(e["type"], e.get("background")) for e in events]
    start = kinds.index(("context_compacting", True))
    landed = kinds.index(("context_compacted", True))
    assert start < landed
    assert events[landed]["summary_id"] == store.list_summaries("t")[0].id


@pytest.mark.slow
def test_a_summary_prepared_by_one_worker_is_reused_by_another(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first = RecordingSummarizer(delay=0.2)
    second = RecordingSummarizer()
    worker_a = create_compaction_graph(CONFIG, model=first, store=SummaryStore(url))
    worker_b = create_compaction_graph(CONFIG, model=second, store=SummaryStore(url))
    messages: list[BaseMessage] = chat(1)
    turn = 0
    while first.call_count == 0:  # worker A serves the thread until it starts preparing
        messages = _reply(_turn(messages, turn), turn)
        worker_a.invoke(graph_input(messages), THREAD)
        turn += 1
    time.sleep(0.6)  # the job lands
    for later in range(turn, turn + 10):  # worker B serves the rest, past the trigger
        messages = _reply(_turn(messages, later), later)
        report = worker_b.invoke(graph_input(messages), THREAD)["compaction"]
    assert report.action == "reused"
    assert second.call_count == 0 or store_versions(url) > 1
    assert report.summary_id in {r.id for r in SummaryStore(url).list_summaries("t")}


def store_versions(url: str) -> int:
    return len(SummaryStore(url).list_summaries("t"))


def test_a_failed_background_summary_stores_nothing_and_counts_as_a_failure(
    store: SummaryStore,
) -> None:
    broken = RecordingSummarizer(fail_with=RuntimeError("provider down"))
    graph = create_compaction_graph({**CONFIG, "max_failures": 1}, model=broken, store=store)
    messages: list[BaseMessage] = chat(1)
    for turn in range(9):
        messages = _reply(_turn(messages, turn), turn)
        graph.invoke(graph_input(messages), THREAD)
        time.sleep(0.05)
    deadline = time.monotonic() + 5
    while store.thread_state("t", "default").consecutive_failures == 0:
        assert time.monotonic() < deadline, "the background summary never ran"
        time.sleep(0.05)
    assert broken.call_count >= 1
    assert store.list_summaries("t") == []
    assert store.thread_state("t", "default").consecutive_failures >= 1


_EXIT_SCRIPT = """
import asyncio, sys, time
sys.path.insert(0, {tests!r})
from conversations import chat
from fakes import RecordingSummarizer
from langchain_core.messages import HumanMessage
from langgraph_compaction import SummaryStore, create_compaction_graph
summarizer = RecordingSummarizer(delay=30)
graph = create_compaction_graph({config!r}, model=summarizer, store=SummaryStore({url!r}))
THREAD = {{"configurable": {{"thread_id": "t"}}}}

async def turns(use_async):
    messages = chat(1)
    turn = 0
    while summarizer.call_count == 0:
        text = "q" + str(turn) + " " + "x" * 300
        messages = [*messages, HumanMessage(text, id="q" + str(turn))]
        if use_async:
            await graph.ainvoke({{"messages": messages}}, THREAD)
        else:
            graph.invoke({{"messages": messages}}, THREAD)
        turn += 1
        for _ in range(10):  # give a job just started the time to reach the summarizer
            if summarizer.call_count:
                break
            await asyncio.sleep(0.05)
    print("IN FLIGHT", flush=True)

asyncio.run(turns({use_async!r}))
"""


def _run_exit_script(tmp_path: Path, *, use_async: bool) -> subprocess.CompletedProcess[str]:
    url = f"sqlite:///{tmp_path / 'exit.db'}"
    script = _EXIT_SCRIPT.format(
        tests=str(Path(__file__).parents[1]), config=CONFIG, url=url, use_async=use_async
    )
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_interpreter_exit_drops_in_flight_work_cleanly(tmp_path: Path) -> None:
    done = _run_exit_script(tmp_path, use_async=False)
    assert done.returncode == 0, done.stderr
    assert "IN FLIGHT" in done.stdout
    assert done.stderr == ""
    assert SummaryStore(f"sqlite:///{tmp_path / 'exit.db'}").list_summaries("t") == []


@pytest.mark.slow
def test_event_loop_shutdown_drops_in_flight_work_cleanly(tmp_path: Path) -> None:
    done = _run_exit_script(tmp_path, use_async=True)
    assert done.returncode == 0, done.stderr
    assert "IN FLIGHT" in done.stdout
    assert done.stderr == ""
    assert SummaryStore(f"sqlite:///{tmp_path / 'exit.db'}").list_summaries("t") == []


def _wait_for_landing(store: SummaryStore, stored: int, started: bool) -> int:
    """Summaries stored once the job this call started (if any) has landed."""
    deadline = time.monotonic() + 10
    while started and len(store.list_summaries("t")) == stored:
        assert time.monotonic() < deadline, "the background summary never landed"
        time.sleep(0.02)
    return len(store.list_summaries("t"))


def test_a_prepared_summary_takes_no_call_for_a_sliver_of_transcript(
    store: SummaryStore,
) -> None:
    # Evicting all it can, each prepared summary here would carry a little over 1,000 tokens
    # of transcript: a second call for the last few messages, the prompt and previous
    # summary paid again. Stopping a unit or two earlier, within the headroom, saves it.
    summarizer = RecordingSummarizer()
    config = {**CONFIG, "trim_tokens_to_summarize": 1000}
    graph = create_compaction_graph(config, model=summarizer, store=store)
    messages: list[BaseMessage] = chat(1)
    foreground, stored = 0, 0
    for turn in range(30):
        messages = _turn(messages, turn)
        events = list(graph.stream(graph_input(messages), THREAD, stream_mode="custom"))
        starts = [e.get("background", False) for e in events if e["type"] == "context_compacting"]
        foreground += starts.count(False)
        stored = _wait_for_landing(store, stored, True in starts)
        messages = _reply(messages, turn)
    records = store.list_summaries("t")
    assert len(records) >= 3
    assert summarizer.call_count == len(records)  # one call each
    assert foreground == 0  # and each served its trigger in time: no call made a summary
