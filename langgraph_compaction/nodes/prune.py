"""prune: shrink old, large tool results in the model input copy (cheap before expensive).

Treatments (LibreChat's ``contextPruning``). A tool result is eligible when it comes after the
first real user message and before the last ``keep_last_assistants`` assistant messages (those
and all after them are protected), its tool passes ``tools_allow``/``tools_deny`` (globs,
case-insensitive, deny wins), and it alone has ``min_prunable_tool_chars`` characters (an image
counts ``IMAGE_CHARS``). At age ``(N - i) / N`` (position ``i`` of the ``N`` messages of the
model input) it is soft trimmed from ``soft_trim_ratio`` (head and tail kept, a marker saying
how much was cut, images replaced by a placeholder) and hard cleared from ``hard_clear_ratio``.
Only the model input copy changes: state, checkpoint and summarizer keep the originals.

Epochs keep the bytes stable. Evaluated on every call, the age formula would re-treat messages
as they drift one position older per turn, breaking prompt caches. So treatments change only
at a *crossing* and are frozen in between, when the input grows by appending. Crossings are
derived from the history alone, replaying its cumulative token estimates: the first is the
first prefix ``messages[:p]`` whose unpruned context reaches the smallest tokens trigger, the
next the first whose context with the current treatments reaches it again (binary searches).
At a crossing the age formula is evaluated at ``N = p``, merged with the earlier treatments (a
message is never restored), then escalated oldest first (untreated -> soft -> hard) until the
context is below ``headroom_ratio`` x the trigger. If it still reaches the trigger, the phase
*fails* there: a summary takes over (made from the originals). The estimates are uncalibrated,
as the calibration ratio drifts per turn and is loaded lazily; it still guards the budget. Any
process derives the same crossings, and each runtime caches the derivation per thread and
extends it, so a steady-state call costs O(new messages).

Phases tie pruning to summaries. Before any summary the whole history is one phase. With a
summary in use the input is ``system + summary + rescued + messages[boundary:]``; that
summary's phase prunes only the messages after its boundary, counts the summary and rescued
messages in its context, takes positions from the model input, and replays its crossings from
the boundary (it starts unpruned: the summary was made with headroom). A failed phase stays
failed, so the input never returns to an older shape: the no-summary phase serves while it
fits, then the summary in use (the oldest that fits, pruned or not), then a new summary.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

from .._pruning import (
    HARD,
    KEEP,
    SOFT,
    age_level,
    first_user_index,
    is_candidate,
    plan_pruning,
    protected_from,
    prunable_chars,
    pruned_copy,
    soft_trim_text,
    tool_allowed,
)
from .._runtime import CallWork, CompactionRuntime
from .._tokens import HistoryScan, calibrated
from ..store import SummaryRecord
from .measure import find_keep_start, fired_triggers

__all__ = [
    "Epochs",
    "Phase",
    "apply_pruning",
    "derive_epochs",
    "plan_pruning",
    "prune",
    "pruned_copy",
    "pruned_summary_triggers",
    "soft_trim_text",
    "tool_allowed",
]


@dataclass(frozen=True, slots=True)
class Phase:
    """One shape of the model input: what comes before the pruned segment."""

    key: str
    """``""`` before any summary, else the id of the summary in use."""
    start: int
    """History index of the segment's first message (the leading system ones, or the boundary)."""
    base_tokens: int
    """Uncalibrated tokens ahead of the segment: fixed, leading system, summary, rescued."""
    shift: int
    """The model input position of history index ``i`` is ``i + shift``."""


@dataclass(frozen=True, slots=True)
class Epochs:
    """The derived pruning state of one phase over a history (an immutable snapshot)."""

    phase: Phase
    checked: int
    """Length of the history this was derived over."""
    digest: str
    """Prefix hash of ``messages[:checked]``: the cache is extended only on that history."""
    first_user: int | None
    candidates: tuple[int, ...]
    """Segment indexes of large tool results of prunable tools (eligible but for position)."""
    crossings: tuple[int, ...] = ()
    levels: Mapping[int, int] = field(default_factory=dict)
    copies: Mapping[int, tuple[BaseMessage, int]] = field(default_factory=dict)
    """Treated messages: the model input copy and its token count."""
    saved: int = 0
    """Uncalibrated tokens the treatments save."""
    failed_at: int | None = None
    """The crossing at which even full escalation stayed at the trigger."""


def _token_limit(runtime: CompactionRuntime) -> float | None:
    limits = [t.limit for t in runtime.thresholds if t.kind == "tokens"]
    return min(limits) if limits else None


@dataclass
class _Crossing:
    """Treatments decided at one crossing (updates the dicts it is given)."""

    runtime: CompactionRuntime
    messages: Sequence[BaseMessage]
    scan: HistoryScan
    levels: dict[int, int]
    copies: dict[int, tuple[BaseMessage, int]]
    saved: int
    unpruned: int
    """The context at the crossing before any treatment."""

    @property
    def context(self) -> int:
        return self.unpruned - self.saved

    def raise_to(self, index: int, level: int) -> None:
        """Treat ``index`` at ``level`` unless it already is, or it would save nothing."""
        if level <= self.levels.get(index, KEEP):
            return
        copy = pruned_copy(self.messages[index], level, self.runtime.config.pruning)
        tokens = self.runtime.counter([copy])
        current = self.copies[index][1] if index in self.copies else self.scan.tokens[index]
        if tokens >= current:
            return
        self.levels[index] = level
        self.copies[index] = (copy, tokens)
        self.saved += current - tokens

    def treat(self, eligible: Sequence[int], size: int, shift: int, target: float) -> None:
        """Age formula at ``size``, then escalate oldest first until under ``target``."""
        pruning = self.runtime.config.pruning
        chars = {i: prunable_chars(self.messages[i]) for i in eligible}
        for index in eligible:
            self.raise_to(index, age_level(index + shift, size, chars[index], pruning))
        hard = pruning.hard_clear.enabled
        for index in eligible:  # untreated -> soft trim (or hard clear when too short to trim)
            if self.context < target:
                return
            if self.levels.get(index, KEEP) == KEEP:
                level = SOFT if chars[index] > pruning.soft_trim.max_chars else HARD
                if level == SOFT or hard:
                    self.raise_to(index, level)
        for index in eligible:  # soft trim -> hard clear
            if self.context < target or not hard:
                return
            self.raise_to(index, HARD)


def derive_epochs(
    runtime: CompactionRuntime,
    messages: Sequence[BaseMessage],
    scan: HistoryScan,
    phase: Phase,
    previous: Epochs | None = None,
) -> Epochs:
    """The crossings and treatments of ``phase`` over ``messages``.

    ``previous``, when given, must have been derived over a prefix of ``messages``: the
    derivation only depends on the history up to each crossing, so extending it gives exactly
    what deriving from scratch would.
    """
    if previous is not None and previous.failed_at is not None:
        return previous  # final: nothing after the failure matters
    pruning = runtime.config.pruning
    size = len(messages)
    if previous is None:
        previous = Epochs(phase, phase.start, "", first_user_index(messages, 0), ())
    checked, first_user = previous.checked, previous.first_user
    if first_user is None:
        first_user = first_user_index(messages, checked)
    new = tuple(i for i in range(checked, size) if is_candidate(messages, i, pruning))
    candidates = previous.candidates + new
    crossings = list(previous.crossings)
    levels, copies, saved = previous.levels, previous.copies, previous.saved
    failed_at = None
    limit = _token_limit(runtime)
    cumulative, start = scan.cumulative, phase.start
    last = crossings[-1] if crossings else start
    while limit is not None:
        need = limit - phase.base_tokens + cumulative[start] + saved
        point = bisect_left(cumulative, need, last + 1, size + 1)
        if point > size:
            break
        unpruned = phase.base_tokens + scan.tokens_between(start, point)
        crossing = _Crossing(runtime, messages, scan, dict(levels), dict(copies), saved, unpruned)
        if first_user is not None and first_user < point:
            low = max(start, first_user + 1)
            high = protected_from(messages, start, point, pruning.keep_last_assistants)
            eligible = candidates[bisect_left(candidates, low) : bisect_left(candidates, high)]
            target = runtime.config.headroom_ratio * limit
            crossing.treat(eligible, point + phase.shift, phase.shift, target)
        levels, copies, saved = crossing.levels, crossing.copies, crossing.saved
        crossings.append(point)
        last = point
        if crossing.context >= limit:
            failed_at = point
            break
    return Epochs(
        phase=phase,
        checked=size,
        digest=scan.prefix_hash(size),
        first_user=first_user,
        candidates=candidates,
        crossings=tuple(crossings),
        levels=levels,
        copies=copies,
        saved=saved,
        failed_at=failed_at,
    )


def _epochs(runtime: CompactionRuntime, work: CallWork, phase: Phase) -> Epochs:
    """`derive_epochs` for this call, extending this runtime's cached derivation when it can."""
    key = (*work.key, phase.key)
    cached: Epochs | None = runtime.prune_epochs.get(key)
    size = len(work.messages)
    if cached is not None and (
        cached.phase != phase
        or cached.checked > size
        or work.scan.prefix_hash(cached.checked) != cached.digest
    ):
        cached = None
    if cached is not None and (cached.checked == size or cached.failed_at is not None):
        return cached
    epochs = derive_epochs(runtime, work.messages, work.scan, phase, cached)
    runtime.remember(runtime.prune_epochs, key, epochs)
    return epochs


def _whole_history(runtime: CompactionRuntime, work: CallWork) -> Phase:
    lead = work.lead
    return Phase("", lead, runtime.fixed_tokens + work.scan.cumulative[lead], 0)


def _summary_phase(
    runtime: CompactionRuntime, work: CallWork, record: SummaryRecord, rescued: Sequence[int]
) -> Phase:
    _, summary_tokens = runtime.summary_message(record)
    scan, lead, boundary = work.scan, work.lead, record.covered_messages
    base = runtime.fixed_tokens + scan.cumulative[lead] + summary_tokens
    base += sum(scan.tokens[i] for i in rescued)
    return Phase(record.id, boundary, base, lead + 1 + len(rescued) - boundary)


def _pruned_triggers(
    runtime: CompactionRuntime, work: CallWork, phase: Phase, count: int, refine: int
) -> tuple[str, ...]:
    """Triggers the pruned context of ``phase`` fires (uncalibrated), or the budget it exceeds."""
    epochs = _epochs(runtime, work, phase)
    raw = phase.base_tokens + work.scan.tokens_between(phase.start, len(work.messages))
    raw -= epochs.saved
    fired = fired_triggers(runtime.thresholds, raw, count, refine)
    budget = runtime.budget
    if not fired and budget is not None and calibrated(raw, work.ratio) > budget:
        return (f"budget>{budget}",)
    return fired


def _refine(runtime: CompactionRuntime, work: CallWork, start: int) -> int:
    """Messages outside the keep window, counted on the originals (as measure does)."""
    if not runtime.needs_refine_count:
        return 0
    keep, window = runtime.config.keep, runtime.window
    return find_keep_start(work.messages, work.scan, start, keep, window) - start


def pruned_summary_triggers(
    runtime: CompactionRuntime, work: CallWork, record: SummaryRecord, rescued: Sequence[int]
) -> tuple[str, ...]:
    """Triggers the context fires with ``record`` in use and its kept messages pruned."""
    boundary = record.covered_messages
    count = work.lead + 1 + len(rescued) + len(work.messages) - boundary
    phase = _summary_phase(runtime, work, record, rescued)
    return _pruned_triggers(runtime, work, phase, count, _refine(runtime, work, boundary))


def _use(work: CallWork, epochs: Epochs) -> None:
    """Hand assemble the model input copy of a phase (None: nothing pruned)."""
    copies = epochs.copies
    work.pruned_count = len(copies)
    work.pruned_tokens = {index: tokens for index, (_, tokens) in copies.items()}
    if not copies:
        work.model_messages = None
        return
    model_messages: list[BaseMessage] = list(work.messages)
    for index, (copy, _) in copies.items():
        model_messages[index] = copy
    work.model_messages = model_messages


def apply_pruning(runtime: CompactionRuntime, work: CallWork) -> None:
    """Prune for the summary assemble will use (``work.outcome``), or for none."""
    if not runtime.config.pruning.enabled:
        return
    outcome: Any = work.outcome
    record: SummaryRecord | None = outcome.record if outcome is not None else None
    if record is None:
        phase = _whole_history(runtime, work)
    else:
        from .partition import rescued_positions  # partition imports this module

        phase = _summary_phase(
            runtime, work, record, rescued_positions(runtime, record, work.messages)
        )
    _use(work, _epochs(runtime, work, phase))


def prune(runtime: CompactionRuntime, work: CallWork) -> bool:
    """Prune the whole history's model input copy; True when it now fits (no summary needed)."""
    if not runtime.config.pruning.enabled:
        return False
    phase = _whole_history(runtime, work)
    refine = _refine(runtime, work, work.lead)
    if _pruned_triggers(runtime, work, phase, len(work.messages), refine):
        return False
    _use(work, _epochs(runtime, work, phase))
    return True
