"""One OpenTelemetry span per compaction that does work (the optional ``otel`` extra).

The span is named ``compaction``, starts when measure began (``Measured.started_ns``) and ends
when the report is built, as a child of the caller's current span. Its attributes carry the
report's figures under ``compaction.*`` and, where the GenAI semantic conventions name one,
under that name (``gen_ai.operation.name`` is ``compaction``: a custom value, since none of the
well-known ones applies). A failed call sets the span's status to ERROR with the report's error.

opentelemetry is imported once, here: without it a call costs one ``None`` check; with the API
and no SDK configured, the tracer is OpenTelemetry's no-op one.
"""

from __future__ import annotations

from langgraph_compaction.pipeline.report import CompactionReport

try:
    from opentelemetry import trace
except ImportError:  # the `otel` extra is not installed: no spans
    trace = None  # type: ignore[assignment]

__all__ = ["SPAN_NAME", "span_attributes", "trace_compaction"]

SPAN_NAME = "compaction"
OPERATION_NAME = "compaction"
"""``gen_ai.operation.name``: no well-known value (chat, embeddings, ...) describes it."""

# A proxy until the application sets its tracer provider, then that provider's tracer.
_tracer = trace.get_tracer("langgraph_compaction") if trace is not None else None


def span_attributes(
    report: CompactionReport, thread_id: str, namespace: str
) -> dict[str, str | int]:
    """The span's attributes; a figure the call does not have (no thread, no summary, usage
    the summarizer did not report) is left out, never sent as 0."""
    attributes: dict[str, str | int] = {
        "compaction.action": report.action,
        "compaction.tokens_before": report.tokens_before,
        "compaction.tokens_after": report.tokens_after,
        "compaction.summary_calls": report.summary_calls,
        "compaction.namespace": namespace,
        "gen_ai.operation.name": OPERATION_NAME,
    }
    if report.summary_version is not None:
        attributes["compaction.summary_version"] = report.summary_version
    if thread_id:
        attributes["gen_ai.conversation.id"] = thread_id
    integrity = report.integrity
    if integrity is not None:
        for name in ("identifiers", "kept", "appended", "dropped", "artifacts"):
            attributes[f"compaction.integrity.{name}"] = getattr(integrity, name)
        attributes["compaction.integrity.repaired"] = integrity.repaired
    usage = report.summary_usage
    if usage is not None:
        for name, value in (
            ("gen_ai.usage.input_tokens", usage.input_tokens),
            ("gen_ai.usage.output_tokens", usage.output_tokens),
            ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens),
        ):
            if value is not None:
                attributes[name] = value
    return attributes


def trace_compaction(
    report: CompactionReport, started_ns: int, thread_id: str, namespace: str
) -> None:
    """Record the call's span, unless opentelemetry is absent or the call passed through."""
    if _tracer is None or report.action == "passthrough":
        return
    span = _tracer.start_span(
        SPAN_NAME,
        attributes=span_attributes(report, thread_id, namespace),
        start_time=started_ns or None,
    )
    if report.action == "failed":
        span.set_status(trace.StatusCode.ERROR, report.error)
    span.end()
