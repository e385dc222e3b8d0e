"""Text the databases refuse: NUL bytes and lone surrogates, stored replaced, never raised.

PostgreSQL's text cannot hold NUL, and neither driver encodes a lone surrogate as UTF-8. The
store replaces both with U+FFFD at its edge (``store/_text.py``), on SQLite and PostgreSQL
alike, in every column it writes: summaries, ids, names, recall text, error strings. A summary
served again is byte for byte the one its call put in the model input, and a summarizer whose
every error holds such text still opens the circuit breaker.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from _store_support import Backend, summary_fields
from conversations import CompactionGraph, chat, graph_input
from fakes import RecordingSummarizer, SummarizerCall
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool

from langgraph_compaction import (
    CompactionReport,
    SummaryStore,
    create_compaction_graph,
    create_recall_tool,
)
from langgraph_compaction.store import IndexedMessage
from langgraph_compaction.store.db.storable_text import REPLACEMENT, storable

REFUSED = "nul[\x00] lone[\ud800] low[\udfff] pair[\ud83d\ude00]"
STORED = f"nul[{REPLACEMENT}] lone[{REPLACEMENT}] low[{REPLACEMENT}] pair[\U0001f600]"
CONFIG: dict[str, Any] = {
    "context_window": 3000,
    "trigger": {"type": "tokens", "value": 2000},
    "keep": {"type": "messages", "value": 6},
    "recall": {"enabled": True},
}


# -- the rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (REFUSED, STORED),
        ("\x00", REPLACEMENT),
        ("\ud800\ud800", REPLACEMENT * 2),
        ("\udc00\ud800", REPLACEMENT * 2),  # low before high is no pair
        ("摘要\x00要点", f"摘要{REPLACEMENT}要点"),
    ],
)
def test_refused_characters_become_the_replacement_character(given: str, stored: str) -> None:
    assert storable(given) == stored
    stored.encode("utf-8")  # what both drivers must do


@pytest.mark.parametrize("clean", ["", "plain ascii", "摘要 — résumé \U0001f600", "\ufffd"])
def test_clean_text_is_passed_on_as_it_is(clean: str) -> None:
    assert storable(clean) is clean


# -- the store, on every backend, sync and async ------------------------------------------------


async def test_a_summary_holding_refused_text_is_stored_and_read_back(backend: Backend) -> None:
    thread = f"{backend.thread}-{REFUSED}"
    fields = summary_fields(
        thread,
        backend.ns,
        1,
        summary=f"Summary: {REFUSED}",
        boundary_message_id=f"m-{REFUSED}",
        model=f"model-{REFUSED}",
        rescued_message_ids=(f"r-{REFUSED}", "plain"),
    )
    record = await backend.add_summary(**fields)

    assert record.summary == f"Summary: {STORED}"  # what the pipeline puts in the model input
    assert record.boundary_message_id == f"m-{STORED}"
    assert record.model == f"model-{STORED}"
    assert record.rescued_message_ids == (f"r-{STORED}", "plain")
    # Looked up by the thread id as the caller has it, the row is found again, the same.
    assert await backend.list_summaries(thread, backend.ns) == [record]
    assert await backend.find_summary(thread, backend.ns, "prefix-1") == record
    assert record.thread_id == storable(thread)


async def test_a_failure_holding_refused_text_is_recorded(backend: Backend) -> None:
    state = await backend.record_failure(
        backend.thread, backend.ns, message_count=7, error=f"provider said: {REFUSED}"
    )
    assert state.consecutive_failures == 1
    assert state.last_error == f"provider said: {STORED}"
    again = await backend.record_failure(
        backend.thread, backend.ns, message_count=9, error=REFUSED * 2000
    )
    assert again.consecutive_failures == 2
    assert again.last_error is not None and "\x00" not in again.last_error


async def test_recall_text_holding_refused_text_is_indexed_and_found(backend: Backend) -> None:
    recalled = [
        IndexedMessage(
            position=i,
            message_id=f"m{i}-{REFUSED}",
            type="tool",
            name=f"fetch-{REFUSED}",
            text=f"tool: invoice {i} for Zanzibar {REFUSED}",
        )
        for i in range(3)
    ]
    fields = summary_fields(backend.thread, backend.ns, 1, summary=f"Summary {REFUSED}")
    await backend.add_summary(**fields, recall_messages=recalled)
    await backend.add_summary(  # the same messages again: indexed once
        **summary_fields(backend.thread, backend.ns, 2), recall_messages=recalled
    )

    hits = await backend.search_messages(backend.thread, "Zanzibar invoice", namespace=backend.ns)
    assert sorted(hit.message_id for hit in hits) == [f"m{i}-{STORED}" for i in range(3)]
    assert {hit.text for hit in hits} == {
        f"tool: invoice {i} for Zanzibar {STORED}" for i in range(3)
    }
    assert {hit.name for hit in hits} == {f"fetch-{STORED}"}
    assert await backend.check_integrity() == []


# -- through the graph --------------------------------------------------------------------------


def _with_refused_text(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Every message but the system prompt with refused text in its id, name and content."""
    return [
        m
        if m.type == "system"
        else m.model_copy(
            update={
                "id": f"{m.id}{REFUSED}",
                "name": f"who{REFUSED}",
                "content": f"{m.text} {REFUSED}",
            }
        )
        for m in messages
    ]


def _echo(call: SummarizerCall) -> str:
    """A faithful summary: it quotes the transcript, refused characters and all."""
    return f"Summary of the chat so far:\n{call.transcript[:400]}"


@pytest.fixture
async def text_store(store_url: str) -> AsyncIterator[SummaryStore]:
    opened = SummaryStore(store_url)
    yield opened
    await opened.aclose()


async def _invoke(
    graph: CompactionGraph, messages: list[BaseMessage], config: RunnableConfig, is_async: bool
) -> dict[str, Any]:
    if is_async:
        return dict(await graph.ainvoke(graph_input(messages), config))
    return dict(await asyncio.to_thread(graph.invoke, graph_input(messages), config))


async def test_refused_text_in_a_conversation_is_summarized_then_reused_byte_for_byte(
    text_store: SummaryStore, is_async: bool
) -> None:
    summarizer = RecordingSummarizer(reply=_echo)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=text_store)
    thread: RunnableConfig = {"configurable": {"thread_id": f"t-{REFUSED}"}}
    messages = _with_refused_text(chat(20))

    first = await _invoke(graph, messages, thread, is_async)
    report: CompactionReport = first["compaction"]
    assert (report.action, report.error) == ("summarized", None)
    # The summarizer read them as a provider's API can take them: a lone surrogate cannot be
    # encoded as UTF-8 for the request, so the prompt carries what the store holds.
    assert STORED in summarizer.calls[0].transcript
    summarizer.calls[0].prompt.encode("utf-8")
    (stored,) = await text_store.alist_summaries(f"t-{REFUSED}")
    summary_message = first["llm_input_messages"][1]
    assert stored.summary in summary_message.content
    assert REPLACEMENT in stored.summary and "\x00" not in stored.summary

    later = [*messages, HumanMessage(f"and now? {REFUSED}", id=f"next{REFUSED}")]
    second = await _invoke(graph, later, thread, is_async)
    assert second["compaction"].action == "reused"
    assert second["compaction"].summary_id == stored.id
    assert second["llm_input_messages"][1].content == summary_message.content
    assert summarizer.call_count == 1

    # A process that starts afresh finds it in the store and reuses it too.
    async with SummaryStore(text_store.url) as other:
        fresh = create_compaction_graph(CONFIG, model=summarizer, store=other)
        third = await _invoke(fresh, later, thread, is_async)
    assert third["compaction"].action == "reused"
    assert third["llm_input_messages"][1].content == summary_message.content
    assert summarizer.call_count == 1

    hits = await text_store.asearch_messages(f"t-{REFUSED}", "question")
    assert hits and all(REFUSED not in hit.text and STORED in hit.text for hit in hits)
    # The recall tool keeps the hits that are messages of the agent's state, compared as stored.
    tool = create_recall_tool(text_store)
    assert isinstance(tool, StructuredTool)
    state = {"messages": later}
    if is_async:
        assert tool.coroutine is not None
        answer = await tool.coroutine("question", thread, state)
    else:
        assert tool.func is not None
        answer = await asyncio.to_thread(tool.func, "question", thread, state)
    assert f"{len(hits)} earlier message(s) match 'question'" in answer


@pytest.mark.slow
async def test_a_summarizer_failing_with_refused_text_opens_the_breaker(
    text_store: SummaryStore, is_async: bool
) -> None:
    failing = RecordingSummarizer(fail_with=RuntimeError(f"upstream answered {REFUSED}"))
    config = {**CONFIG, "max_failures": 3, "failure_cooldown_messages": 100}
    graph = create_compaction_graph(config, model=failing, store=text_store)
    thread: RunnableConfig = {"configurable": {"thread_id": "breaker"}}
    messages = chat(20)

    reports: list[CompactionReport] = []
    for turn in range(6):
        messages = [*messages, HumanMessage(f"turn {turn}", id=f"turn{turn}")]
        reports.append((await _invoke(graph, messages, thread, is_async))["compaction"])

    assert [r.action for r in reports] == ["failed"] * 6
    assert failing.call_count == 3  # then the breaker is open: nothing more is paid
    assert all("upstream answered" in (r.error or "") for r in reports[:3])
    assert all("circuit breaker open" in (r.error or "") for r in reports[3:])
    state = await text_store.athread_state("breaker", "default")
    assert state.consecutive_failures == 3
    assert state.last_error is not None and STORED in state.last_error


async def test_refused_text_in_an_error_reaches_the_stream_and_report_as_json(
    text_store: SummaryStore, is_async: bool
) -> None:
    """The LangGraph server encodes events and outputs with orjson, which refuses a lone
    surrogate: the failure event and the report carry the error text made storable."""
    failing = RecordingSummarizer(fail_with=RuntimeError(f"upstream answered {REFUSED}"))
    graph = create_compaction_graph(CONFIG, model=failing, store=text_store)
    thread: RunnableConfig = {"configurable": {"thread_id": "stream"}}
    request = graph_input(chat(20))
    modes: Any = ["custom", "values"]  # (mode, data) pairs
    parts: list[Any]
    if is_async:
        parts = [p async for p in graph.astream(request, thread, stream_mode=modes)]
    else:
        parts = await asyncio.to_thread(
            lambda: list(graph.stream(request, thread, stream_mode=modes))
        )
    events: list[dict[str, Any]] = [data for mode, data in parts if mode == "custom"]
    failed = [e for e in events if e.get("type") == "context_compaction_failed"]
    assert failed and "upstream answered" in failed[0]["error"]
    values: list[dict[str, Any]] = [data for mode, data in parts if mode == "values"]
    report: CompactionReport = values[-1]["compaction"]
    assert report.action == "failed" and report.error and STORED in report.error
    for event in events:
        orjson.dumps(event)  # raises on a lone surrogate
    orjson.dumps(report.error)
