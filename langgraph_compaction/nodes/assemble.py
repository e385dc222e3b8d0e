"""assemble: build the model input from the summary in use and what stays verbatim.

``[leading system] + [summary] + [rescued, in order] + [kept]``, with the kept messages'
pruned copies when pruning is on, and old media replaced by references (``media_keep_last``).
When even that does not fit, the oldest kept units are dropped (never the latest user request,
a pinned unit or the newest unit), then the newest unit's oversized tool results are shortened
in the copy. The report counts the summary's pinned messages kept verbatim and those that went
to the summary past ``pin_budget``: from the row's rescued ids and the current pins, once per
row and pin set (a steady-state call does not look at the prefix again).
A final check enforces the tool-pair rule on the output. Only this node (and measure, passing
through) writes the outputs.

    assemble -> END
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, ToolMessage

from langgraph_compaction.config.settings import emit
from langgraph_compaction.content.messages import (
    ensure_tool_pairs,
    find_latest_user_index,
    split_tool_units,
)
from langgraph_compaction.content.tokens import TokenCounter, calibrated
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.records import Measured, Outcome, OutcomeInput
from langgraph_compaction.pipeline.remembered import LastInput
from langgraph_compaction.pipeline.report import CompactionAction, CompactionReport, ContextGauge
from langgraph_compaction.pipeline.telemetry import trace_compaction
from langgraph_compaction.pruning.pins import count_pinned, is_pinned
from langgraph_compaction.store import SummaryRecord, storable
from langgraph_compaction.summary.chunks import shorten_message
from langgraph_compaction.summary.model_input import model_input

__all__ = ["assemble", "assemble_node"]


def _shorten_newest_unit(
    body: list[BaseMessage], tokens: list[int], limit: int, counter: TokenCounter
) -> int:
    """Shorten the text of the newest unit's largest tool results until the input fits;
    returns how many. Their images and other blocks stay, and still count."""
    first = split_tool_units(body)[-1][0] if body else 0
    over = sum(tokens) - limit
    results = sorted(
        (i for i in range(first, len(body)) if isinstance(body[i], ToolMessage)),
        key=lambda i: -tokens[i],
    )

    def measure(message: BaseMessage) -> int:
        return counter([message])

    shortened = 0
    for index in results:
        if over <= 0:
            break
        target = max(tokens[index] - over, 16)
        short = shorten_message(body[index], target, measure)
        if short is body[index]:
            continue  # no text to cut
        size = measure(short)
        body[index] = short
        over -= tokens[index] - size
        tokens[index] = size
        shortened += 1
    return shortened


def assemble(
    pipe: Pipeline, measured: Measured, outcome: Outcome
) -> tuple[list[BaseMessage], CompactionReport]:
    """The model input and the report of this call."""
    settings = pipe.settings
    messages, scan = measured.messages, measured.scan
    record = outcome.record
    built = model_input(pipe, measured, record)
    body, tokens, kept_at, kept_from = built.body, built.tokens, built.kept_at, built.kept_from
    summary_tokens, rescued, pruned = built.summary_tokens, built.rescued, built.pruned

    dropped = shortened = 0
    over_budget = summary_over_budget = False
    limit = settings.fit_limit
    if limit is not None:
        raw_limit = int(limit / measured.ratio) if measured.ratio else limit
        available = raw_limit - settings.fixed_tokens
        if sum(tokens) > available:
            dropped = _drop_oldest_units(body, tokens, kept_at, available, measured.pins)
        if sum(tokens) > available:
            shortened = _shorten_newest_unit(body, tokens, available, settings.counter)
        over_budget = sum(tokens) > available
        # The summary is to blame when it alone exceeds the budget, or the rest would fit.
        summary_over_budget = (
            over_budget
            and summary_tokens > 0
            and (summary_tokens > available or sum(tokens) - summary_tokens <= available)
        )
    output, repairs = ensure_tool_pairs(body)
    tokens_after = calibrated(settings.fixed_tokens + sum(tokens), measured.ratio)
    baseline = calibrated(
        settings.fixed_tokens + summary_tokens + scan.tokens_between(kept_from, len(messages)),
        measured.ratio,
    )
    pipe.memory.remember_sent(measured.key, messages, tokens_after, measured.ratio)
    if messages:
        last = LastInput(
            tuple(output), len(messages), messages[-1].id, record.id if record else None
        )
        pipe.memory.remember_input(measured.key, last)
    action = _action(outcome, pruned.count + pruned.media_replaced + shortened + dropped)
    pinned, unpinned = _pin_counts(pipe, measured, record, rescued) if record else (0, 0)
    error = outcome.error
    if over_budget:
        action = "failed"
        shown_summary = calibrated(summary_tokens, measured.ratio)
        error = _over_budget_error(
            tokens_after, limit, shown_summary if summary_over_budget else None
        )
        emit(
            {
                "type": "context_compaction_failed",
                "thread_id": measured.thread_id,
                "namespace": settings.namespace,
                "cause": "over_budget",
                "error": error,
                "tokens_after": tokens_after,
                "summary_tokens": shown_summary,
                "summary_over_budget": summary_over_budget,
            }
        )
    report = CompactionReport(
        action=action,
        tokens_before=measured.tokens_before,
        tokens_after=tokens_after,
        gauge=ContextGauge(tokens_after, settings.window, settings.budget, baseline),
        triggers_fired=measured.fired,
        summary_id=record.id if record else None,
        summary_version=record.version if record else None,
        summarized_messages=(record.covered_messages - measured.lead) if record else 0,
        summary_calls=outcome.calls,
        pruned_count=pruned.count,
        media_replaced=pruned.media_replaced,
        rescued_count=len(rescued),
        shortened_count=outcome.shortened + shortened,
        over_trim_count=outcome.over_trim,
        dropped_count=dropped,
        repaired_pairs=repairs,
        over_budget=over_budget,
        summary_over_budget=summary_over_budget,
        summary_cut=outcome.summary_cut,
        summary_usage=outcome.usage,
        pinned_count=pinned,
        unpinned_over_budget=unpinned,
        error=storable(error) if error else None,  # JSON-safe, as the event's
        integrity=outcome.integrity if outcome.action == "summarized" else None,
    )
    return output, report


def _over_budget_error(tokens_after: int, limit: int | None, summary_tokens: int | None) -> str:
    """Why the input still exceeds the budget: the summary in use (its tokens given), or the
    newest turn."""
    over = f"the model input is {tokens_after} tokens, over the budget of {limit}: "
    if summary_tokens is None:
        return over + "nothing more can be evicted and the newest turn alone does not fit"
    return over + (
        f"the summary in use takes {summary_tokens} of them and does not fit with the newest "
        "turn (a summary stored larger than this budget allows: lower max_summary_tokens, or "
        "revoke or edit the summary)"
    )


def assemble_node(pipe: Pipeline, state: OutcomeInput) -> dict[str, object]:
    """The node (no I/O): write the outputs, and hold the summary served for the next call."""
    measured, outcome = state["measured"], state["outcome"]
    if outcome.record is not None and outcome.action != "failed":
        pipe.memory.hold(measured.key, outcome.record, measured.epoch)
    messages, report = assemble(pipe, measured, outcome)
    trace_compaction(report, measured.started_ns, measured.thread_id, pipe.settings.namespace)
    return {"llm_input_messages": messages, "compaction": report}


def _action(outcome: Outcome, changed: int) -> CompactionAction:
    """What the report says happened: only what did (``reused`` only with a summary)."""
    if outcome.action == "kept" or (outcome.action == "reused" and outcome.record is None):
        return "pruned" if changed else "passthrough"
    return outcome.action


def _pin_counts(
    pipe: Pipeline, measured: Measured, record: SummaryRecord, rescued: Sequence[int]
) -> tuple[int, int]:
    """The summary's pinned messages kept verbatim, and those it holds (past ``pin_budget``)."""
    messages, lead = measured.messages, measured.lead

    def count() -> tuple[int, int]:
        return count_pinned(messages, lead, record.covered_messages, set(rescued), measured.pins)

    return pipe.memory.pin_counts.get_or_make((record.id, measured.pins), count)


def _drop_oldest_units(
    body: list[BaseMessage],
    tokens: list[int],
    start: int,
    available: int,
    pins: frozenset[str] = frozenset(),
) -> int:
    """Drop the oldest whole units after ``start``.

    Never the latest user request, never a pinned unit, never the newest unit.
    """
    latest_user = find_latest_user_index(body, start)
    units = split_tool_units(body, start)[:-1]
    drop: set[int] = set()
    total = sum(tokens)
    for first, end in units:
        if total <= available:
            break
        if latest_user is not None and first <= latest_user < end:
            continue
        if any(is_pinned(body[i], pins) for i in range(first, end)):
            continue
        drop.update(range(first, end))
        total -= sum(tokens[first:end])
    if drop:
        body[:] = [m for i, m in enumerate(body) if i not in drop]
        tokens[:] = [t for i, t in enumerate(tokens) if i not in drop]
    return len(drop)
