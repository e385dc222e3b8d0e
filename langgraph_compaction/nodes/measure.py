"""measure: count the whole context and decide whether anything else needs to run.

Threshold first: when no trigger fires the call passes ``messages`` through untouched, with
no store access and no model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig

from .._config import ContextSize, KeepSize
from .._exceptions import CompactionConfigError
from .._messages import count_leading_system, split_tool_units
from .._report import CompactionReport, ContextGauge
from .._runtime import CallWork, CompactionRuntime, thread_id_of
from .._tokens import HistoryScan, calibrated

__all__ = [
    "Threshold",
    "find_keep_start",
    "fired_triggers",
    "measure_context",
    "resolve_thresholds",
    "scale_thresholds",
]


@dataclass(frozen=True, slots=True)
class Threshold:
    """One trigger resolved against the window: fires when ``measured >= limit``."""

    kind: Literal["tokens", "messages", "refine"]
    limit: float
    label: str


def resolve_thresholds(
    triggers: Sequence[ContextSize] | None, window: int | None, budget: int | None
) -> tuple[Threshold, ...]:
    """Turn the configured triggers into absolute limits (needs the window for ratios)."""
    if triggers is None:
        if budget is None:
            raise CompactionConfigError(
                "trigger is null, which fires when the context no longer fits the window, "
                "but no context window is known: set context_window or pass the agent's "
                "model as fallback_model (its profile gives max_input_tokens)"
            )
        return (Threshold("tokens", budget, f"budget>={budget}"),)
    thresholds: list[Threshold] = []
    for trigger in triggers:
        label = f"{trigger.type}>={trigger.value:g}"
        if trigger.type == "tokens":
            thresholds.append(Threshold("tokens", trigger.value, label))
        elif trigger.type == "messages":
            thresholds.append(Threshold("messages", trigger.value, label))
        elif trigger.type == "messages_to_refine":
            thresholds.append(Threshold("refine", trigger.value, label))
        elif trigger.type in ("fraction", "token_ratio"):
            if window is None:
                raise _window_missing(f"trigger {trigger.type}")
            thresholds.append(Threshold("tokens", trigger.value * window, label))
        else:  # remaining_tokens: fires when budget - total <= value
            if budget is None:
                raise _window_missing("trigger remaining_tokens")
            thresholds.append(Threshold("tokens", budget - trigger.value, label))
    return tuple(thresholds)


def _window_missing(what: str) -> CompactionConfigError:
    return CompactionConfigError(
        f"{what} needs the model's context window: set context_window in the config or pass "
        "the agent's model as fallback_model (its profile gives max_input_tokens)"
    )


def scale_thresholds(thresholds: Sequence[Threshold], ratio: float | None) -> tuple[Threshold, ...]:
    """The thresholds at ``ratio`` of their limits (pre-compaction starts there)."""
    if ratio is None:
        return ()
    return tuple(Threshold(t.kind, t.limit * ratio, f"{ratio:g}x{t.label}") for t in thresholds)


def fired_triggers(
    thresholds: Sequence[Threshold], tokens: int, messages: int, refine: int
) -> tuple[str, ...]:
    """Labels of the thresholds the measured context reaches (any one fires: OR)."""
    measured = {"tokens": tokens, "messages": messages, "refine": refine}
    return tuple(t.label for t in thresholds if measured[t.kind] >= t.limit)


def find_keep_start(
    messages: Sequence[BaseMessage],
    scan: HistoryScan,
    start: int,
    keep: KeepSize,
    window: int | None,
) -> int:
    """Index of the first message the ``keep`` window holds verbatim, at a unit boundary.

    The window is widened to whole tool units (an AI message and its results stay together);
    it always holds at least the newest unit.
    """
    units = split_tool_units(messages, start)
    if not units:
        return len(messages)
    if keep.type == "messages":
        target = max(start, len(messages) - int(keep.value))
        for first, end in units:
            if first <= target < end:
                return first
        return units[-1][0]
    limit = keep.value if keep.type == "tokens" else keep.value * (window or 0)
    end_index = len(messages)
    keep_start = units[-1][0]
    for first, _ in reversed(units):
        if scan.tokens_between(first, end_index) > limit:
            break
        keep_start = first
    return keep_start


def measure_context(
    runtime: CompactionRuntime,
    scan: HistoryScan,
    messages: Sequence[BaseMessage],
    ratio: float | None,
) -> tuple[int, tuple[str, ...], bool]:
    """Total tokens of the whole context, the triggers it fires, and whether it nears one."""
    total = calibrated(runtime.fixed_tokens + scan.cumulative[len(messages)], ratio)
    refine = 0
    if runtime.needs_refine_count:
        lead = count_leading_system(messages)
        refine = find_keep_start(messages, scan, lead, runtime.config.keep, runtime.window) - lead
    fired = fired_triggers(runtime.thresholds, total, len(messages), refine)
    near = bool(
        not fired
        and runtime.precompact_thresholds
        and fired_triggers(runtime.precompact_thresholds, total, len(messages), refine)
    )
    return total, fired, near


def _observe_usage(
    runtime: CompactionRuntime, key: tuple[str, str], messages: Sequence[BaseMessage]
) -> None:
    """Calibrate from the usage a provider reported for the input this thread last sent."""
    sent = runtime.last_sent.get(key)
    if sent is None:
        return
    index, message_id, estimate = sent
    if len(messages) <= index + 1 or messages[index].id != message_id or estimate <= 0:
        return
    reply = messages[index + 1]
    usage = reply.usage_metadata if isinstance(reply, AIMessage) else None
    if usage and usage.get("input_tokens"):
        runtime.calibration[key] = usage["input_tokens"] / estimate
        runtime.calibration_dirty.add(key)
    del runtime.last_sent[key]


def measure(
    runtime: CompactionRuntime, messages: Sequence[BaseMessage], config: RunnableConfig
) -> tuple[CallWork | None, CompactionReport | None]:
    """Measure one call: a passthrough report, the work for the nodes that follow, or both.

    Both come back when the context passes through but nears a trigger: the work then
    seeds a background summary.
    """
    thread_id = thread_id_of(config)
    key = (runtime.namespace, thread_id)
    if not runtime.config.enabled:
        return None, _passthrough_report(runtime, 0)
    _observe_usage(runtime, key, messages)
    for event in runtime.background.take_events(key):
        runtime.emit(event)
    scan = runtime.history.scan(key, messages)
    ratio = runtime.calibration.get(key)
    total, fired, near = measure_context(runtime, scan, messages, ratio)
    report = None
    if not fired:
        runtime.remember_sent(key, messages, total, ratio)
        report = _passthrough_report(runtime, total)
        if not near:
            return None, report
    work = CallWork(
        thread_id=thread_id,
        key=key,
        epoch=runtime.store.deletion_epoch(thread_id, runtime.namespace),
        messages=messages,
        scan=scan,
        lead=count_leading_system(messages),
        ratio=ratio,
        tokens_before=total,
        fired=fired,
    )
    return work, report


def _passthrough_report(runtime: CompactionRuntime, total: int) -> CompactionReport:
    gauge = ContextGauge(total, runtime.window, runtime.budget, total)
    return CompactionReport("passthrough", total, total, gauge)
