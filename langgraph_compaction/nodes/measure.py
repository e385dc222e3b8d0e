"""measure: count the whole context and decide whether anything else needs to run.

Threshold first: when no trigger fires the call passes ``messages`` through untouched, with no model
call and one store read at most: the thread's control version (``steering.changes``), so that a
request to compact, a pin, an edit or a revoke made by any process reaches the next call. When the
summary this process served last still matches and fits, the call goes straight to assemble (the
reuse fast path); so does a call over a trigger on a thread this process has not seen yet (a
restarted worker) when a stored summary serves it: one lookup here, not prune, partition and
summarize with their reads. ``configurable.compaction`` steers one call: ``skip`` passes it through
untouched, ``force`` (or a request filed in the store) compacts it even under every trigger.

    measure -> END (pass through, skipped, old media replaced)
             | assemble (the summary held, or stored and first seen) | prune
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.types import Command

from langgraph_compaction.config.run_control import NO_CONTROL, RunControl, run_control
from langgraph_compaction.config.settings import Settings, emit, thread_id_of
from langgraph_compaction.config.triggers import find_keep_start, fired_triggers
from langgraph_compaction.content.history_scan import HistoryScan
from langgraph_compaction.content.messages import coerce_messages, count_leading_system
from langgraph_compaction.content.tokens import calibrated
from langgraph_compaction.pipeline.context import Pipeline, Precompact
from langgraph_compaction.pipeline.effects import Step
from langgraph_compaction.pipeline.records import Measured, Outcome
from langgraph_compaction.pipeline.report import CompactionReport, ContextGauge
from langgraph_compaction.pipeline.state import CompactionInput
from langgraph_compaction.pipeline.telemetry import trace_compaction
from langgraph_compaction.pruning.epochs import old_media_input
from langgraph_compaction.steering.changes import FORCED, steering, stored_summary
from langgraph_compaction.store.summary_store import plumbing
from langgraph_compaction.summary.matching import compressed_triggers, held_summary, still_serves

__all__ = ["measure", "measure_context", "measure_step", "old_media_report", "passthrough_report"]


def measure_context(
    settings: Settings, scan: HistoryScan, messages: Sequence[BaseMessage], ratio: float | None
) -> tuple[int, tuple[str, ...], bool]:
    """Total tokens of the whole context, the triggers it fires, and whether it nears one."""
    total = calibrated(settings.fixed_tokens + scan.total, ratio)
    refine = 0
    if settings.needs_refine_count:
        lead = count_leading_system(messages)
        keep, window = settings.config.keep, settings.window
        refine = find_keep_start(messages, scan, lead, keep, window) - lead
    fired = fired_triggers(settings.thresholds, total, len(messages), refine)
    near = bool(
        not fired
        and settings.precompact_thresholds
        and fired_triggers(settings.precompact_thresholds, total, len(messages), refine)
    )
    return total, fired, near


def passthrough_report(settings: Settings, total: int) -> CompactionReport:
    gauge = ContextGauge(total, settings.window, settings.budget, total)
    return CompactionReport("passthrough", total, total, gauge)


def old_media_report(
    settings: Settings, measured: Measured, saved: int, replaced: int
) -> CompactionReport:
    """No trigger fired, but old media left the model input (``media_keep_last``)."""
    after = calibrated(settings.fixed_tokens + measured.scan.total - saved, measured.ratio)
    gauge = ContextGauge(after, settings.window, settings.budget, measured.tokens_before)
    before = measured.tokens_before
    return CompactionReport("pruned", before, after, gauge, media_replaced=replaced)


def measure(
    pipe: Pipeline,
    messages: Sequence[BaseMessage],
    config: RunnableConfig,
    control: RunControl = NO_CONTROL,
    pins: frozenset[str] = frozenset(),
) -> Measured:
    """Measure one call: the record every later node reads."""
    started_ns = time.time_ns()
    settings, memory = pipe.settings, pipe.memory
    thread_id = thread_id_of(config)
    key = (settings.namespace, thread_id)
    memory.observe_usage(key, messages)
    scan = memory.history.scan(key, messages)
    ratio = memory.ratio(key)
    total, fired, near = measure_context(settings, scan, messages, ratio)
    if control.force and not fired:
        fired, near = (FORCED,), False
    return Measured(
        started_ns=started_ns,
        thread_id=thread_id,
        key=key,
        epoch=plumbing(settings.store).deletion_epoch(thread_id, settings.namespace),
        messages=messages,
        scan=scan,
        lead=count_leading_system(messages),
        ratio=ratio,
        tokens_before=total,
        fired=fired,
        near=near,
        control=control,
        pins=pins,
    )


def measure_step(
    pipe: Pipeline, precompact: Precompact, state: CompactionInput, config: RunnableConfig
) -> Step[Command[str]]:
    """The node: pass through, serve the held summary, or go on to prune."""
    messages = coerce_messages(state)
    settings = pipe.settings
    if not settings.config.enabled:
        update = {"llm_input_messages": messages, "compaction": passthrough_report(settings, 0)}
        return Command(goto=END, update=update)
    control = run_control(config)
    if control.skip:  # the caller asked for this call to pass through untouched
        measured = measure(pipe, messages, config)
        report = passthrough_report(settings, measured.tokens_before)
        return Command(goto=END, update={"llm_input_messages": messages, "compaction": report})
    key = (settings.namespace, thread_id_of(config))
    unseen = bool(key[1]) and pipe.memory.controls(key) is None
    control, pins, fresh = yield from steering(pipe, key, control)
    # A thread this process had not seen, whose controls the store just gave (not in an
    # outage, when a summaries lookup would only wait for the store to fail again).
    first_sight = unseen and pipe.memory.controls(key) is not None
    measured = measure(pipe, messages, config, control, pins)
    for event in pipe.jobs.take_events(measured.key):
        emit(event)
    if not measured.fired:
        # A summary made on request keeps serving while the conversation is under the
        # triggers: what was compacted stays compacted (an automatic one is never held there).
        held = held_summary(pipe, measured)
        if held is None and fresh:
            found = yield from stored_summary(pipe, measured, oldest=False)
            held = found[0] if found is not None else None
        if measured.near:  # prepares the next summary meanwhile
            yield precompact(pipe, measured, held)
        if held is not None:
            outcome = Outcome("reused", held)
            return Command(goto="assemble", update={"measured": measured, "outcome": outcome})
        sent: Sequence[BaseMessage] = messages
        report = passthrough_report(settings, measured.tokens_before)
        shrunk = old_media_input(pipe, measured)
        if shrunk is not None:  # media_keep_last holds below every trigger too
            sent, saved, replaced = shrunk
            report = old_media_report(settings, measured, saved, replaced)
            trace_compaction(report, measured.started_ns, measured.thread_id, settings.namespace)
        pipe.memory.remember_sent(measured.key, messages, report.tokens_after, measured.ratio)
        return Command(goto=END, update={"llm_input_messages": sent, "compaction": report})
    held = None if control.force else still_serves(pipe, measured)
    newest = True
    if held is None and first_sight and not control.force:  # a restarted worker, say
        found = yield from stored_summary(pipe, measured, oldest=True)
        if found is not None:
            held, newest = found
    if held is None:
        return Command(goto="prune", update={"measured": measured})
    if (
        newest  # else a newer summary is stored already: nothing to prepare
        and settings.precompact_thresholds
        and compressed_triggers(pipe, measured, held, settings.precompact_thresholds)
    ):
        yield precompact(pipe, measured, held)
    return Command(
        goto="assemble", update={"measured": measured, "outcome": Outcome("reused", held)}
    )
