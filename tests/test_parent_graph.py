"""The compaction subgraph embedded as a node of a parent agent graph with a real checkpointer.

One scripted conversation of 42 user turns (a tool call every third turn) runs through
``compaction -> agent -> tools -> compaction -> agent`` on a ``SqliteSaver``. A small trigger
makes the subgraph summarize several times. The tests then read what was persisted (the
graph state *and* the SQLite tables themselves), what the agent model received, what the
summary store holds, and what the stream showed. The same drive runs once more through
``ainvoke`` on an ``AsyncSqliteSaver`` and must give the agent the very same inputs.
"""

from __future__ import annotations

import itertools
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, cast

import pytest
from fakes import FakeToolCallingModel, RecordingSummarizer, ai_tool_call, message_text
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from traces import tool_pair_violations
from typing_extensions import TypedDict

from langgraph_compaction import (
    CompactionReport,
    SummaryRecord,
    SummaryStore,
    create_compaction_graph,
)

TURNS = 42
TOOL_EVERY = 3
TRIGGER_TOKENS = 1500
KEEP_MESSAGES = 6
MAX_SUMMARY_TOKENS = 300
SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
EPHEMERAL_CHANNELS = {"llm_input_messages", "compaction"}
COMPACTION_CONFIG: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": TRIGGER_TOKENS},
    "keep": {"type": "messages", "value": KEEP_MESSAGES},
    "max_summary_tokens": MAX_SUMMARY_TOKENS,
}


class ParentState(TypedDict):
    """The parent graph's state, as the README tells users to declare it."""

    messages: Annotated[list[AnyMessage], add_messages]
    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


@tool
def lookup(query: str) -> str:
    """Look up a booking record by a free-text query."""
    return f"record for {query}: " + "seat 12A, fare class Y, status confirmed; " * 6


def _is_tool_turn(turn: int) -> bool:
    return turn % TOOL_EVERY == 1


def _user_message(turn: int) -> HumanMessage:
    text = f"question {turn}: please check flight UA{100 + turn} and the traveller's options. "
    return HumanMessage(content=text * 2, id=f"user-{turn}")


def _tool_result(turn: int) -> str:
    return str(lookup.invoke({"query": f"booking {turn}"}))


def _agent_script() -> list[AIMessage | str]:
    """The agent's replies in call order: a tool turn makes two model calls."""
    script: list[AIMessage | str] = []
    for turn in range(TURNS):
        if _is_tool_turn(turn):
            script.append(
                ai_tool_call(
                    "lookup", {"query": f"booking {turn}"}, f"call-{turn}", msg_id=f"ai-{turn}-call"
                )
            )
        answer = f"answer {turn}: the flight is on time and the fare rules allow a change. "
        script.append(AIMessage(content=answer * 2, id=f"ai-{turn}"))
    return script


def _expected_history() -> list[tuple[str, str | None, str, str | None]]:
    """Every message the conversation adds, as (type, id, content, tool_call_id).

    Tool messages get a random id from ``add_messages``, so their id is not predicted.
    """
    replies = iter(_agent_script())
    expected: list[tuple[str, str | None, str, str | None]] = []
    for turn in range(TURNS):
        user = _user_message(turn)
        expected.append(("human", user.id, message_text(user), None))
        if _is_tool_turn(turn):
            call = next(replies)
            assert isinstance(call, AIMessage)
            expected.append(("ai", call.id, message_text(call), None))
            expected.append(("tool", None, _tool_result(turn), f"call-{turn}"))
        answer = next(replies)
        assert isinstance(answer, AIMessage)
        expected.append(("ai", answer.id, message_text(answer), None))
    return expected


@dataclass
class Drive:
    """Everything one run of the scripted conversation leaves behind."""

    model: FakeToolCallingModel
    summarizer: RecordingSummarizer
    store: SummaryStore
    thread_id: str
    reports: list[CompactionReport] = field(default_factory=list)
    """The compaction report the agent node found in its state, one per model call."""
    report_turns: list[int] = field(default_factory=list)
    """The user turn of each report."""
    events: list[list[dict[str, Any]]] = field(default_factory=list)
    """Per user turn: the custom stream events, in stream order."""
    event_namespaces: set[tuple[str, ...]] = field(default_factory=set)
    final_messages: list[BaseMessage] = field(default_factory=list)
    records: list[SummaryRecord] = field(default_factory=list)
    checkpoint_db: Path | None = None
    serde: Any = None


def _build_parent(
    drive: Drive, checkpointer: BaseCheckpointSaver[Any], current_turn: list[int]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    compaction = create_compaction_graph(
        COMPACTION_CONFIG, model=drive.summarizer, store=drive.store
    )
    bound = drive.model.bind_tools([lookup])

    def agent(state: ParentState) -> dict[str, Any]:
        report = state.get("compaction")
        assert report is not None, "the compaction node ran right before, it must report"
        drive.reports.append(report)
        drive.report_turns.append(current_turn[0])
        return {"messages": [bound.invoke(state.get("llm_input_messages") or state["messages"])]}

    async def aagent(state: ParentState) -> dict[str, Any]:
        report = state.get("compaction")
        assert report is not None, "the compaction node ran right before, it must report"
        drive.reports.append(report)
        drive.report_turns.append(current_turn[0])
        reply = await bound.ainvoke(state.get("llm_input_messages") or state["messages"])
        return {"messages": [reply]}

    def route(state: ParentState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(ParentState)
    builder.add_node("compaction", compaction)
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent, name="agent"))
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "compaction")
    builder.add_edge("compaction", "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "compaction")
    return builder.compile(checkpointer=checkpointer)


def _new_drive(store_path: Path) -> Drive:
    return Drive(
        model=FakeToolCallingModel(script=_agent_script()),
        summarizer=RecordingSummarizer(),
        store=SummaryStore(f"sqlite:///{store_path}"),
        thread_id="parent-thread",
    )


def _config(drive: Drive) -> RunnableConfig:
    return {"configurable": {"thread_id": drive.thread_id}}


@pytest.fixture(scope="module")
def sync_drive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Drive]:
    """The 42 turns through ``graph.stream(stream_mode="custom", subgraphs=True)``."""
    folder = tmp_path_factory.mktemp("parent_sync")
    drive = _new_drive(folder / "summaries.db")
    drive.checkpoint_db = folder / "checkpoints.db"
    turn = [0]
    with SqliteSaver.from_conn_string(str(drive.checkpoint_db)) as saver:
        graph = _build_parent(drive, saver, turn)
        config = _config(drive)
        for k in range(TURNS):
            turn[0] = k
            events: list[dict[str, Any]] = []
            stream = graph.stream(
                {"messages": [_user_message(k)]}, config, stream_mode="custom", subgraphs=True
            )
            for namespace, chunk in cast(Iterator[tuple[tuple[str, ...], dict[str, Any]]], stream):
                drive.event_namespaces.add(namespace)
                events.append(chunk)
            drive.events.append(events)
        drive.final_messages = list(graph.get_state(config).values["messages"])
        drive.serde = saver.serde
    drive.records = drive.store.list_summaries(drive.thread_id)
    yield drive
    drive.store.close()


def _model_input_view(messages: Sequence[BaseMessage]) -> list[tuple[Any, ...]]:
    """A model input without the ids that differ between runs (tool results, summary rows)."""
    view = []
    for m in messages:
        stable_id = None if isinstance(m, ToolMessage) or m.name == "summary" else m.id
        calls = [(c["name"], c["args"], c["id"]) for c in getattr(m, "tool_calls", None) or []]
        view.append((m.type, stable_id, m.name, m.content, calls, getattr(m, "tool_call_id", None)))
    return view


# -- what the checkpoint holds ---------------------------------------------------------------


def test_checkpoint_holds_every_message_in_order_with_original_content(sync_drive: Drive) -> None:
    actual = [
        (
            m.type,
            None if isinstance(m, ToolMessage) else m.id,
            message_text(m),
            getattr(m, "tool_call_id", None),
        )
        for m in sync_drive.final_messages
    ]
    assert actual == _expected_history()
    assert all(m.id for m in sync_drive.final_messages)
    # The compaction really happened on this history: several summaries over it.
    assert len(sync_drive.records) >= 3


def test_checkpoint_never_holds_a_summary_message(sync_drive: Drive) -> None:
    for m in sync_drive.final_messages:
        assert m.name != "summary", m
        assert not (m.id or "").startswith("compaction-summary-"), m
        assert not message_text(m).startswith(SUMMARY_PREFIX), m


def _checkpoint_rows(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with sqlite3.connect(path) as conn:
        checkpoints = conn.execute(
            "SELECT checkpoint_ns, type, checkpoint FROM checkpoints"
        ).fetchall()
        writes = conn.execute("SELECT checkpoint_ns, channel, type, value FROM writes").fetchall()
    conn.close()
    return checkpoints, writes


def test_checkpointer_tables_hold_no_ephemeral_channel_and_no_subgraph(sync_drive: Drive) -> None:
    assert sync_drive.checkpoint_db is not None
    checkpoints, writes = _checkpoint_rows(sync_drive.checkpoint_db)
    assert checkpoints and writes
    assert {ns for ns, _, _ in checkpoints} == {""}, "the subgraph checkpointed on its own"
    assert {ns for ns, _, _, _ in writes} == {""}
    channels = {channel for _, channel, _, _ in writes}
    assert "messages" in channels
    assert not channels & EPHEMERAL_CHANNELS, channels
    for _, kind, blob in checkpoints:
        checkpoint = sync_drive.serde.loads_typed((kind, blob))
        assert not set(checkpoint["channel_values"]) & EPHEMERAL_CHANNELS
        # channel_versions may name them (LangGraph bumps a version string); values never.
        for m in checkpoint["channel_values"].get("messages", []):
            assert m.name != "summary" and not (m.id or "").startswith("compaction-summary-")
    for _, channel, kind, blob in writes:
        if channel != "messages":
            continue
        written = sync_drive.serde.loads_typed((kind, blob))
        for m in written if isinstance(written, list) else [written]:
            assert m.name != "summary" and not (m.id or "").startswith("compaction-summary-")


# -- what the agent model received -----------------------------------------------------------


def test_every_model_input_obeys_the_tool_pair_rule(sync_drive: Drive) -> None:
    calls = sync_drive.model.calls
    assert len(calls) == TURNS + len([k for k in range(TURNS) if _is_tool_turn(k)])
    for n, messages in enumerate(calls):
        assert tool_pair_violations(messages, allow_trailing_calls=False) == [], n
    assert all(report.repaired_pairs == 0 for report in sync_drive.reports)


def test_agent_sees_the_stored_summary_after_the_first_compaction(sync_drive: Drive) -> None:
    reports, calls = sync_drive.reports, sync_drive.model.calls
    assert len(reports) == len(calls)
    by_id = {record.id: record for record in sync_drive.records}
    first = next(n for n, r in enumerate(reports) if r.action == "summarized")
    assert all(r.action == "passthrough" for r in reports[:first])
    assert not any(sync_drive.model.saw_summary(n) for n in range(first))
    for n in range(first, len(calls)):
        report = reports[n]
        assert report.action in ("summarized", "reused"), (n, report.action)
        summaries = [m for m in calls[n] if isinstance(m, HumanMessage) and m.name == "summary"]
        assert len(summaries) == 1, n
        record = by_id[report.summary_id or ""]
        assert summaries[0].content == SUMMARY_PREFIX + record.summary
        assert summaries[0].id == f"compaction-summary-{record.id}"
        assert summaries[0].additional_kwargs == {
            "hide_from_ui": True,
            "lc_source": "summarization",
        }
        # The input still ends with the newest real message of the conversation.
        assert calls[n][-1].type in ("human", "tool")
        assert calls[n][-1].name != "summary"
    assert {r.action for r in reports[first:]} == {"summarized", "reused"}


def test_model_input_ends_with_the_current_turn_and_keeps_the_latest_user(
    sync_drive: Drive,
) -> None:
    for n, messages in enumerate(sync_drive.model.calls):
        turn = sync_drive.report_turns[n]
        latest_user = _user_message(turn)
        users = [m for m in messages if isinstance(m, HumanMessage) and m.name != "summary"]
        assert users and users[-1].id == latest_user.id, n
        assert users[-1].content == latest_user.content


def test_store_keeps_every_summary_with_its_lineage(sync_drive: Drive) -> None:
    records = sync_drive.records
    summarized = [r for r in sync_drive.reports if r.action == "summarized"]
    assert len(records) == len(summarized) >= 3
    assert [r.version for r in records] == list(range(1, len(records) + 1))
    assert records[0].parent_id is None and records[0].kind == "initial"
    for parent, child in itertools.pairwise(records):
        assert child.parent_id == parent.id
        assert child.kind == "update"
        assert child.covered_messages > parent.covered_messages
    assert [r.summary_id for r in summarized] == [r.id for r in records]
    assert [r.summary_version for r in summarized] == [r.version for r in records]
    # Each boundary is a message of the persisted conversation, at the covered position
    # (the parent's messages, without any leading system message here).
    for record in records:
        boundary = sync_drive.final_messages[record.covered_messages - 1]
        assert boundary.id == record.boundary_message_id
    # An update prompt carries the previous summary: the lineage is real, not just labels.
    for record, call in zip(records[1:], sync_drive.summarizer.calls[1:], strict=False):
        parent = next(r for r in records if r.id == record.parent_id)
        assert parent.summary in call.prompt


# -- stream events and the summarizer call ---------------------------------------------------


def test_custom_events_surround_each_summary_and_skip_reuse(sync_drive: Drive) -> None:
    compaction_types = {"context_compacting", "context_compacted"}
    reuse_turns = 0
    for turn, events in enumerate(sync_drive.events):
        reports = [
            r for r, t in zip(sync_drive.reports, sync_drive.report_turns, strict=True) if t == turn
        ]
        seen = [e for e in events if e.get("type") in compaction_types]
        expected: list[tuple[str, str | None]] = []
        for report in reports:
            if report.action == "summarized":
                expected += [("context_compacting", None), ("context_compacted", report.summary_id)]
        assert [(e["type"], e.get("summary_id")) for e in seen] == expected, turn
        if reports and all(r.action == "reused" for r in reports):
            reuse_turns += 1
    assert reuse_turns >= 10
    assert sum(len(e) for e in sync_drive.events) == 2 * len(sync_drive.records)
    # The events came from inside the subgraph (hence subgraphs=True is needed).
    assert all(ns and ns[0].startswith("compaction:") for ns in sync_drive.event_namespaces)
    compacted = [
        e for events in sync_drive.events for e in events if e["type"] != "context_compacting"
    ]
    assert [e["version"] for e in compacted] == [r.version for r in sync_drive.records]
    assert all(
        e["thread_id"] == sync_drive.thread_id for events in sync_drive.events for e in events
    )


def test_summarizer_runs_tagged_nostream_and_capped(sync_drive: Drive) -> None:
    calls = sync_drive.summarizer.calls
    assert len(calls) >= len(sync_drive.records) >= 3
    for call in calls:
        assert "nostream" in call.tags
        assert call.max_tokens == MAX_SUMMARY_TOKENS
    # Summarizing never needed more than one call per summary at this size.
    assert sum(r.summary_calls for r in sync_drive.reports) == len(calls)


def _stream_messages(tmp_path: Path, *, subgraphs: bool) -> tuple[Drive, list[BaseMessage]]:
    """Drive 16 turns (one summary, then reuse) with ``stream_mode="messages"``."""
    drive = _new_drive(tmp_path / "summaries.db")
    streamed: list[BaseMessage] = []
    turn = [0]
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        graph = _build_parent(drive, saver, turn)
        for k in range(16):
            turn[0] = k
            stream = graph.stream(
                {"messages": [_user_message(k)]},
                _config(drive),
                stream_mode="messages",
                subgraphs=subgraphs,
            )
            for item in cast(Iterator[Any], stream):
                chunk, _metadata = item[1] if subgraphs else item
                streamed.append(chunk)
    drive.store.close()
    assert drive.summarizer.call_count >= 1, (
        "the drive must summarize for the test to mean anything"
    )
    assert any(r.action == "reused" for r in drive.reports)
    assert any(message_text(m).startswith("answer ") for m in streamed)
    return drive, streamed


def test_messages_stream_leaves_the_summarizer_call_out(tmp_path: Path) -> None:
    _, streamed = _stream_messages(tmp_path, subgraphs=True)
    # The summarizer's own reply (ids "recording-summarizer-<n>", text "SUMMARY#<n> ...").
    assert not any((m.id or "").startswith("recording-summarizer") for m in streamed)
    assert not any(message_text(m).startswith("SUMMARY#") for m in streamed)


# -- time travel -----------------------------------------------------------------------------

FORK_TURN = 14
"""The user turn rewritten in the fork: after the first summary, inside the second one."""
EDITED_TEXT = "question 14 (edited): forget the flights, book a hotel in Lisbon instead."


def _calls_before(turn: int) -> int:
    """Agent model calls made before ``turn`` (a tool turn makes two)."""
    return turn + sum(1 for k in range(turn) if _is_tool_turn(k))


def _copy_sqlite(source: Path, target: Path) -> Path:
    for suffix in ("", "-wal", "-shm"):
        side = source.with_name(source.name + suffix)
        if side.exists():
            shutil.copy(side, target.with_name(target.name + suffix))
    return target


@pytest.mark.slow
def test_forked_history_never_gets_a_stale_summary(sync_drive: Drive, tmp_path: Path) -> None:
    """Rewrite an early user turn from an old checkpoint (time travel) and go on from there.

    The fork repeats the original branch's message ids, so a stored summary of the original
    branch may even end on the same message id at the same position: only its prefix (which
    holds the original text of the rewritten turn) tells it apart.
    """
    assert sync_drive.checkpoint_db is not None
    checkpoints = _copy_sqlite(sync_drive.checkpoint_db, tmp_path / "checkpoints.db")
    store_file = _copy_sqlite(
        Path(sync_drive.store.url.removeprefix("sqlite:///")), tmp_path / "s.db"
    )
    fork = Drive(
        model=FakeToolCallingModel(script=_agent_script()[_calls_before(FORK_TURN) :]),
        summarizer=RecordingSummarizer(),
        store=SummaryStore(f"sqlite:///{store_file}"),
        thread_id=sync_drive.thread_id,
    )
    original_ids = {record.id for record in sync_drive.records}
    edited_at = next(
        k for k, m in enumerate(sync_drive.final_messages) if m.id == f"user-{FORK_TURN}"
    )
    # Original summaries whose prefix ends before the rewritten message stay valid.
    still_valid = {r.id for r in sync_drive.records if r.covered_messages <= edited_at}
    assert still_valid and still_valid != original_ids, "the fork point must split the summaries"

    turn = [FORK_TURN]
    try:
        with SqliteSaver.from_conn_string(str(checkpoints)) as saver:
            graph = _build_parent(fork, saver, turn)
            config = _config(fork)
            before_fork = next(
                snapshot
                for snapshot in graph.get_state_history(config)
                if not snapshot.next and snapshot.values["messages"][-1].id == f"ai-{FORK_TURN - 1}"
            )
            edited = HumanMessage(content=EDITED_TEXT, id=f"user-{FORK_TURN}")
            graph.invoke({"messages": [edited]}, before_fork.config)
            for k in range(FORK_TURN + 1, TURNS):
                turn[0] = k
                graph.invoke({"messages": [_user_message(k)]}, config)
            forked = graph.get_state(config).values["messages"]
        records = {r.id: r for r in fork.store.list_summaries(fork.thread_id)}
    finally:
        fork.store.close()

    # The fork's checkpoint: the original prefix, then the rewritten turn.
    assert [m.id for m in forked[:edited_at]] == [
        m.id for m in sync_drive.final_messages[:edited_at]
    ]
    assert forked[edited_at].id == f"user-{FORK_TURN}"
    assert forked[edited_at].content == EDITED_TEXT

    # The trap is real: a stale summary ends on a message id found at the same position here.
    assert any(
        r.covered_messages <= len(forked)
        and forked[r.covered_messages - 1].id == r.boundary_message_id
        for r in sync_drive.records
        if r.id not in still_valid
    )

    original_text = message_text(_user_message(FORK_TURN))
    new_ids = set(records) - original_ids
    assert new_ids, "the fork must make summaries of its own"
    for n, (report, messages) in enumerate(zip(fork.reports, fork.model.calls, strict=True)):
        assert tool_pair_violations(messages, allow_trailing_calls=False) == [], n
        assert all(original_text not in message_text(m) for m in messages), n
        if report.summary_id is None:
            continue
        assert report.summary_id in still_valid | new_ids, f"call {n} got a stale summary"
        # Every ancestor of the summary in use is valid for this history too.
        record = records[report.summary_id]
        while record.parent_id is not None:
            record = records[record.parent_id]
            assert record.id in still_valid | new_ids, f"call {n}: stale ancestor {record.id}"
    assert {r.summary_id for r in fork.reports} & new_ids, "the fork's own summaries were used"
    # The fork's summaries were made from the rewritten text, never the original one.
    prompts = [call.prompt for call in fork.summarizer.calls]
    assert any(EDITED_TEXT in prompt for prompt in prompts)
    assert all(original_text not in prompt for prompt in prompts)
    for record_id in new_ids:
        record = records[record_id]
        assert record.version > len(original_ids)
        assert record.parent_id is None or record.parent_id in still_valid | new_ids


# -- sync / async parity ---------------------------------------------------------------------


@pytest.mark.slow
async def test_async_drive_gives_the_model_the_same_inputs(
    sync_drive: Drive, tmp_path: Path
) -> None:
    drive = _new_drive(tmp_path / "summaries-async.db")
    turn = [0]
    try:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
            graph = _build_parent(drive, saver, turn)
            config = _config(drive)
            for k in range(TURNS):
                turn[0] = k
                await graph.ainvoke({"messages": [_user_message(k)]}, config)
            state = await graph.aget_state(config)
        records = await drive.store.alist_summaries(drive.thread_id)
    finally:
        await drive.store.aclose()
    sync_inputs = [_model_input_view(call) for call in sync_drive.model.calls]
    async_inputs = [_model_input_view(call) for call in drive.model.calls]
    assert len(async_inputs) == len(sync_inputs)
    for n, (sync_input, async_input) in enumerate(zip(sync_inputs, async_inputs, strict=True)):
        assert async_input == sync_input, f"model call {n} differs between sync and async"
    assert [r.action for r in drive.reports] == [r.action for r in sync_drive.reports]
    assert [r.summary for r in records] == [r.summary for r in sync_drive.records]
    assert [r.covered_messages for r in records] == [r.covered_messages for r in sync_drive.records]
    assert _model_input_view(state.values["messages"]) == _model_input_view(
        sync_drive.final_messages
    )
    assert [c.prompt for c in drive.summarizer.calls] == [
        c.prompt for c in sync_drive.summarizer.calls
    ]


def test_messages_stream_marks_the_injected_summary_hidden(tmp_path: Path) -> None:
    # LangGraph's ``stream_mode="messages"`` emits every message a node returns whose id was
    # not in the node's input, and the parent's compaction node returns the summary inside
    # ``llm_input_messages``. Only a node tag (which the parent sets, not us) could hide it, so
    # the summary carries ``hide_from_ui`` for chat UIs to skip, as documented in the README.
    _, streamed = _stream_messages(tmp_path, subgraphs=False)
    summaries = [m for m in streamed if m.name == "summary"]
    assert summaries, "a compacted turn should have streamed its model input"
    assert all(m.additional_kwargs.get("hide_from_ui") is True for m in summaries)
    assert all(m.id and m.id.startswith("compaction-summary-") for m in summaries)
