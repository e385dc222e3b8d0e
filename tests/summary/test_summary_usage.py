"""What a summary cost (DESIGN 6.12): the usage the summarizer reports (input, output and
cache-read tokens) of every call of one summary, chunks and the fallback model included, is
summed into ``CompactionReport.summary_usage``, stored with the row and sent in the
``context_compacted`` event. A field nothing reported is None (NULL), never 0; a call that made
no summary call (a reuse, a pass-through) reports None.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _doors import TRIGGER, Mode, build_agent, history, run, thread_config
from fakes import FakeToolCallingModel, RecordingSummarizer, SummarizerCall
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, UsageMetadata
from langchain_core.outputs import ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import PrivateAttr

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph
from langgraph_compaction.pipeline.report import SummaryUsage
from langgraph_compaction.summary import review as _review

NO_USAGE = SummaryUsage(None, None, None)


class UsageSummarizer(RecordingSummarizer):
    """A summarizer whose replies report usage as a provider's do: ``cache_read`` adds
    ``input_token_details``; ``report_usage=False`` reports none. It keeps what it reported."""

    cache_read: int | None = None
    report_usage: bool = True

    _reported: list[UsageMetadata] = PrivateAttr(default_factory=list)

    def _answer(self, call: SummarizerCall) -> ChatResult:
        result = super()._answer(call)
        message = result.generations[0].message
        assert isinstance(message, AIMessage)
        usage = message.usage_metadata
        assert usage is not None  # RecordingSummarizer reports usage
        if not self.report_usage:
            message.usage_metadata = None
            return result
        if self.cache_read is not None:
            usage = UsageMetadata(
                input_tokens=usage["input_tokens"],
                output_tokens=usage["output_tokens"],
                total_tokens=usage["total_tokens"],
                input_token_details={"cache_read": self.cache_read},
            )
            message.usage_metadata = usage
        with self._lock:
            self._reported.append(usage)
        return result

    @property
    def reported(self) -> list[UsageMetadata]:
        with self._lock:
            return list(self._reported)

    def total(self) -> SummaryUsage:
        """The sum of what it reported, as the report should show it."""
        reported = self.reported
        assert reported, "the summarizer reported nothing"
        cache = [u.get("input_token_details", {}).get("cache_read") for u in reported]
        return SummaryUsage(
            sum(u["input_tokens"] for u in reported),
            sum(u["output_tokens"] for u in reported),
            sum(c for c in cache if c is not None) if any(c is not None for c in cache) else None,
        )


def _columns(usage: SummaryUsage) -> dict[str, int | None]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
    }


async def _compact(
    graph: Any, messages: list[BaseMessage], thread: str, mode: Mode
) -> tuple[CompactionReport, list[dict[str, Any]]]:
    """One call of the compaction graph: its report and its custom events."""
    config = thread_config(thread)
    value = {"messages": messages}
    modes = ["custom", "values"]

    def collect() -> list[tuple[str, Any]]:
        return list(graph.stream(value, config, stream_mode=modes))

    if mode == "sync":
        chunks = await asyncio.to_thread(collect)
    else:
        chunks = [chunk async for chunk in graph.astream(value, config, stream_mode=modes)]
    events = [data for kind, data in chunks if kind == "custom"]
    report = [data for kind, data in chunks if kind == "values"][-1]["compaction"]
    assert isinstance(report, CompactionReport)
    return report, events


def _compacted(events: list[dict[str, Any]]) -> dict[str, Any]:
    (event,) = [e for e in events if e["type"] == "context_compacted"]
    return event


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_usage_is_reported_stored_and_sent(store_url: str, mode: Mode) -> None:
    summarizer = UsageSummarizer(cache_read=12)
    store = SummaryStore(store_url)
    graph = create_compaction_graph(TRIGGER, model=summarizer, store=store)
    thread = f"usage-{mode}-поток"

    report, events = await _compact(graph, history(10), thread, mode)

    usage = summarizer.total()
    assert usage.input_tokens and usage.output_tokens and usage.cache_read_tokens == 12
    assert report.action == "summarized"
    assert report.summary_usage == usage
    (record,) = await store.alist_summaries(thread)
    stored = SummaryUsage(record.input_tokens, record.output_tokens, record.cache_read_tokens)
    assert stored == usage
    assert _compacted(events)["usage"] == _columns(usage)
    await store.aclose()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_model_that_reports_no_usage_gives_nulls(store_url: str, mode: Mode) -> None:
    summarizer = UsageSummarizer(report_usage=False)
    store = SummaryStore(store_url)
    graph = create_compaction_graph(TRIGGER, model=summarizer, store=store)
    thread = f"no-usage-{mode}"

    report, events = await _compact(graph, history(10), thread, mode)

    assert report.action == "summarized" and summarizer.call_count == 1
    assert report.summary_usage == NO_USAGE  # a call ran: nulls, not None and never 0
    (record,) = await store.alist_summaries(thread)
    assert (record.input_tokens, record.output_tokens, record.cache_read_tokens) == (None,) * 3
    assert _compacted(events)["usage"] == _columns(NO_USAGE)
    await store.aclose()


async def test_a_chunked_summary_sums_its_calls(store: SummaryStore) -> None:
    summarizer = UsageSummarizer(cache_read=5)
    config = {**TRIGGER, "trim_tokens_to_summarize": 40}
    graph = create_compaction_graph(config, model=summarizer, store=store)

    report, events = await _compact(graph, history(12), "chunked", "async")

    assert report.summary_calls == summarizer.call_count > 1
    usage = summarizer.total()
    assert usage.cache_read_tokens == 5 * summarizer.call_count
    assert report.summary_usage == usage
    (record,) = await store.alist_summaries("chunked")
    assert (record.input_tokens, record.output_tokens) == (usage.input_tokens, usage.output_tokens)
    assert _compacted(events)["usage"] == _columns(usage)


async def test_reuse_and_passthrough_report_no_usage(store: SummaryStore) -> None:
    summarizer = UsageSummarizer()
    graph = create_compaction_graph(TRIGGER, model=summarizer, store=store)
    short, _ = await _compact(graph, history(3), "reuse", "async")
    assert short.action == "passthrough" and short.summary_usage is None
    first, _ = await _compact(graph, history(10), "reuse", "async")
    assert first.summary_usage == summarizer.total()
    more = [*history(10), HumanMessage("继续 / продолжай", id="h-more")]
    again, _ = await _compact(graph, more, "reuse", "async")
    assert again.action == "reused" and again.summary_usage is None
    assert summarizer.call_count == 1


async def test_the_fallback_and_a_blank_reply_are_counted(store: SummaryStore) -> None:
    """A blank reply is a failure, but it was paid for: its usage counts with the fallback's."""
    blank, fallback = UsageSummarizer(blank=True, cache_read=3), UsageSummarizer()
    graph = create_compaction_graph(TRIGGER, model=blank, fallback_model=fallback, store=store)

    report, _ = await _compact(graph, history(10), "fallback", "async")

    assert report.action == "summarized" and blank.call_count == fallback.call_count == 1
    reported = [*blank.reported, *fallback.reported]
    assert report.summary_usage == SummaryUsage(
        sum(u["input_tokens"] for u in reported),
        sum(u["output_tokens"] for u in reported),
        3,  # only the blank reply read from the cache
    )
    (record,) = await store.alist_summaries("fallback")
    assert record.input_tokens == report.summary_usage.input_tokens
    assert record.cache_read_tokens == 3


async def test_a_failed_summary_reports_what_it_cost(store: SummaryStore) -> None:
    summarizer = UsageSummarizer(blank=True)
    graph = create_compaction_graph(TRIGGER, model=summarizer, store=store)

    report, events = await _compact(graph, history(10), "failed", "async")

    assert report.action == "failed" and summarizer.call_count == 1
    assert report.summary_usage == summarizer.total()
    assert await store.alist_summaries("failed") == []
    assert not [e for e in events if e["type"] == "context_compacted"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_custom_compactor_reports_nulls(store: SummaryStore, mode: Mode) -> None:
    def compactor(messages: list[BaseMessage], previous: str | None, note: str | None) -> str:
        return "Резюме / 摘要: " + "; ".join(str(m.content) for m in messages)

    graph = create_compaction_graph(TRIGGER, store=store, summarize=compactor)
    report, events = await _compact(graph, history(10), f"compactor-{mode}", mode)

    assert report.action == "summarized"
    assert report.summary_usage == NO_USAGE
    (record,) = await store.alist_summaries(f"compactor-{mode}")
    assert (record.input_tokens, record.output_tokens, record.cache_read_tokens) == (None,) * 3
    assert _compacted(events)["usage"] == _columns(NO_USAGE)


@pytest.mark.parametrize("forgotten", [False, True], ids=["remembered", "forgotten"])
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_review_carries_the_usage_across_the_interrupt(
    store: SummaryStore, mode: Mode, forgotten: bool
) -> None:
    """The draft is saved with its usage: the row stored on acceptance holds it, also when
    the resuming process no longer remembers the draft (it reads it from the store)."""
    summarizer = UsageSummarizer(cache_read=9)
    agent = build_agent(
        "parent",
        FakeToolCallingModel(),
        InMemorySaver(),
        store,
        {**TRIGGER, "review": True},
        model=summarizer,
    )
    thread = f"review-usage-{mode}-{forgotten}"
    config = thread_config(thread)
    first = await run(agent, {"messages": history(10)}, config, mode)
    assert first["__interrupt__"]
    if forgotten:
        with _review._lock:
            _review._drafts.clear()

    resumed = await run(agent, Command(resume={"action": "accept"}), config, mode)

    assert summarizer.call_count == 1
    usage = summarizer.total()
    (record,) = await store.alist_summaries(thread)
    assert (record.input_tokens, record.output_tokens, record.cache_read_tokens) == (
        usage.input_tokens,
        usage.output_tokens,
        9,
    )
    report = resumed["compaction"]
    assert isinstance(report, CompactionReport) and report.action == "summarized"
    assert report.summary_usage == usage
