"""What survives a compaction, through every front door (DESIGN 6.13): a summarizer that names
none of the conversation's identifiers still leaves every one of the user's identifiers and
the failed edit in the model input, in the stored row (text, figures, items), in the
``context_compacted`` event and the report; an update keeps them; ``integrity.enabled: false``
stores the reply as written; ``repair`` asks once more; review shows the ledger, keeps it on
accept and recomputes it on edit; the custom compactor takes the same path. SQLite and
PostgreSQL, sync and async.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from _doors import DOORS, MODES, Door, Mode, build_agent, run, stream_events, thread_config
from conversations import graph_input
from fakes import FakeToolCallingModel, RecordingSummarizer, SummarizerCall
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.summary.ledger import LEDGER_HEADING, holds, split_ledger

TRIGGER = {"trigger": {"type": "messages", "value": 8}, "keep": {"type": "messages", "value": 2}}

USER_IDS = ("ETL-212", "02:15 UTC", "deploy/cron.yaml", "$1,250", "sofia_kim_7287")
"""What the user wrote that a model cannot rebuild."""

VAGUE = "The user reported a nightly job failure; the assistant tried an edit, which failed."
"""A summary that names none of the identifiers, as small models write them."""


def conversation(start: int = 0) -> list[BaseMessage]:
    """Ten messages: the user's identifiers (one glued to Chinese text), a failed edit."""
    return [
        HumanMessage(
            "Our nightly job ETL-212 fails at 02:15 UTC; its config is deploy/cron.yaml and "
            "the bill was $1,250.",
            id=f"h{start}",
        ),
        AIMessage(
            "",
            id=f"a{start + 1}",
            tool_calls=[
                {
                    "name": "edit_file",
                    "args": {"path": "deploy/cron.yaml", "text": "schedule: 03:00"},
                    "id": f"call-{start}",
                }
            ],
        ),
        ToolMessage(
            "Error: permission denied",
            tool_call_id=f"call-{start}",
            status="error",
            id=f"t{start + 2}",
        ),
        AIMessage("The edit failed; the table holds 68,112 rows.", id=f"a{start + 3}"),
        HumanMessage("请检查ETL-212的状态，用户是sofia_kim_7287。", id=f"h{start + 4}"),  # noqa: RUF001
        *(
            (HumanMessage if n % 2 == 0 else AIMessage)(f"next step {n}", id=f"x{start + n}")
            for n in range(5, 10)
        ),
    ]


def vague(call: SummarizerCall) -> str:
    return VAGUE


def summary_sent(agent_model: FakeToolCallingModel) -> str:
    for message in agent_model.last_messages:
        if isinstance(message, HumanMessage) and message.name == "summary":
            return str(message.content)
    raise AssertionError("the model input holds no summary")


def compacted(events: list[dict[str, Any]]) -> dict[str, Any]:
    (event,) = [e for e in events if e.get("type") == "context_compacted"]
    return event


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", DOORS)
async def test_every_user_identifier_and_the_failed_edit_survive_through_every_door(
    summary_store: SummaryStore, door: Door, mode: Mode
) -> None:
    summarizer, agent_model = RecordingSummarizer(reply=vague), FakeToolCallingModel()
    agent = build_agent(
        door, agent_model, InMemorySaver(), summary_store, TRIGGER, model=summarizer
    )
    thread = f"ledger-{door}-{mode}"
    events = await stream_events(agent, {"messages": conversation()}, thread_config(thread), mode)

    sent = summary_sent(agent_model)
    for identifier in USER_IDS:
        assert holds(sent, identifier), identifier
    assert "- edit_file deploy/cron.yaml: error, changed" in sent

    (record,) = await summary_store.alist_summaries(thread)
    prose, ledger = split_ledger(record.summary)
    assert prose == VAGUE
    assert LEDGER_HEADING in record.summary and ledger
    assert record.summary in sent  # the stored text is what the model reads
    assert record.integrity_kept == 0
    assert record.integrity_identifiers is not None and record.integrity_identifiers >= 6
    assert record.integrity_appended == len(ledger.splitlines())
    assert record.integrity_dropped == 0
    assert record.integrity_artifacts == 1
    assert record.integrity_repaired is False
    items = json.loads(record.integrity_items or "")
    assert {i["t"] for i in items["identifiers"]} >= set(USER_IDS)
    assert items["artifacts"][0]["o"] == "error"

    event = compacted(events)
    assert event["integrity"] == {
        "identifiers": record.integrity_identifiers,
        "kept": 0,
        "appended": record.integrity_appended,
        "dropped": 0,
        "artifacts": 1,
        "repaired": False,
    }


@pytest.mark.parametrize("mode", MODES)
async def test_the_report_carries_the_figures_and_an_update_keeps_them(
    summary_store: SummaryStore, mode: Mode
) -> None:
    summarizer = RecordingSummarizer(reply=vague)
    graph = create_compaction_graph(TRIGGER, model=summarizer, store=summary_store)
    config = thread_config(f"update-{mode}")
    messages = conversation()

    async def call(history: list[BaseMessage]) -> dict[str, Any]:
        if mode == "async":
            result: dict[str, Any] = await graph.ainvoke(graph_input(history), config)
            return result
        import asyncio

        return await asyncio.to_thread(graph.invoke, graph_input(history), config)

    first = (await call(messages))["compaction"]
    assert first.action == "summarized"
    assert first.integrity is not None and first.integrity.kept == 0
    reused = (await call([*messages, HumanMessage("ok", id="more")]))["compaction"]
    assert reused.action == "reused" and reused.integrity is None

    # Three updates in a row, each of a reply naming nothing: nothing fades.
    for round_ in range(1, 4):
        messages = [*messages, *conversation(100 * round_)[5:]]
        messages += [HumanMessage(f"more {round_} {n}", id=f"m{round_}-{n}") for n in range(4)]
        report = (await call(messages))["compaction"]
        assert report.action == "summarized", report
        assert report.integrity is not None
    records = await summary_store.alist_summaries(config["configurable"]["thread_id"])
    newest = records[-1]
    assert newest.kind == "update" and newest.version >= 3
    for identifier in USER_IDS:
        assert holds(newest.summary, identifier), identifier


async def test_disabled_stores_the_reply_as_written(summary_store: SummaryStore) -> None:
    summarizer = RecordingSummarizer(reply=vague)
    config = {**TRIGGER, "integrity": {"enabled": False}}
    graph = create_compaction_graph(config, model=summarizer, store=summary_store)
    result = await graph.ainvoke(graph_input(conversation()), thread_config("off"))
    assert result["compaction"].action == "summarized"
    assert result["compaction"].integrity is None
    (record,) = await summary_store.alist_summaries("off")
    assert record.summary == VAGUE
    assert record.integrity_items is None and record.integrity_kept is None


async def test_ledger_tokens_zero_checks_and_appends_nothing(summary_store: SummaryStore) -> None:
    graph = create_compaction_graph(
        {**TRIGGER, "integrity": {"ledger_tokens": 0}},
        model=RecordingSummarizer(reply=vague),
        store=summary_store,
    )
    report = (await graph.ainvoke(graph_input(conversation()), thread_config("zero")))["compaction"]
    assert report.integrity is not None
    assert (report.integrity.kept, report.integrity.appended) == (0, 0)
    assert report.integrity.dropped == report.integrity.identifiers + report.integrity.artifacts
    (record,) = await summary_store.alist_summaries("zero")
    assert record.summary == VAGUE


@pytest.mark.parametrize("mode", MODES)
async def test_repair_asks_once_more_naming_the_missing_ones(
    summary_store: SummaryStore, mode: Mode
) -> None:
    def reply(call: SummarizerCall) -> str:
        if "leaves out these identifiers" not in call.prompt:
            return VAGUE
        named = [line[2:] for line in call.prompt.splitlines() if line.startswith("- ")]
        return f"{VAGUE} Named: {', '.join(named)}."

    summarizer = RecordingSummarizer(reply=reply)
    config = {**TRIGGER, "integrity": {"repair": True, "min_kept": 0.5}}
    agent_model = FakeToolCallingModel()
    agent = build_agent(
        "parent", agent_model, InMemorySaver(), summary_store, config, model=summarizer
    )
    events = await stream_events(
        agent, {"messages": conversation()}, thread_config(f"r-{mode}"), mode
    )
    assert summarizer.call_count == 2
    repair = summarizer.calls[1].prompt
    for identifier in USER_IDS:
        assert f"- {identifier}" in repair
    integrity = compacted(events)["integrity"]
    assert integrity["repaired"] is True
    assert integrity["kept"] >= len(USER_IDS)
    assert compacted(events)["calls"] == 2
    (record,) = await summary_store.alist_summaries(f"r-{mode}")
    assert split_ledger(record.summary)[0].startswith(f"{VAGUE} Named:")
    assert record.integrity_repaired is True


async def test_no_repair_when_enough_is_kept(summary_store: SummaryStore) -> None:
    good = "Job ETL-212 fails at 02:15 UTC (deploy/cron.yaml, $1,250, sofia_kim_7287); edit failed."
    summarizer = RecordingSummarizer(reply=lambda call: good)
    config = {**TRIGGER, "integrity": {"repair": True}}
    graph = create_compaction_graph(config, model=summarizer, store=summary_store)
    report = (await graph.ainvoke(graph_input(conversation()), thread_config("good")))["compaction"]
    assert summarizer.call_count == 1
    assert report.integrity is not None and not report.integrity.repaired


def _interrupt_of(result: dict[str, Any]) -> dict[str, Any]:
    (pending,) = result["__interrupt__"]
    value: dict[str, Any] = pending.value
    return value


@pytest.mark.parametrize("action", ["accept", "edit"])
@pytest.mark.parametrize("door", DOORS)
async def test_review_shows_the_ledger_keeps_it_on_accept_and_recomputes_it_on_edit(
    summary_store: SummaryStore, door: Door, action: str
) -> None:
    summarizer, agent_model = RecordingSummarizer(reply=vague), FakeToolCallingModel()
    config = {**TRIGGER, "review": True}
    agent = build_agent(door, agent_model, InMemorySaver(), summary_store, config, model=summarizer)
    thread = f"review-{door}-{action}"
    first = await run(agent, {"messages": conversation()}, thread_config(thread), "async")
    payload = _interrupt_of(first)
    shown = payload["summary"]
    assert split_ledger(shown)[0] == VAGUE and LEDGER_HEADING in shown
    assert payload["integrity"]["kept"] == 0
    edited = "Fix ETL-212 at 02:15 UTC in deploy/cron.yaml."
    answer = {"action": "accept"} if action == "accept" else {"action": "edit", "summary": edited}
    await run(agent, Command(resume=answer), thread_config(thread), "async")
    (record,) = await summary_store.alist_summaries(thread)
    if action == "accept":
        assert record.summary == shown
        assert record.integrity_kept == 0
    else:
        prose, ledger = split_ledger(record.summary)
        assert prose == edited
        assert record.integrity_kept == 3
        assert "ETL-212 (user)" not in ledger  # the person's text holds it now
        assert holds(ledger, "$1,250") and holds(ledger, "sofia_kim_7287")
    assert record.summary in summary_sent(agent_model)


@pytest.mark.parametrize("mode", MODES)
async def test_a_custom_compactor_takes_the_same_path(
    summary_store: SummaryStore, mode: Mode
) -> None:
    def compactor(
        messages: list[BaseMessage], previous: str | None, instruction: str | None
    ) -> str:
        return f"{len(messages)} messages about a nightly job failure and a failed edit."

    agent_model = FakeToolCallingModel()
    agent = build_agent(
        "middleware", agent_model, InMemorySaver(), summary_store, TRIGGER, summarize=compactor
    )
    await run(agent, {"messages": conversation()}, thread_config(f"fn-{mode}"), mode)
    (record,) = await summary_store.alist_summaries(f"fn-{mode}")
    for identifier in USER_IDS:
        assert holds(record.summary, identifier), identifier
    assert record.integrity_kept == 0


def test_a_background_summary_takes_the_same_path(store: SummaryStore) -> None:
    """Pre-compaction (``precompact_ratio``) prepares the next summary off the agent's call:
    it is checked and gets its ledger like any other."""
    config = {
        "trigger": {"type": "tokens", "value": 2000},
        "keep": {"type": "messages", "value": 6},
        "precompact_ratio": 0.6,
    }
    summarizer = RecordingSummarizer(
        reply=lambda call: "The user filed a ticket each turn; the assistant is on it.", delay=0.05
    )
    graph = create_compaction_graph(config, model=summarizer, store=store)
    thread = thread_config("background")
    messages: list[BaseMessage] = []
    background = False
    for turn in range(14):
        messages.append(HumanMessage(f"ticket OPS-{turn}00 " + "x" * 300, id=f"q{turn}"))
        messages.append(AIMessage(f"on it {turn} " + "y" * 300, id=f"a{turn}"))
        for event in graph.stream(graph_input(messages), thread, stream_mode="custom"):
            background = background or bool(event.get("background"))
        time.sleep(0.15)
    time.sleep(0.5)  # the last background job lands
    assert background
    records = store.list_summaries("background")
    assert records
    for record in records:
        assert record.integrity_items is not None
        covered = [m for m in messages[: record.covered_messages] if m.type == "human"]
        for message in covered:
            ticket = message.text.split()[1]
            assert holds(record.summary, ticket), (ticket, record.version)


async def test_in_a_small_context_the_ledger_takes_at_most_a_tenth(
    summary_store: SummaryStore,
) -> None:
    """A 1,000-token trigger: the ledger gets 100 tokens, not 400, so that it never brings the
    next compaction sooner; what does not fit is counted as dropped."""
    from langchain_core.messages.utils import count_tokens_approximately

    many = [
        HumanMessage(f"tickets OPS-{n}1 OPS-{n}2 OPS-{n}3 OPS-{n}4", id=f"t{n}") for n in range(12)
    ]
    config = {
        "trigger": {"type": "tokens", "value": 1000},
        "keep": {"type": "messages", "value": 2},
    }
    graph = create_compaction_graph(
        config,
        model=RecordingSummarizer(reply=lambda c: "The user listed tickets."),
        store=summary_store,
    )
    padded = [*many, *(HumanMessage("x " * 400, id=f"pad{n}") for n in range(5))]
    report = (await graph.ainvoke(graph_input(padded), thread_config("small")))["compaction"]
    assert report.action == "summarized" and report.integrity is not None
    (record,) = await summary_store.alist_summaries("small")
    _, ledger = split_ledger(record.summary)
    assert count_tokens_approximately([HumanMessage(ledger)]) <= 100
    assert report.integrity.dropped > 0


async def test_a_compactors_summary_is_repaired_by_the_fallback_model(
    summary_store: SummaryStore,
) -> None:
    """A custom compactor has no model of its own: the repair call goes to the fallback."""

    def compactor(
        messages: list[BaseMessage], previous: str | None, instruction: str | None
    ) -> str:
        return "A nightly job failure and a failed edit."

    def reply(call: SummarizerCall) -> str:
        named = [line[2:] for line in call.prompt.splitlines() if line.startswith("- ")]
        return f"A nightly job failure and a failed edit: {', '.join(named)}."

    fallback = RecordingSummarizer(reply=reply)
    config = {**TRIGGER, "integrity": {"repair": True}}
    graph = create_compaction_graph(
        config, store=summary_store, summarize=compactor, fallback_model=fallback
    )
    report = (await graph.ainvoke(graph_input(conversation()), thread_config("fn-repair")))[
        "compaction"
    ]
    assert fallback.call_count == 1
    assert "leaves out these identifiers" in fallback.calls[0].prompt
    assert report.integrity is not None and report.integrity.repaired
    assert report.summary_calls == 2
    assert report.integrity.kept >= len(USER_IDS)


async def test_a_nul_byte_and_a_lone_surrogate_reach_the_store_as_it_takes_them(
    summary_store: SummaryStore,
) -> None:
    """Identifiers holding a NUL or a lone surrogate (a tool's raw output) are stored as the
    store stores any text (U+FFFD in the summary, escaped in the JSON items), not refused."""
    messages: list[BaseMessage] = [
        HumanMessage("run `foo\x00bar` then `x\ud800y` for ETL-9", id="h0"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "read_file", "args": {"path": "a\ud800.py"}, "id": "c1"}],
        ),
        ToolMessage("Error: \x00 bad \udc80", tool_call_id="c1", id="t1", status="error"),
        *(
            (HumanMessage if n % 2 else AIMessage)(f"pipeline deployment {n}", id=f"s{n}")
            for n in range(9)
        ),
    ]
    summarizer = RecordingSummarizer(reply=lambda call: "The pipeline deployment failed.")
    graph = create_compaction_graph(TRIGGER, model=summarizer, store=summary_store)
    report = (await graph.ainvoke(graph_input(messages), thread_config("raw-bytes")))["compaction"]
    assert report.action == "summarized" and report.integrity is not None
    (record,) = await summary_store.alist_summaries("raw-bytes")
    _, ledger = split_ledger(record.summary)
    assert "- foo\ufffdbar (user)" in ledger and "- x\ufffdy (user)" in ledger
    assert "- read_file a\ufffd.py: error" in ledger
    assert "\x00" not in record.summary
    items = json.loads(record.integrity_items or "")
    assert {i["t"] for i in items["identifiers"]} >= {"foo\x00bar", "ETL-9"}
