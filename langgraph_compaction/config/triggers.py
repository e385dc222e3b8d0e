"""Triggers resolved against the context window, and where the verbatim tail begins.

A trigger of the configuration (``ContextSize``) becomes a :class:`Threshold` with an absolute
limit once the window and budget are known, so measuring a call is a few comparisons.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import BaseMessage

from langgraph_compaction.config.parts import ContextSize, KeepSize
from langgraph_compaction.content.history_scan import HistoryScan
from langgraph_compaction.content.messages import split_tool_units
from langgraph_compaction.errors import CompactionConfigError

__all__ = [
    "Threshold",
    "find_keep_start",
    "fired_triggers",
    "resolve_thresholds",
    "scale_thresholds",
    "within_headroom",
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


def within_headroom(
    thresholds: Sequence[Threshold], headroom: float, tokens: int, count: int, refine: int
) -> bool:
    """Whether a context sits below ``headroom`` of every threshold (stickiness)."""
    measured = {"tokens": tokens, "messages": count, "refine": refine}
    return all(measured[t.kind] < headroom * t.limit for t in thresholds)
