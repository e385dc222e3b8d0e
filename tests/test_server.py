"""End to end under LangGraph's server: ``examples/server`` served by ``langgraph dev``.

Each test starts a real ``langgraph dev --no-browser --no-reload`` process (the in-memory
runtime with blockbuster on, as every ``langgraph dev`` runs; never ``--allow-blocking``)
and drives both graphs of the app over HTTP with ``langgraph_sdk``: ``parent`` (a
``StateGraph`` with the compaction subgraph before its model node) and ``agent``
(``create_agent`` with ``CompactionMiddleware``). What they show:

- 30 turns per graph on a fresh SQLite store: no run fails; the ``context_compacting`` /
  ``context_compacted`` events reach the client (``stream_subgraphs=True``); the thread state
  holds every message in order and no ``llm_input_messages`` / ``compaction`` key; each
  ``context_compacted`` event is one row of the store;
- after the server is stopped and started again on the same store file, the same 30 turns
  replayed on the same thread make no summary call (no ``context_compacting`` event, every
  report's ``summary_calls`` 0), add no row, and use, call for call, the summaries stored
  by the first server;
- a store that cannot be opened (its path runs through a file) fails no run: the turns go
  on without summaries and the client is told (``context_compaction_failed``);
- ``scripts/serve`` serves the app on a free port it prints, and ``examples/server/client.py``
  holds a conversation with each graph, printing every turn and every compaction event.

The models are the app's offline stand-ins, so every run gives the same conversation.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _server import APP_DIR, DevServer, find_cli
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from langgraph_compaction import SummaryRecord, SummaryStore

CLI = find_cli()
pytestmark = pytest.mark.skipif(
    CLI is None,
    reason="the langgraph CLI is not installed (pip install 'langgraph-cli[inmem]'; the dev "
    "extra has it)",
)

GRAPHS = ("parent", "agent")
TURNS = 30
CITIES = ("Kyoto", "Osaka", "Nara", "Sapporo", "Hakone", "Kanazawa")

StartServer = Callable[[str], DevServer]


def request(turn: int) -> str:
    """The user's message of a turn; one in three asks for the weather, one in three for money."""
    city = CITIES[turn % len(CITIES)]
    if turn % 3 == 0:
        return f"Turn {turn}: what is the weather in {city} on day {turn}? We want to walk."
    if turn % 3 == 1:
        return f"Turn {turn}: please convert {100 + turn} EUR to JPY for the ryokan in {city}."
    return f"Turn {turn}: what should we do on day {turn} in {city}, something quiet?"


def asks_for_a_tool(turn: int) -> bool:
    return turn % 3 in (0, 1)


@dataclass
class Run:
    """What the client saw of one run."""

    errors: list[Any] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    """The custom events, in order."""
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The compaction report of each model call, by the namespace of its compaction run."""


# -- driving the server --------------------------------------------------------------------


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    """Start ``langgraph dev`` on a store URL; every server started is stopped at teardown."""
    servers: list[DevServer] = []

    def start(store_url: str) -> DevServer:
        assert CLI is not None
        server = DevServer(CLI, tmp_path / "server", store_url=store_url)
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()
        print(f"--- {server.log_path} (shown when the test failed) ---\n{server.log_tail(200)}")


async def started(start_server: StartServer, store_url: str) -> DevServer:
    """A running server, started off the loop (it waits on a subprocess)."""
    return await asyncio.to_thread(start_server, store_url)


async def restart(server: DevServer) -> None:
    """Stop the server by its process group, start it again on the same store and folder."""
    await asyncio.to_thread(server.stop)
    await asyncio.to_thread(server.start)


async def send(client: LangGraphClient, thread_id: str, graph: str, turn: int) -> Run:
    """One turn: stream the run with the custom events and every graph's values."""
    message = {"role": "user", "content": request(turn), "id": f"turn-{turn}"}
    payload: dict[str, Any] = {"messages": [message]}
    run = Run()
    async for part in client.runs.stream(
        thread_id,
        graph,
        input=payload,
        stream_mode=["custom", "values"],
        stream_subgraphs=True,
    ):
        kind, _, namespace = part.event.partition("|")
        if kind == "error":
            run.errors.append(part.data)
        elif kind == "custom":
            run.events.append(part.data)
        elif (
            kind == "values"
            and namespace
            and isinstance(part.data, dict)
            and part.data.get("compaction")
        ):  # a compaction run's values, from inside the subgraph: its last report wins
            run.reports[namespace] = part.data["compaction"]
    return run


async def converse(client: LangGraphClient, thread_id: str, graph: str, turns: int) -> list[Run]:
    """``turns`` turns on a new thread of that id; fail at once on a run that failed."""
    await client.threads.create(thread_id=thread_id, graph_id=graph)
    runs = []
    for turn in range(1, turns + 1):
        run = await send(client, thread_id, graph, turn)
        assert not run.errors, f"{graph} turn {turn} failed: {run.errors}"
        runs.append(run)
    statuses = [r["status"] for r in await client.runs.list(thread_id, limit=turns + 10)]
    assert statuses == ["success"] * turns
    return runs


def events(runs: list[Run], kind: str) -> list[dict[str, Any]]:
    return [event for run in runs for event in run.events if event.get("type") == kind]


def reports(runs: list[Run]) -> list[dict[str, Any]]:
    return [report for run in runs for report in run.reports.values()]


async def stored(store_url: str, thread_id: str) -> list[SummaryRecord]:
    """The thread's rows, read by a store of the test's own (off the loop: sync API)."""

    def read() -> list[SummaryRecord]:
        store = SummaryStore(store_url)
        try:
            rows: list[SummaryRecord] = store.list_summaries(thread_id)
            return rows
        finally:
            store.close()

    return await asyncio.to_thread(read)


async def messages_of(client: LangGraphClient, thread_id: str) -> list[dict[str, Any]]:
    """The thread's messages; the state must hold nothing but them."""
    state = await client.threads.get_state(thread_id)
    values = state["values"]
    assert isinstance(values, dict)
    assert set(values) == {"messages"}, "an untracked compaction key reached the checkpoint"
    messages: list[dict[str, Any]] = values["messages"]
    return messages


def check_history(messages: list[dict[str, Any]], turns: int) -> None:
    """Every turn in order: the request, its tool call and result if it asked, the answer."""
    assert len({m["id"] for m in messages}) == len(messages), "a message id appears twice"
    position = 0
    for turn in range(1, turns + 1):
        human = messages[position]
        assert (human["type"], human["id"], human["content"]) == (
            "human",
            f"turn-{turn}",
            request(turn),
        )
        position += 1
        if asks_for_a_tool(turn):
            call, result = messages[position], messages[position + 1]
            assert call["type"] == "ai" and len(call["tool_calls"]) == 1
            assert result["type"] == "tool"
            assert result["tool_call_id"] == call["tool_calls"][0]["id"]
            position += 2
        answer = messages[position]
        assert answer["type"] == "ai" and not answer.get("tool_calls") and answer["content"]
        position += 1
    assert position == len(messages), "messages after the last turn"


# -- the tests -----------------------------------------------------------------------------


async def first_conversation(
    client: LangGraphClient, store_url: str, graph: str, thread_id: str
) -> list[Run]:
    """30 turns on a fresh thread, checked; the runs, for the replay to compare with."""
    runs = await converse(client, thread_id, graph, TURNS)
    compacting, compacted = (events(runs, k) for k in ("context_compacting", "context_compacted"))
    assert len(compacted) >= 3, f"{graph}: expected several summaries in {TURNS} turns"
    assert len(compacting) == len(compacted)
    assert not events(runs, "context_compaction_failed")
    actions = [report["action"] for report in reports(runs)]
    assert actions.count("summarized") == len(compacted)
    assert "failed" not in actions
    check_history(await messages_of(client, thread_id), TURNS)
    rows = await stored(store_url, thread_id)
    assert [row.id for row in rows] == [event["summary_id"] for event in compacted]
    assert [row.version for row in rows] == list(range(1, len(rows) + 1))
    return runs


async def replay(
    client: LangGraphClient, store_url: str, graph: str, thread_id: str, first: list[Run]
) -> None:
    """The same 30 turns on the same thread, after a restart: every summary comes from the store."""
    rows_before = await stored(store_url, thread_id)
    await client.threads.delete(thread_id)  # the conversation starts again on this thread id
    runs = await converse(client, thread_id, graph, TURNS)
    assert not events(runs, "context_compacting"), f"{graph}: a summary was made again"
    assert not events(runs, "context_compaction_failed")
    assert all(report["summary_calls"] == 0 for report in reports(runs))
    assert {"summarized", "failed"}.isdisjoint(report["action"] for report in reports(runs))
    used = [report["summary_id"] for report in reports(runs)]
    assert used == [report["summary_id"] for report in reports(first)], "not the same summaries"
    assert await stored(store_url, thread_id) == rows_before
    check_history(await messages_of(client, thread_id), TURNS)


@pytest.mark.slow
async def test_thirty_turns_per_graph_then_a_restart_reuses_every_summary(
    start_server: StartServer, tmp_path: Path
) -> None:
    store_url = f"sqlite:///{tmp_path / 'summaries.db'}"  # fresh: the server creates the schema
    threads = {graph: str(uuid.uuid4()) for graph in GRAPHS}
    server = await started(start_server, store_url)
    async with get_client(url=server.url) as client:  # both graphs side by side
        conversations = [
            first_conversation(client, store_url, graph, thread_id)
            for graph, thread_id in threads.items()
        ]
        first = dict(zip(threads, await asyncio.gather(*conversations), strict=True))
    await restart(server)
    async with get_client(url=server.url) as client:
        await asyncio.gather(
            *(replay(client, store_url, g, t, first[g]) for g, t in threads.items())
        )


@pytest.mark.slow
async def test_a_store_that_cannot_be_opened_fails_no_run(
    start_server: StartServer, tmp_path: Path
) -> None:
    not_a_folder = tmp_path / "not-a-folder"
    not_a_folder.write_text("a file where the store's folder should be\n")
    server = await started(start_server, f"sqlite:///{not_a_folder / 'summaries.db'}")
    turns = 12  # past the trigger: compaction needs the store from about turn 8

    async def without_store(client: LangGraphClient, graph: str) -> None:
        thread_id = str(uuid.uuid4())
        runs = await converse(client, thread_id, graph, turns)
        assert events(runs, "context_compaction_failed"), f"{graph}: outage not reported"
        assert not events(runs, "context_compacted")
        assert "failed" in [report["action"] for report in reports(runs)]
        check_history(await messages_of(client, thread_id), turns)

    async with get_client(url=server.url) as client:
        await asyncio.gather(*(without_store(client, graph) for graph in GRAPHS))


# -- scripts/serve and examples/server/client.py, as a person runs them ------------------------

ROOT = APP_DIR.parents[1]
CLIENT_TURNS = 12  # the first summary comes at about turn 9


class ServeScript(DevServer):
    """``scripts/serve`` on the store URL: it picks the port and prints the URL, read here."""

    def start(self, timeout: float = 90.0) -> None:
        assert self._process is None, "the server is already running"
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LANGSMITH_API_KEY")}
        env |= {"PYTHON": sys.executable, "COMPACTION_STORE_URL": self.store_url}
        self._log = self.log_path.open("ab")
        self._process = subprocess.Popen(
            [str(ROOT / "scripts" / "serve"), "--data-dir", str(self.workdir / "data")],
            cwd=self.workdir,  # the script finds the checkout from its own path
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self.stop()
                raise RuntimeError(f"scripts/serve exited at start:\n{self.log_tail()}")
            if not self.port and (
                said := re.search(r" at http://127\.0\.0\.1:(\d+)\n", self.log_text())
            ):
                self.port = int(said[1])
            if self.port and self._answers():
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(
            f"scripts/serve did not answer within {timeout:.0f} s:\n{self.log_tail()}"
        )


def check_client_output(out: str, store_url: str) -> None:
    """Every turn in order with its answer, the events printed, the summaries in the store."""
    lines = out.splitlines()
    thread_id = re.fullmatch(r"graph \w+, thread (\S+), http://\S+", lines[0])
    assert thread_id, lines[0]
    turns = [i for i, line in enumerate(lines) if line.startswith("turn ")]
    assert [lines[i].split()[:3] for i in turns] == [
        ["turn", str(n), "user:"] for n in range(1, CLIENT_TURNS + 1)
    ]
    for start, end in zip(turns, [*turns[1:], len(lines) - 1], strict=True):
        assert lines[end - 1].startswith("    assistant: "), lines[start:end]
    assert all(len(line) <= 100 for line in lines)
    compacted = [line for line in lines if line.lstrip().startswith(">> context_compacted:")]
    assert compacted and ">> context_compacted: summary v1," in compacted[0]
    assert len([line for line in lines if ">> context_compacting:" in line]) == len(compacted)
    assert lines[-1] == f"{CLIENT_TURNS} turns; summaries made: {len(compacted)}"
    with SummaryStore(store_url) as store:
        assert len(store.list_summaries(thread_id[1])) == len(compacted)


@pytest.mark.slow
def test_scripts_serve_and_the_client_hold_a_conversation_with_each_graph(
    tmp_path: Path,
) -> None:
    store_url = f"sqlite:///{tmp_path / 'summaries.db'}"
    server = ServeScript("scripts/serve", tmp_path / "serve", store_url=store_url)
    server.start()
    try:
        said = server.log_text().splitlines()
        assert said[0] == f"Serving examples/server (graphs parent, agent) at {server.url}"
        assert server.port != 2024
        assert f"examples/server/client.py --url {server.url}" in said[3]
        command = [sys.executable, str(APP_DIR / "client.py"), "--url", server.url]
        clients = {
            graph: subprocess.Popen(
                [*command, "--graph", graph, "--turns", str(CLIENT_TURNS)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for graph in GRAPHS
        }
        for graph, client in clients.items():
            out, err = client.communicate(timeout=300)
            assert client.returncode == 0, f"{graph}: {err}"
            assert err == ""
            check_client_output(out, store_url)
    finally:
        server.stop()
        print(f"--- {server.log_path} ---\n{server.log_tail(200)}")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--bogus"], "scripts/serve: unknown argument '--bogus'"),
        (["--port", "20x4"], "scripts/serve: --port must be a number from 1 to 65535, got '20x4'"),
        (["--port"], "scripts/serve: --port needs a number"),
    ],
)
def test_scripts_serve_checks_its_arguments_before_anything_starts(
    args: list[str], said: str, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHON": str(tmp_path / "no-such-python")}  # would fail if reached
    done = subprocess.run(
        [str(ROOT / "scripts" / "serve"), *args], capture_output=True, text=True, env=env
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[0] == said
    helped = subprocess.run(
        [str(ROOT / "scripts" / "serve"), "--help"], capture_output=True, text=True, env=env
    )
    assert helped.returncode == 0 and "--port" in helped.stdout and "--data-dir" in helped.stdout
