"""One OpenTelemetry span per compaction that does work (DESIGN 6.12, the ``otel`` extra).

The spans are read with the SDK's in-memory exporter. OpenTelemetry lets a process set its
global tracer provider once, so the session sets one (or joins the one already set) and each
test clears the exporter; the package finds the provider as an application's would.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import pytest
from conversations import graph_input
from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph, add_messages
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typing_extensions import TypedDict

from langgraph_compaction import (
    CompactionMiddleware,
    CompactionReport,
    SummaryStore,
    create_compaction_graph,
)
from langgraph_compaction.pipeline import telemetry as _telemetry
from langgraph_compaction.pipeline.report import ContextGauge, SummaryUsage

CONFIG: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 600},
    "keep": {"type": "messages", "value": 4},
}
THREAD = "线程-七"  # the conversation id travels as the thread id is written
RUN: RunnableConfig = {"configurable": {"thread_id": THREAD}}
TURNS = 8
TURN_TEXT = (
    "Обсудим миграцию базы данных. ",
    "我们明天发布新版本。请检查日志。",
    "هل يمكنك تلخيص التغييرات في الواجهة؟ ",
)


@pytest.fixture(scope="session")
def exporter() -> InMemorySpanExporter:
    """The session's exporter, on the global tracer provider (set here unless already set)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return memory


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    exporter.clear()
    yield exporter
    exporter.clear()


def _compaction_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == "compaction"]


def _multilingual_chat(turns: int) -> list[BaseMessage]:
    """``turns`` exchanges in Russian, Chinese and Arabic, long enough to pass the trigger."""
    messages: list[BaseMessage] = []
    for turn in range(turns):
        text = TURN_TEXT[turn % len(TURN_TEXT)] * 6
        messages.append(HumanMessage(f"{turn}: {text}", id=f"h{turn}"))
        messages.append(AIMessage(f"{turn}: {text}", id=f"a{turn}"))
    return messages


def _expected(report: CompactionReport, namespace: str = "default") -> dict[str, Any]:
    """What the span of that report carries, written out field by field."""
    expected: dict[str, Any] = {
        "compaction.action": report.action,
        "compaction.tokens_before": report.tokens_before,
        "compaction.tokens_after": report.tokens_after,
        "compaction.summary_calls": report.summary_calls,
        "compaction.namespace": namespace,
        "gen_ai.operation.name": "compaction",
        "gen_ai.conversation.id": THREAD,
    }
    if report.summary_version is not None:
        expected["compaction.summary_version"] = report.summary_version
    integrity = report.integrity
    if integrity is not None:
        expected.update(
            {
                "compaction.integrity.identifiers": integrity.identifiers,
                "compaction.integrity.kept": integrity.kept,
                "compaction.integrity.appended": integrity.appended,
                "compaction.integrity.dropped": integrity.dropped,
                "compaction.integrity.artifacts": integrity.artifacts,
                "compaction.integrity.repaired": integrity.repaired,
            }
        )
    usage = report.summary_usage
    if usage is not None:
        reported = {
            "gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        }
        expected.update({k: v for k, v in reported.items() if v is not None})
    return expected


def _report(messages: Any) -> CompactionReport:
    report = messages["compaction"]
    assert isinstance(report, CompactionReport)
    return report


# -- the span of one call ---------------------------------------------------------------------


def test_a_summarized_call_gives_one_span_from_measure_to_the_report(
    store: SummaryStore, spans: InMemorySpanExporter
) -> None:
    summarizer = RecordingSummarizer(delay=0.05)  # the span must cover the summary call
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store, namespace="客服")
    report = _report(graph.invoke(graph_input(_multilingual_chat(10)), RUN))

    assert report.action == "summarized"
    [span] = _compaction_spans(spans)
    assert dict(span.attributes or {}) == _expected(report, namespace="客服")
    assert report.summary_calls >= 1
    usage = report.summary_usage  # the fake summarizer reports input and output tokens
    assert usage is not None and usage.input_tokens and usage.output_tokens
    assert span.attributes is not None
    assert span.attributes["gen_ai.usage.input_tokens"] == usage.input_tokens
    assert span.attributes["gen_ai.usage.output_tokens"] == usage.output_tokens
    assert span.start_time is not None and span.end_time is not None
    assert span.end_time - span.start_time >= 50_000_000  # started at measure, not assemble
    assert span.status.status_code is trace.StatusCode.UNSET
    assert span.parent is None  # nothing was current: a root span


def test_a_reused_summary_gives_a_span_without_summary_calls(
    store: SummaryStore, spans: InMemorySpanExporter
) -> None:
    graph = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    messages = _multilingual_chat(10)
    first = _report(graph.invoke(graph_input(messages), RUN))
    spans.clear()
    messages.append(HumanMessage("Спасибо! 谢谢", id="thanks"))
    report = _report(graph.invoke(graph_input(messages), RUN))

    assert report.action == "reused"
    [span] = _compaction_spans(spans)
    assert dict(span.attributes or {}) == _expected(report)
    assert span.attributes is not None
    assert span.attributes["compaction.summary_calls"] == 0
    assert span.attributes["compaction.summary_version"] == first.summary_version
    assert "gen_ai.usage.input_tokens" not in span.attributes  # no summary call, no usage


@pytest.mark.parametrize(
    ("config", "messages"),
    [
        (CONFIG, _multilingual_chat(2)),  # under the trigger: ends at measure
        # Fired, but the latest user request cannot be evicted: passes through assemble.
        (
            {"trigger": {"type": "messages", "value": 2}},
            [SystemMessage("你好"), HumanMessage("Вопрос")],
        ),
    ],
    ids=["under-the-trigger", "nothing-to-evict"],
)
def test_a_passthrough_gives_no_span(
    store: SummaryStore,
    spans: InMemorySpanExporter,
    config: dict[str, Any],
    messages: list[BaseMessage],
) -> None:
    graph = create_compaction_graph(config, model=RecordingSummarizer(), store=store)
    report = _report(graph.invoke(graph_input(messages), RUN))
    assert report.action == "passthrough"
    assert _compaction_spans(spans) == []


def test_a_failed_call_sets_the_span_status_to_error(
    store: SummaryStore, spans: InMemorySpanExporter
) -> None:
    summarizer = RecordingSummarizer(fail_with=RuntimeError("模型不可用: сервер недоступен"))
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    report = _report(graph.invoke(graph_input(_multilingual_chat(10)), RUN))

    assert report.action == "failed" and report.error
    [span] = _compaction_spans(spans)
    assert span.status.status_code is trace.StatusCode.ERROR
    assert span.status.description == report.error
    assert dict(span.attributes or {}) == _expected(report)


def test_old_media_left_out_under_the_trigger_gives_a_span(
    store: SummaryStore, spans: InMemorySpanExporter
) -> None:
    """``pruned`` by ``media_keep_last`` ends at measure, without assemble: still a span."""
    config = {"trigger": {"type": "tokens", "value": 10_000_000}, "pruning": {"media_keep_last": 1}}
    graph = create_compaction_graph(config, store=store)
    image = {"type": "image_url", "image_url": {"url": "https://example.com/图表.png"}}
    messages: list[BaseMessage] = []
    for turn in range(3):
        messages.append(HumanMessage([{"type": "text", "text": f"看图 {turn}"}, image]))
        messages.append(AIMessage(f"видно {turn}"))
    report = _report(graph.invoke(graph_input(messages), RUN))

    assert report.action == "pruned" and report.media_replaced == 2
    [span] = _compaction_spans(spans)
    assert dict(span.attributes or {}) == _expected(report)


def test_the_attributes_hold_the_reported_usage_and_leave_out_what_was_not_reported() -> None:
    gauge = ContextGauge(100, None, None, 100)
    usage = SummaryUsage(input_tokens=1200, output_tokens=150, cache_read_tokens=None)
    report = CompactionReport(
        "summarized", 900, 100, gauge, summary_version=3, summary_calls=2, summary_usage=usage
    )
    attributes = _telemetry.span_attributes(report, "", "default")
    assert attributes["gen_ai.usage.input_tokens"] == 1200
    assert attributes["gen_ai.usage.output_tokens"] == 150
    assert "gen_ai.usage.cache_read.input_tokens" not in attributes  # null, never 0
    assert "gen_ai.conversation.id" not in attributes  # a call without a thread id
    cached = SummaryUsage(input_tokens=1200, output_tokens=None, cache_read_tokens=1000)
    report = CompactionReport("summarized", 900, 100, gauge, summary_usage=cached)
    attributes = _telemetry.span_attributes(report, "t", "default")
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 1000
    assert "gen_ai.usage.output_tokens" not in attributes
    assert "compaction.summary_version" not in attributes


# -- nesting under the caller's span, sync and async ------------------------------------------


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


def _turn(index: int) -> Any:
    text = TURN_TEXT[index % len(TURN_TEXT)] * 6
    return {"messages": [HumanMessage(f"{index}: {text}", id=f"u{index}")]}


def _assert_nested(spans: InMemorySpanExporter) -> None:
    """Each compaction span is a child of the turn span that was current; some summarized."""
    finished = spans.get_finished_spans()
    turns = {s.context.span_id: s for s in finished if s.name == "agent turn" and s.context}
    compactions = _compaction_spans(spans)
    assert len(turns) == TURNS and compactions
    for span in compactions:
        assert span.parent is not None and span.parent.span_id in turns
        parent = turns[span.parent.span_id]
        assert parent.context is not None and span.context is not None
        assert span.context.trace_id == parent.context.trace_id
    actions = [s.attributes["compaction.action"] for s in compactions if s.attributes]
    assert "summarized" in actions and "passthrough" not in actions


def _parent_graph(store: SummaryStore) -> Any:
    """compaction -> agent, the agent answering from ``llm_input_messages``."""

    def agent(state: AgentState) -> dict[str, Any]:
        count = len(state["llm_input_messages"])
        return {"messages": [AIMessage(f"Понял, 收到 {count}", id=f"r{len(state['messages'])}")]}

    builder = StateGraph(AgentState)
    builder.add_node(
        "compaction", create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    )
    builder.add_node("agent", agent)
    builder.add_edge(START, "compaction")
    builder.add_edge("compaction", "agent")
    return builder.compile(checkpointer=InMemorySaver())


def _agent(store: SummaryStore) -> Any:
    middleware = CompactionMiddleware(CONFIG, model=RecordingSummarizer(), store=store)
    return create_agent(
        FakeToolCallingModel(), middleware=[middleware], checkpointer=InMemorySaver()
    )


@pytest.mark.parametrize("build", [_parent_graph, _agent], ids=["parent-graph", "middleware"])
def test_spans_nest_under_the_callers_span(
    store: SummaryStore, spans: InMemorySpanExporter, build: Callable[[SummaryStore], Any]
) -> None:
    runnable = build(store)
    tracer = trace.get_tracer("tests")
    for index in range(TURNS):
        with tracer.start_as_current_span("agent turn"):
            runnable.invoke(_turn(index), RUN)
    _assert_nested(spans)


@pytest.mark.parametrize("build", [_parent_graph, _agent], ids=["parent-graph", "middleware"])
async def test_spans_nest_under_the_callers_span_async(
    store: SummaryStore, spans: InMemorySpanExporter, build: Callable[[SummaryStore], Any]
) -> None:
    runnable = build(store)
    tracer = trace.get_tracer("tests")
    for index in range(TURNS):
        with tracer.start_as_current_span("agent turn"):
            await runnable.ainvoke(_turn(index), RUN)
    _assert_nested(spans)


# -- without opentelemetry ----------------------------------------------------------------------


@pytest.fixture
def without_opentelemetry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``pipeline.telemetry`` imported as if the ``otel`` extra were absent; restored afterwards."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    importlib.reload(_telemetry)
    yield
    monkeypatch.undo()
    importlib.reload(_telemetry)


def test_without_opentelemetry_compaction_works_and_emits_nothing(
    store: SummaryStore, spans: InMemorySpanExporter, without_opentelemetry: None
) -> None:
    assert vars(_telemetry)["trace"] is None  # the import failed, as without the extra
    graph = create_compaction_graph(CONFIG, model=RecordingSummarizer(), store=store)
    report = _report(graph.invoke(graph_input(_multilingual_chat(10)), RUN))
    assert report.action == "summarized"
    assert spans.get_finished_spans() == ()


def test_the_span_carries_the_identifier_check(
    store: SummaryStore, spans: InMemorySpanExporter
) -> None:
    """``compaction.integrity.*``: what the check of the new summary found (DESIGN 6.13)."""
    chat = _multilingual_chat(10)
    chat[0] = HumanMessage("0: the ticket is OPS-4411, the log /var/log/app.log.", id="h0")
    summarizer = RecordingSummarizer(
        reply=lambda call: "The ticket and the log: Обсудим миграцию базы данных."
    )
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    report = _report(graph.invoke(graph_input(chat), RUN))
    assert report.action == "summarized" and report.integrity is not None
    [span] = _compaction_spans(spans)
    attributes = dict(span.attributes or {})
    assert attributes == _expected(report)
    identifiers, appended = (
        attributes["compaction.integrity.identifiers"],
        attributes["compaction.integrity.appended"],
    )
    assert isinstance(identifiers, int) and identifiers >= 2
    assert isinstance(appended, int) and appended >= 2
    assert attributes["compaction.integrity.kept"] == 0
    assert attributes["compaction.integrity.repaired"] is False
