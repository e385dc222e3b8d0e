"""Pruning epochs: LibreChat's rule applied only at trigger crossings, frozen in between.

Evaluated on every call, the age formula would re-treat messages as they drift one position
older per turn, breaking prompt caches. So treatments change only at a *crossing* and are
frozen in between, when the input grows by appending. Crossings are derived from the history
alone, replaying its cumulative token estimates: the first is the first prefix
``messages[:p]`` whose unpruned context reaches the smallest tokens trigger, the next the first
whose context with the current treatments reaches it again (binary searches). At a crossing
the age formula is evaluated at ``N = p``, merged with the earlier treatments (a message is
never restored), then escalated oldest first (untreated -> soft -> hard) until the context is
below ``headroom_ratio`` x the trigger. If it still reaches the trigger, the phase *fails*
there: a summary takes over (made from the originals). Any process derives the same crossings,
and each graph caches the derivation per thread and extends it, so a steady-state call costs
O(new messages).

Phases tie pruning to summaries. Before any summary the whole history is one phase. With a
summary in use the input is ``system + summary + rescued + messages[boundary:]``; that
summary's phase prunes only the messages after its boundary, counts the summary and rescued
messages in its context, takes positions from the model input, and replays its crossings from
the boundary.

Old media (``pruning.media_keep_last``, :mod:`.old_media`) are a layer of their own under the
epochs: replaced per user turn whether pruning is enabled or not, and at any context size
(setting the key is enough). A message that pruning treats keeps its pruned copy (which has no
media left); any other old media message is sent as its media-free copy, and that copy is what
counts toward the context, so it can spare a summary. Crossings are still found on the
originals, a conservative choice that keeps them a function of each prefix alone. Pinned
messages (:mod:`.pins`) are never treated, by either layer, wherever they sit (kept, or rescued
after the summary). Store pins come from outside the history, so a derivation is cached under
the pin set it was made with: the phase's cache key carries its digest, and a pin or unpin
derives the thread's epochs afresh (the same history and pins, the same bytes).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from langgraph_compaction.config.triggers import find_keep_start, fired_triggers
from langgraph_compaction.content.history_scan import HistoryScan
from langgraph_compaction.content.tokens import calibrated
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.records import Epochs, Measured, Phase
from langgraph_compaction.pipeline.remembered import OldMedia
from langgraph_compaction.pruning.old_media import derive_old_media
from langgraph_compaction.pruning.pins import in_pinned_unit, pins_digest
from langgraph_compaction.pruning.rules import (
    HARD,
    KEEP,
    SOFT,
    age_levels,
    first_user_index,
    is_candidate,
    protected_from,
    prunable_chars,
    pruned_copy,
)
from langgraph_compaction.store import SummaryRecord

__all__ = [
    "PrunedInput",
    "derive_epochs",
    "epochs_for",
    "input_shrinks",
    "old_media_for",
    "old_media_input",
    "pruned_input",
    "pruned_triggers",
    "summary_phase",
    "whole_history_phase",
]


@dataclass(frozen=True, slots=True)
class PrunedInput:
    """The model input copy of one phase: treated messages by history index."""

    copies: Mapping[int, tuple[BaseMessage, int]] = field(default_factory=dict)
    count: int = 0
    """Tool results pruning trimmed or cleared."""
    media_replaced: int = 0
    """Media blocks replaced by a reference (``pruning.media_keep_last``)."""

    def tokens(self, index: int, original: int) -> int:
        copy = self.copies.get(index)
        return copy[1] if copy is not None else original

    def apply(self, messages: Sequence[BaseMessage]) -> Sequence[BaseMessage]:
        """The history with the treated messages replaced (the same list when none is)."""
        if not self.copies:
            return messages
        copy = list(messages)
        for index, (message, _) in self.copies.items():
            copy[index] = message
        return copy


@dataclass
class _Crossing:
    """Treatments decided at one crossing (updates the dicts it is given)."""

    pipe: Pipeline
    messages: Sequence[BaseMessage]
    scan: HistoryScan
    levels: dict[int, int]
    copies: dict[int, tuple[BaseMessage, int]]
    saved: int
    """What the treatments save on the originals."""
    unpruned: int
    """The context at the crossing before any treatment (old media as their copies)."""
    media_saving: Callable[[int], int]
    """What an untreated message's media copy saves at this crossing (0: none)."""

    @property
    def context(self) -> int:
        return self.unpruned - self.saved

    def raise_to(self, index: int, level: int) -> None:
        """Treat ``index`` at ``level`` unless it already is, or it would save nothing."""
        if level <= self.levels.get(index, KEEP):
            return
        copy = pruned_copy(self.messages[index], level, self.pipe.settings.config.pruning)
        tokens = self.pipe.settings.counter([copy])
        if index in self.copies:
            current = sent = self.copies[index][1]
        else:  # counted so far as its media copy, if it has one
            current = self.scan.token(index)
            sent = current - self.media_saving(index)
        if tokens >= sent:
            return
        if index not in self.copies:
            self.unpruned += current - sent  # its media copy no longer applies
        self.levels[index] = level
        self.copies[index] = (copy, tokens)
        self.saved += current - tokens

    def treat(self, eligible: Sequence[int], size: int, shift: int, target: float) -> None:
        """Age formula at ``size``, then escalate oldest first until under ``target``."""
        pruning = self.pipe.settings.config.pruning
        chars = {i: prunable_chars(self.messages[i]) for i in eligible}
        for index, level in age_levels(eligible, size, shift, chars, pruning).items():
            self.raise_to(index, level)
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
    pipe: Pipeline,
    messages: Sequence[BaseMessage],
    scan: HistoryScan,
    phase: Phase,
    previous: Epochs | None = None,
    media: OldMedia | None = None,
    pins: frozenset[str] = frozenset(),
) -> Epochs:
    """The crossings and treatments of ``phase`` over ``messages``.

    ``previous``, when given, must have been derived over a prefix of ``messages``: the
    derivation only depends on the history up to each crossing, so extending it gives exactly
    what deriving from scratch would. ``media``, the old media of ``messages``, counts each
    prefix's old media as their copies (in a prefix, the media older than its last user turns).
    ``pins``, the ids pinned in the store: pinned messages are never candidates (``previous``
    must have been derived with the same pins).
    """
    if previous is not None and previous.failed_at is not None:
        return previous  # final: nothing after the failure matters
    settings = pipe.settings
    pruning = settings.config.pruning
    size = len(messages)
    if previous is None:
        previous = Epochs(phase, phase.start, "", first_user_index(messages, 0), ())
    checked, first_user = previous.checked, previous.first_user
    if first_user is None:
        first_user = first_user_index(messages, checked)
    new = tuple(i for i in range(checked, size) if is_candidate(messages, i, pruning, pins))
    candidates = previous.candidates + new
    crossings = list(previous.crossings)
    levels, copies, saved = previous.levels, previous.copies, previous.saved
    failed_at = None
    limit = settings.token_limit
    start = phase.start
    last = max(crossings[-1] if crossings else start, checked)  # none before: derived so
    while limit is not None:
        need = limit - phase.base_tokens + scan.prefix(start) + saved
        point = _first_reaching(scan, media, start, copies, need, last + 1, size + 1)
        if point > size:
            break
        unpruned = phase.base_tokens + scan.tokens_between(start, point)

        def media_saving(index: int, end: int = point) -> int:
            return media.saving_at(index, end) if media is not None and index >= start else 0

        if media is not None:
            unpruned -= media.saved_between(start, media.cutoff_at(point), copies)
        crossing = _Crossing(
            pipe, messages, scan, dict(levels), dict(copies), saved, unpruned, media_saving
        )
        if first_user is not None and first_user < point:
            low = max(start, first_user + 1)
            high = protected_from(messages, start, point, pruning.keep_last_assistants)
            eligible = candidates[bisect_left(candidates, low) : bisect_left(candidates, high)]
            target = settings.config.headroom_ratio * limit
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


def _first_reaching(
    scan: HistoryScan,
    media: OldMedia | None,
    start: int,
    treated: Mapping[int, object],
    need: float,
    low: int,
    high: int,
) -> int:
    """The first prefix end in ``[low, high)`` whose tokens past what old media save (in that
    prefix, for the untreated messages from ``start``) reach ``need``, else ``high``."""
    if media is None:
        return scan.first_reaching(need, low, high)
    for end in [*media.breaks(low, high), high]:  # old media are the same within each stretch
        saved = media.saved_between(start, media.cutoff_at(low), treated)
        point = scan.first_reaching(need + saved, low, end)
        if point < end:
            return point
        low = end
    return high


def epochs_for(pipe: Pipeline, measured: Measured, phase: Phase) -> Epochs:
    """`derive_epochs` for this call, extending the graph's cached derivation when it can."""
    digest = pins_digest(measured.pins)  # another pin set: another derivation
    key = (*measured.key, f"{phase.key}|{digest}" if digest else phase.key)
    cached = pipe.memory.epochs.get(key)
    size = len(measured.messages)
    if cached is not None and (
        cached.phase != phase
        or cached.checked > size
        or measured.scan.prefix_hash(cached.checked) != cached.digest
    ):
        cached = None
    if cached is not None and (cached.checked == size or cached.failed_at is not None):
        return cached
    media = old_media_for(pipe, measured)
    epochs = derive_epochs(
        pipe, measured.messages, measured.scan, phase, cached, media, measured.pins
    )
    pipe.memory.epochs.put(key, epochs)
    return epochs


def whole_history_phase(pipe: Pipeline, measured: Measured) -> Phase:
    lead = measured.lead
    return Phase("", lead, pipe.settings.fixed_tokens + measured.scan.prefix(lead), 0)


def summary_phase(
    pipe: Pipeline, measured: Measured, record: SummaryRecord, rescued: Sequence[int]
) -> Phase:
    _, summary_tokens = pipe.memory.summary_message(record, pipe.settings.recall_tool)
    scan, lead, boundary = measured.scan, measured.lead, record.covered_messages
    base = pipe.settings.fixed_tokens + scan.prefix(lead) + summary_tokens
    base += sum(map(scan.token, rescued))
    return Phase(record.id, boundary, base, lead + 1 + len(rescued) - boundary)


def refine_count(pipe: Pipeline, measured: Measured, start: int) -> int:
    """Messages outside the keep window, counted on the originals (as measure does)."""
    settings = pipe.settings
    if not settings.needs_refine_count:
        return 0
    keep, window = settings.config.keep, settings.window
    return find_keep_start(measured.messages, measured.scan, start, keep, window) - start


def pruned_triggers(
    pipe: Pipeline, measured: Measured, phase: Phase, count: int, refine: int
) -> tuple[str, ...]:
    """Triggers the pruned context of ``phase`` fires (uncalibrated), or the budget it exceeds.

    Both layers count: the pruning treatments (when enabled) and the old media replaced.
    """
    scan = measured.scan
    raw = phase.base_tokens + scan.tokens_between(phase.start, len(measured.messages))
    treated: Mapping[int, object] = {}
    if pipe.settings.config.pruning.enabled:
        epochs = epochs_for(pipe, measured, phase)
        raw -= epochs.saved
        treated = epochs.copies
    media = old_media_for(pipe, measured)
    if media is not None:
        raw -= media.saved(phase.start, treated)
    settings = pipe.settings
    fired = fired_triggers(settings.thresholds, raw, count, refine)
    budget = settings.budget
    if not fired and budget is not None and calibrated(raw, measured.ratio) > budget:
        return (f"budget>{budget}",)
    return fired


def pruned_input(
    pipe: Pipeline, measured: Measured, phase: Phase, rescued: Sequence[int] = ()
) -> PrunedInput:
    """The model input copy of ``phase`` and of its ``rescued`` messages: the pruning
    treatments when enabled, and every other old media message as its media-free copy."""
    copies: dict[int, tuple[BaseMessage, int]] = {}
    if pipe.settings.config.pruning.enabled:
        copies.update(epochs_for(pipe, measured, phase).copies)
    pruned, replaced = len(copies), 0
    media = old_media_for(pipe, measured)
    if media is not None:
        wanted = set(rescued)
        for index, copy in media.copies.items():
            if index not in copies and (index >= phase.start or index in wanted):
                copies[index] = (copy.message, copy.tokens)
                replaced += copy.blocks
    return PrunedInput(copies, pruned, replaced)


def input_shrinks(pipe: Pipeline) -> bool:
    """Whether the model input copy can be smaller than the history: pruning, or old media."""
    pruning = pipe.settings.config.pruning
    return pruning.enabled or pruning.media_keep_last is not None


def old_media_for(pipe: Pipeline, measured: Measured) -> OldMedia | None:
    """The old media of this call's history (None when ``media_keep_last`` is off), extending
    the graph's cached derivation when the history grew by appending."""
    keep = pipe.settings.config.pruning.media_keep_last
    if keep is None:
        return None
    messages, scan = measured.messages, measured.scan
    cached = pipe.memory.media.get(measured.key)
    size = len(messages)
    if cached is not None and (
        cached.pins != measured.pins
        or cached.checked > size
        or scan.prefix_hash(cached.checked) != cached.digest
    ):
        cached = None
    if cached is not None and cached.checked == size:
        return cached
    counter = pipe.settings.counter
    pins = measured.pins
    media = derive_old_media(
        messages,
        measured.lead,
        keep,
        scan.prefix_hash(size),
        lambda copy: counter([copy]),
        scan.token,
        cached,
        lambda index: in_pinned_unit(messages, index, pins),
        pins,
    )
    pipe.memory.media.put(measured.key, media)
    return media


def old_media_input(
    pipe: Pipeline, measured: Measured
) -> tuple[list[BaseMessage], int, int] | None:
    """The history with its old media replaced, the tokens that saves (uncalibrated) and the
    blocks replaced; None when none is old (or ``media_keep_last`` is off)."""
    media = old_media_for(pipe, measured)
    if media is None or not media.copies:
        return None
    sent = list(measured.messages)
    for index, copy in media.copies.items():
        sent[index] = copy.message
    return sent, media.saved(0, {}), sum(copy.blocks for copy in media.copies.values())
