"""Steering compaction under LangGraph's server: the ``compact`` tool and a person's review.

``examples/server`` served by a real ``langgraph dev`` (``_server.DevServer``, blockbuster on),
driven over HTTP with ``langgraph_sdk``:

- graph ``steering`` (``create_agent``, ``CompactionMiddleware(compact_tool=True)``): a few
  turns under the trigger make no summary; then the user asks the agent to compact, the agent
  calls ``compact`` with a focus, and the model call after the tool's result is compacted: the
  ``context_compacted`` event reaches the client, the store holds that summary, and the turn
  after makes none (the request was consumed);
- graph ``review`` (the ``parent`` graph with ``review: true``): the run that crosses the
  trigger ends interrupted, the client sees the ``compaction_review`` interrupt with the
  summary; resumed with ``{"action": "accept"}`` the run finishes and the store holds that
  summary, resumed with ``{"action": "edit", "summary": ...}`` it holds the edited text.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _server import DevServer, find_cli
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from test_server import Run, events, messages_of, reports, request, stored

from langgraph_compaction.summary.ledger import split_ledger

CLI = find_cli()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CLI is None,
        reason="the langgraph CLI is not installed (pip install 'langgraph-cli[inmem]'; the "
        "dev extra has it)",
    ),
]

FOCUS = "the ryokan bookings in Kyoto"
ASK_TO_COMPACT = f"please compact the context, focusing on {FOCUS}."
EDITED = "用户计划去京都旅行; пользователь бронирует рёкан. Edited by a person."
"""A reviewer's own summary: Chinese, Russian and English."""
MAX_TURNS = 16
"""The review graph's first summary comes at about turn 9."""


@dataclass
class Turn(Run):
    """What the client saw of one run, with the interrupts it ended with."""

    interrupts: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DevServer]:
    """``langgraph dev`` on a fresh SQLite store; stopped (and its log shown) at teardown."""
    assert CLI is not None
    started = DevServer(CLI, tmp_path / "server", store_url=store_url_of(tmp_path))
    started.start()
    yield started
    started.stop()
    print(f"--- {started.log_path} (shown when the test failed) ---\n{started.log_tail(200)}")


def store_url_of(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'summaries.db'}"


async def stream_run(
    client: LangGraphClient,
    thread_id: str,
    graph: str,
    *,
    text: str | None = None,
    turn: int = 0,
    resume: dict[str, Any] | None = None,
) -> Turn:
    """One run: a user message (``text`` as turn ``turn``), or a resume of an interrupt."""
    kwargs: dict[str, Any] = {}
    if resume is not None:
        kwargs["command"] = {"resume": resume}
    else:
        message = {"role": "user", "content": text, "id": f"turn-{turn}"}
        kwargs["input"] = {"messages": [message]}
    run = Turn()
    async for part in client.runs.stream(
        thread_id,
        graph,
        stream_mode=["custom", "values", "updates"],
        stream_subgraphs=True,
        **kwargs,
    ):
        kind, _, namespace = part.event.partition("|")
        data = part.data
        if kind == "error":
            run.errors.append(data)
        elif kind == "custom":
            run.events.append(data)
        elif kind in ("values", "updates") and isinstance(data, dict):
            if not namespace and "__interrupt__" in data:  # in both modes: keep each once
                run.interrupts.extend(i for i in data["__interrupt__"] if i not in run.interrupts)
            elif kind == "values" and namespace and data.get("compaction"):
                run.reports[namespace] = data["compaction"]
    assert not run.errors, f"{graph}: the run failed: {run.errors}"
    return run


async def thread_status(client: LangGraphClient, thread_id: str) -> str:
    thread = await client.threads.get(thread_id)
    return str(thread["status"])


# -- the compact tool -------------------------------------------------------------------------


async def test_the_agent_compacts_its_context_with_the_compact_tool(
    server: DevServer, tmp_path: Path
) -> None:
    store_url, thread_id = store_url_of(tmp_path), str(uuid.uuid4())
    async with get_client(url=server.url) as client:
        await client.threads.create(thread_id=thread_id, graph_id="steering")
        before: list[Run] = [
            await stream_run(client, thread_id, "steering", text=request(turn), turn=turn)
            for turn in (1, 2, 3)
        ]
        assert not events(before, "context_compacted"), "the trigger fired: too many turns"
        assert {r["action"] for r in reports(before)} == {"passthrough"}
        asked = await stream_run(
            client, thread_id, "steering", text=f"Turn 4: {ASK_TO_COMPACT}", turn=4
        )
        # Two model calls: the one that calls the tool, and the one after, compacted.
        assert [r["action"] for r in asked.reports.values()] == ["passthrough", "summarized"]
        (compacted,) = events([asked], "context_compacted")
        assert len(events([asked], "context_compacting")) == 1
        rows = await stored(store_url, thread_id)
        assert [row.id for row in rows] == [compacted["summary_id"]]
        messages = await messages_of(client, thread_id)
        (result,) = [m for m in messages if m["type"] == "tool" and m["name"] == "compact"]
        assert result["content"] == (
            f"The context will be compacted before your next model call, focusing on: {FOCUS}"
        )
        assert messages[-1]["type"] == "ai" and messages[-1]["content"]
        # The request was consumed: the next turn, under the trigger, makes no summary.
        after = await stream_run(client, thread_id, "steering", text=request(5), turn=5)
        assert not events([after], "context_compacting")
        assert "summarized" not in [r["action"] for r in after.reports.values()]
        assert len(await stored(store_url, thread_id)) == 1
        statuses = [r["status"] for r in await client.runs.list(thread_id)]
        assert statuses == ["success"] * 5


# -- review ----------------------------------------------------------------------------------


async def until_review(client: LangGraphClient, thread_id: str) -> tuple[int, dict[str, Any]]:
    """Turns on the ``review`` graph until one ends interrupted; that turn and the interrupt."""
    await client.threads.create(thread_id=thread_id, graph_id="review")
    for turn in range(1, MAX_TURNS + 1):
        run = await stream_run(client, thread_id, "review", text=request(turn), turn=turn)
        if run.interrupts:
            assert not events([run], "context_compacted"), "the summary was used unreviewed"
            (interrupt,) = run.interrupts
            assert await thread_status(client, thread_id) == "interrupted"
            state = await client.threads.get_state(thread_id)
            assert [i["value"] for i in state["interrupts"]] == [interrupt["value"]]
            return turn, interrupt["value"]
        assert await thread_status(client, thread_id) == "idle"
    raise AssertionError(f"no review interrupt in {MAX_TURNS} turns")


async def review_then(
    client: LangGraphClient, store_url: str, resume: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """Run a thread to its review, resume with ``resume``; the interrupt, the stored summary."""
    thread_id = str(uuid.uuid4())
    turn, value = await until_review(client, thread_id)
    assert set(value) == {"type", "thread_id", "version", "summary", "integrity"}
    assert (value["type"], value["thread_id"]) == ("compaction_review", thread_id)
    assert isinstance(value["version"], int) and value["summary"].strip()
    assert await stored(store_url, thread_id) == [], "stored before the person answered"
    resumed = await stream_run(client, thread_id, "review", resume=resume)
    assert not resumed.interrupts
    assert await thread_status(client, thread_id) == "idle"
    assert len(events([resumed], "context_compacted")) == 1
    rows = await stored(store_url, thread_id)
    assert rows, "nothing stored after the person answered"
    messages = await messages_of(client, thread_id)
    assert messages[-1]["type"] == "ai" and not messages[-1].get("tool_calls")
    assert f"turn-{turn}" in [m["id"] for m in messages]
    return value, rows[-1].summary


async def test_a_review_interrupt_reaches_the_client_and_accept_or_edit_resumes_it(
    server: DevServer, tmp_path: Path
) -> None:
    store_url = store_url_of(tmp_path)
    async with get_client(url=server.url) as client:
        (proposed, accepted), (_, edited) = await asyncio.gather(
            review_then(client, store_url, {"action": "accept"}),
            review_then(client, store_url, {"action": "edit", "summary": EDITED}),
        )
    assert accepted == proposed["summary"]  # the draft and its ledger, as shown
    assert split_ledger(edited)[0] == EDITED  # then the ledger recomputed against it
