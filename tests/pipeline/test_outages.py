"""A store outage never breaks the agent's call (DESIGN 6.9; issue: production rules).

Whatever fails (a SQLite path that cannot be opened, a file another process holds locked past
the busy timeout, a PostgreSQL port that refuses connections, backends killed mid-run), the
call goes ahead with what fits: the summary this process holds if its prefix still matches,
else the drop-oldest fallback within the budget, the latest request always kept. The report
says ``failed``, a ``context_compaction_failed`` event names the cause, and the outage is
logged once, not on every turn. When the store is back, compaction resumes by itself.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conversations import chat
from fakes import RecordingSummarizer
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph

CONFIG: dict[str, Any] = {
    "context_window": 3000,
    "trigger": {"type": "tokens", "value": 2000},
    "keep": {"type": "messages", "value": 6},
}
THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
Run = tuple[list[BaseMessage], CompactionReport, list[dict[str, Any]]]


def _run(graph: Any, messages: list[BaseMessage], thread: RunnableConfig = THREAD) -> Run:
    events: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    for mode, chunk in graph.stream(
        {"messages": messages}, thread, stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
        else:
            values = chunk
    return values["llm_input_messages"], values["compaction"], events


async def _arun(graph: Any, messages: list[BaseMessage]) -> Run:
    events: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    async for mode, chunk in graph.astream(
        {"messages": messages}, THREAD, stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
        else:
            values = chunk
    return values["llm_input_messages"], values["compaction"], events


def _assert_went_ahead(run: Run, messages: list[BaseMessage], cause: str = "store") -> None:
    output, report, events = run
    assert report.action == "failed"
    assert report.error and "summary store unavailable" in report.error
    assert report.gauge.budget is not None and report.tokens_after <= report.gauge.budget
    assert output[-1] == messages[-1]  # the latest request is always kept
    assert output[0] == messages[0]  # the system prompt too
    failed = [e for e in events if e["type"] == "context_compaction_failed"]
    assert failed and failed[0]["cause"] == cause and failed[0]["error"]


def _unopenable(tmp_path: Path) -> str:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder should be")
    return f"sqlite:///{blocker / 'compaction.db'}"


def test_an_unopenable_sqlite_path_falls_back_to_drop_oldest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(CONFIG, model=summarizer, store=_unopenable(tmp_path))
    messages = chat(30)  # over the budget: something must go
    with caplog.at_level(logging.WARNING, logger="langgraph_compaction"):
        for turn in range(3):
            messages = [*messages, HumanMessage(f"turn {turn}", id=f"turn{turn}")]
            run = _run(graph, messages)
            _assert_went_ahead(run, messages)
            assert run[1].dropped_count > 0
    assert summarizer.call_count == 0  # nothing is paid for that cannot be stored
    outage_logs = [r for r in caplog.records if "summary store" in r.getMessage()]
    assert len(outage_logs) == 1  # once, not every turn


async def test_an_unopenable_sqlite_path_async(tmp_path: Path) -> None:
    graph = create_compaction_graph(
        CONFIG, model=RecordingSummarizer(), store=_unopenable(tmp_path)
    )
    messages = chat(20)
    _assert_went_ahead(await _arun(graph, messages), messages)


def _lock_in_other_process(path: Path) -> subprocess.Popen[str]:
    """Another process holds the file's exclusive lock until killed."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
            "c.execute('PRAGMA locking_mode=EXCLUSIVE')\n"
            "c.execute('BEGIN EXCLUSIVE')\n"
            "c.execute('UPDATE compaction_meta SET value = value')\n"
            "print('locked', flush=True)\n"
            "time.sleep(120)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def test_a_locked_file_serves_the_held_summary_then_recovers(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    store = SummaryStore(f"sqlite:///{path}", busy_timeout=0.3)
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    messages = chat(20)
    _, first, _ = _run(graph, messages)
    assert first.action == "summarized"
    store.close()  # no pooled connection of ours keeps the file open across the lock
    holder = _lock_in_other_process(path)
    try:
        # grown past what the held summary fits: the store is needed, and it is locked
        messages = messages + chat(15, system=False, prefix="late")
        output, report, events = _run(graph, messages)
        assert report.action == "failed" and report.summary_id == first.summary_id
        assert output[1].name == "summary"  # the summary this process holds still serves
        assert report.gauge.budget is not None and report.tokens_after <= report.gauge.budget
        assert output[-1] == messages[-1]
        assert any(e.get("cause") == "store" for e in events)
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    _, report, _ = _run(graph, messages)
    assert report.action == "summarized" and report.summary_version == 2  # back by itself


def _refusing_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: nothing listens there


def test_a_postgresql_port_that_refuses_connections(caplog: pytest.LogCaptureFixture) -> None:
    url = f"postgresql://postgres@127.0.0.1:{_refusing_port()}/test"
    graph = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=url)
    messages = chat(20)
    with caplog.at_level(logging.WARNING, logger="langgraph_compaction"):
        for turn in range(2):
            messages = [*messages, HumanMessage(f"turn {turn}", id=f"turn{turn}")]
            _assert_went_ahead(_run(graph, messages), messages)
    assert len([r for r in caplog.records if "summary store" in r.getMessage()]) == 1


async def test_a_postgresql_port_that_refuses_connections_async() -> None:
    url = f"postgresql://postgres@127.0.0.1:{_refusing_port()}/test"
    graph = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=url)
    messages = chat(20)
    _assert_went_ahead(await _arun(graph, messages), messages)


def _kill_backends(application_name: str) -> int:
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/test", autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid <> pg_backend_pid()",
            (application_name,),
        ).fetchall()
    return len(rows)


def test_postgresql_backends_killed_mid_run_never_fail_a_call(pg_url: str) -> None:
    name = "lgc_killed_backends"
    url = f"{pg_url}&application_name={name}"
    killed: list[int] = []

    def kill_during_the_summary(call: Any) -> str:
        killed.append(_kill_backends(name))  # while the summarizer works, mid-call
        return f"SUMMARY of {len(call.transcript)} characters: question answer"

    summarizer = RecordingSummarizer(reply=kill_during_the_summary)
    store = SummaryStore(url)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    messages = chat(20)
    actions = []
    for turn in range(8):
        messages = messages + chat(2, system=False, prefix=f"t{turn}-")
        killed.append(_kill_backends(name))  # between calls, the pooled connections die
        output, report, _ = _run(graph, messages)
        assert output[-1] == messages[-1]
        assert report.gauge.budget is not None and report.tokens_after <= report.gauge.budget
        actions.append(report.action)
    assert sum(killed) > 0  # the test did kill live backends
    assert "summarized" in actions
    assert len(store.list_summaries("t")) >= 1
    store.close()
