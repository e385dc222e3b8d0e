"""Bounded summary calls (DESIGN 6.12, 6.5): ``summary_timeout``, the summary cap, and the
report when the summary itself does not fit.

A summarizer that never answers holds the agent's call for ``summary_timeout`` per model at
most: then the fallback model answers, or the call goes ahead without a new summary, the
failure is recorded for the breaker, and nothing is stored, not even what the abandoned call
returns later. A reply far over ``max_summary_tokens`` is stored cut to it, where a sentence
or a line ends, in any script.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any, cast
from uuid import UUID

import pytest
from conversations import chat, graph_input
from fakes import RecordingSummarizer, SummarizerCall
from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    BaseCallbackHandler,
    CallbackManagerForLLMRun,
)
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from pydantic import PrivateAttr

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph
from langgraph_compaction.summary.cap import cap_summary

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
TIMEOUT = 0.3
"""``summary_timeout`` of these tests, in seconds."""
SLACK = 2.0
"""What a compaction may add to the waits it is allowed (store, counting, graph), on a busy
machine; the store's schema is made before the clock starts."""
GIVE_UP_S = 10.0
"""A silent summarizer answers after this long anyway, so that a call without a time bound
returns (late) and the test fails on its duration instead of hanging."""
CONFIG: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 2000},
    "keep": {"type": "messages", "value": 6},
    "summary_timeout": TIMEOUT,
}


class SilentSummarizer(RecordingSummarizer):
    """A provider that never answers in time: sync it blocks on a ``threading.Event``, async
    it awaits an ``asyncio.Event``; released (or after ``GIVE_UP_S``) it answers."""

    _release: threading.Event = PrivateAttr(default_factory=threading.Event)
    _answered: threading.Event = PrivateAttr(default_factory=threading.Event)

    def release(self) -> None:
        """Let a blocked sync call answer."""
        self._release.set()

    def wait_answered(self, timeout: float) -> bool:
        """Whether a released call has answered (its reply handed back) within ``timeout``."""
        return self._answered.wait(timeout)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._record(messages, stop, run_manager.tags if run_manager else None, kwargs)
        self._release.wait(GIVE_UP_S)
        try:
            return self._answer(call)
        finally:
            self._answered.set()

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._record(messages, stop, run_manager.tags if run_manager else None, kwargs)
        with_no_answer = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(with_no_answer.wait(), GIVE_UP_S)
        return self._answer(call)


@pytest.fixture
def any_store(store_url: str) -> Iterator[SummaryStore]:
    """A store on SQLite and on PostgreSQL, for the sync tests."""
    opened = SummaryStore(store_url)
    yield opened
    opened.close()


@pytest.fixture
def silent() -> Iterator[SilentSummarizer]:
    model = SilentSummarizer(model_name="silent")
    yield model
    model.release()  # an abandoned sync call ends with the test


def _failures(store: SummaryStore) -> tuple[int, str]:
    state = store.thread_state("t", "default")
    return state.consecutive_failures, state.last_error or ""


# -- summary_timeout, sync -----------------------------------------------------------------------


@pytest.mark.slow
def test_a_summarizer_that_never_answers_holds_the_call_for_the_timeout_only(
    any_store: SummaryStore, silent: SilentSummarizer
) -> None:
    store = any_store
    graph = create_compaction_graph(CONFIG, model=silent, store=store)
    events: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    assert store.list_summaries("t") == []  # the schema exists before the clock starts
    started = time.monotonic()
    stream = graph.stream(graph_input(chat(20)), THREAD, stream_mode=["custom", "values"])
    for mode, chunk in cast(Iterator[tuple[str, Any]], stream):
        if mode == "custom":
            events.append(chunk)
        else:
            values = chunk
    elapsed = time.monotonic() - started
    assert TIMEOUT <= elapsed < TIMEOUT + SLACK
    report: CompactionReport = values["compaction"]
    assert report.action == "failed" and "summary_timeout" in (report.error or "")
    assert len(values["llm_input_messages"]) < 41  # the call went ahead, drop-oldest
    assert silent.call_count == 1  # a timeout is not retried on the same model
    failed = [e for e in events if e["type"] == "context_compaction_failed"]
    assert len(failed) == 1 and "summary_timeout" in failed[0]["error"]
    assert _failures(store)[0] == 1 and "summary_timeout" in _failures(store)[1]
    # The abandoned call answers later: its reply is dropped, never stored.
    silent.release()
    assert silent.wait_answered(5)
    time.sleep(0.1)
    assert store.list_summaries("t") == []


def test_a_summarizer_past_the_timeout_hands_over_to_the_fallback(
    store: SummaryStore, silent: SilentSummarizer
) -> None:
    fallback = RecordingSummarizer(model_name="agent-model")
    graph = create_compaction_graph(CONFIG, model=silent, fallback_model=fallback, store=store)
    assert store.list_summaries("t") == []
    started = time.monotonic()
    report = graph.invoke(graph_input(chat(20)), THREAD)["compaction"]
    elapsed = time.monotonic() - started
    assert TIMEOUT <= elapsed < TIMEOUT + SLACK
    assert report.action == "summarized"
    assert (silent.call_count, fallback.call_count) == (1, 1)
    assert [r.model for r in store.list_summaries("t")] == ["agent-model"]


def test_every_model_silent_waits_one_timeout_per_model_then_counts_a_failure(
    store: SummaryStore, silent: SilentSummarizer
) -> None:
    also_silent = SilentSummarizer(model_name="agent-model")
    graph = create_compaction_graph(CONFIG, model=silent, fallback_model=also_silent, store=store)
    assert store.list_summaries("t") == []
    try:
        started = time.monotonic()
        report = graph.invoke(graph_input(chat(20)), THREAD)["compaction"]
        elapsed = time.monotonic() - started
    finally:
        also_silent.release()
    assert 2 * TIMEOUT <= elapsed < 2 * TIMEOUT + SLACK
    assert report.action == "failed" and (silent.call_count, also_silent.call_count) == (1, 1)
    assert _failures(store)[0] == 1
    assert store.list_summaries("t") == []


class _SummaryRuns(BaseCallbackHandler):
    """The chat model runs a callback handler given to the graph's run sees."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, UUID | None]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.runs.append((str(kwargs.get("name")), parent_run_id))


class StreamingSummarizer(RecordingSummarizer):
    """Writes a custom stream event from inside the model call, as a model wrapper may."""

    def _answer(self, call: SummarizerCall) -> ChatResult:
        get_stream_writer()({"type": "from_the_summary_call", "index": call.index})
        return super()._answer(call)


def test_the_bounded_sync_call_keeps_the_runs_context(store: SummaryStore) -> None:
    """The worker thread runs in a copy of the caller's context: LangGraph's config and stream
    writer, and the run's callbacks, reach the summary call."""
    summarizer = StreamingSummarizer()
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    handler = _SummaryRuns()
    config: RunnableConfig = {**THREAD, "callbacks": [handler]}
    events = [
        cast(dict[str, Any], chunk)
        for chunk in graph.stream(graph_input(chat(20)), config, stream_mode="custom")
    ]
    assert {"type": "from_the_summary_call", "index": 1} in events
    assert "context_compacted" in [e["type"] for e in events]
    assert [(name, parent is not None) for name, parent in handler.runs] == [
        ("compaction_summary", True)
    ]


# -- summary_timeout, async (under blockbuster, as every async test) ---------------------------


async def test_async_a_summarizer_that_never_answers_is_cancelled_at_the_timeout(
    summary_store: SummaryStore, silent: SilentSummarizer
) -> None:
    store = summary_store
    graph = create_compaction_graph(CONFIG, model=silent, store=store)
    assert await store.alist_summaries("t") == []
    started = time.monotonic()
    report = (await graph.ainvoke(graph_input(chat(20)), THREAD))["compaction"]
    elapsed = time.monotonic() - started
    assert TIMEOUT <= elapsed < TIMEOUT + SLACK
    assert report.action == "failed" and "summary_timeout" in (report.error or "")
    assert silent.call_count == 1
    state = await store.athread_state("t", "default")
    assert state.consecutive_failures == 1
    assert await store.alist_summaries("t") == []


async def test_async_a_summarizer_past_the_timeout_hands_over_to_the_fallback(
    store: SummaryStore, silent: SilentSummarizer
) -> None:
    fallback = RecordingSummarizer(model_name="agent-model")
    graph = create_compaction_graph(CONFIG, model=silent, fallback_model=fallback, store=store)
    assert await store.alist_summaries("t") == []
    started = time.monotonic()
    report = (await graph.ainvoke(graph_input(chat(20)), THREAD))["compaction"]
    elapsed = time.monotonic() - started
    assert TIMEOUT <= elapsed < TIMEOUT + SLACK
    assert report.action == "summarized" and fallback.call_count == 1
    assert [r.model for r in await store.alist_summaries("t")] == ["agent-model"]


# -- the summary cap -----------------------------------------------------------------------------

ENGLISH = " ".join(
    f"Step {i} moved the nightly export of shop {i % 7} to the new bucket." for i in range(2000)
)
CHINESE = "".join(f"第{i}步把商店{i % 7}的夜间导出迁移到新的存储桶。" for i in range(4000))


def _tokens(text: str) -> int:
    return count_tokens_approximately([HumanMessage(content=text)])


@pytest.mark.parametrize(
    ("text", "ends"), [(ENGLISH, "."), (CHINESE, "。")], ids=["english", "chinese"]
)
def test_a_reply_over_the_cap_is_cut_where_a_sentence_ends(text: str, ends: str) -> None:
    capped = cap_summary(text, 500, count_tokens_approximately)
    assert text.startswith(capped) and capped.endswith(ends)
    assert 450 <= _tokens(capped) <= 500
    assert text[len(capped)] in " 第"  # the next sentence starts right after


def test_a_reply_over_the_cap_is_cut_where_a_line_ends() -> None:
    text = "\n".join(f"- shop {i}: export moved to s3://exports/{i}" for i in range(3000))
    capped = cap_summary(text, 300, count_tokens_approximately)
    assert text.startswith(capped) and text[len(capped)] == "\n"
    assert 270 <= _tokens(capped) <= 300


def test_a_reply_without_any_sentence_or_line_end_is_still_capped() -> None:
    words = cap_summary("word " * 20_000, 300, count_tokens_approximately)
    assert words.endswith("word") and _tokens(words) <= 300
    blob = cap_summary("x" * 100_000, 300, count_tokens_approximately)
    assert 290 <= _tokens(blob) <= 300
    tiny = cap_summary(ENGLISH, 2, count_tokens_approximately)  # under a message's overhead
    assert tiny and ENGLISH.startswith(tiny) and len(tiny) <= 2


def test_a_reply_up_to_ten_percent_over_the_cap_is_kept_whole() -> None:
    text = ENGLISH[: 4 * 530]  # about 6% over a 500-token cap
    assert 500 < _tokens(text) <= 550
    assert cap_summary(text, 500, count_tokens_approximately) == text
    longer = ENGLISH[: 4 * 600]
    assert cap_summary(longer, 500, count_tokens_approximately) != longer


@pytest.mark.parametrize(
    ("reply", "ends"), [(ENGLISH, "."), (CHINESE, "。")], ids=["english", "chinese"]
)
def test_a_100k_character_reply_is_stored_cut_to_the_cap_and_later_turns_fit(
    any_store: SummaryStore, reply: str, ends: str
) -> None:
    store = any_store
    assert len(reply) >= 50_000
    summarizer = RecordingSummarizer(reply=lambda call: (reply * 2)[:100_000])
    config = {
        "context_window": 8000,  # a budget of 7,600
        "keep": {"type": "messages", "value": 6},
        "summary_check": "off",  # the cap is under test, not the reply's wording
    }
    graph = create_compaction_graph(config, model=summarizer, store=store)
    messages = chat(40, size=600)
    events: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    stream = graph.stream(graph_input(messages), THREAD, stream_mode=["custom", "values"])
    for mode, chunk in cast(Iterator[tuple[str, Any]], stream):
        if mode == "custom":
            events.append(chunk)
        else:
            values = chunk
    report: CompactionReport = values["compaction"]
    assert report.action == "summarized" and report.summary_cut
    [record] = store.list_summaries("t")
    assert reply.startswith(record.summary) and record.summary.endswith(ends)
    assert 0.85 * 1024 <= record.summary_tokens <= 1024 + 32  # the cap, plus the message's header
    compacted = [e for e in events if e["type"] == "context_compacted"]
    assert compacted[0]["summary_cut"] is True
    assert compacted[0]["summary_tokens"] == record.summary_tokens
    # Every later turn reuses it within the budget.
    messages = messages + chat(1, system=False, prefix="late")
    later = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert later.action == "reused" and not later.summary_cut and not later.over_budget
    assert later.tokens_after <= 7600


def test_a_reply_within_the_cap_is_stored_whole(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    report = graph.invoke(graph_input(chat(20)), THREAD)["compaction"]
    assert report.action == "summarized" and not report.summary_cut
    assert store.list_summaries("t")[0].summary.startswith("SUMMARY#1")


# -- a summary that does not fit ---------------------------------------------------------------


def test_a_summary_that_does_not_fit_the_budget_is_named_as_the_cause(
    store: SummaryStore,
) -> None:
    long_summary = ENGLISH[:6000]  # about 1,500 tokens, within a 4,000-token cap
    summarizer = RecordingSummarizer(reply=lambda call: long_summary)
    config = {
        "context_window": 1000,  # a budget of 950
        "keep": {"type": "messages", "value": 6},
        "max_summary_tokens": 4000,
        "summary_check": "off",
    }
    graph = create_compaction_graph(config, model=summarizer, store=store)
    events: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    stream = graph.stream(graph_input(chat(20)), THREAD, stream_mode=["custom", "values"])
    for mode, chunk in cast(Iterator[tuple[str, Any]], stream):
        if mode == "custom":
            events.append(chunk)
        else:
            values = chunk
    report: CompactionReport = values["compaction"]
    assert report.over_budget and report.summary_over_budget and report.action == "failed"
    assert not report.summary_cut
    assert "summary in use" in (report.error or "")
    assert "newest turn alone" not in (report.error or "")
    [failed] = [e for e in events if e["type"] == "context_compaction_failed"]
    assert failed["summary_over_budget"] is True and failed["summary_tokens"] > 950


def test_a_newest_turn_that_does_not_fit_is_not_blamed_on_the_summary(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    config = {"context_window": 1000, "keep": {"type": "messages", "value": 2}}
    graph = create_compaction_graph(config, model=summarizer, store=store)
    messages = [*chat(10), HumanMessage("x " * 6000, id="huge")]
    report = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert report.over_budget and not report.summary_over_budget
    assert "newest turn alone does not fit" in (report.error or "")
