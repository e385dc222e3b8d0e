"""What one compaction call did: the ``compaction`` output and its context-usage gauge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CompactionAction",
    "CompactionReport",
    "ContextGauge",
    "IntegrityReport",
    "SummaryUsage",
]

CompactionAction = Literal["passthrough", "reused", "summarized", "pruned", "failed"]


@dataclass(frozen=True, slots=True)
class ContextGauge:
    """Context usage as LibreChat's gauge shows it."""

    input_tokens: int
    """Tokens of the model input this call produced (system prompt and tools included)."""
    context_window: int | None
    """The model's maximum input tokens, when known."""
    budget: int | None
    """``context_window x (1 - reserve_ratio)``, when the window is known."""
    baseline_tokens: int
    """Tokens of the summary plus everything after its boundary (the whole input without one)."""

    @property
    def usage(self) -> float | None:
        """Share of the budget this input uses, when a budget is known."""
        return self.input_tokens / self.budget if self.budget else None


@dataclass(frozen=True, slots=True)
class SummaryUsage:
    """What the summary calls of one summary cost, as the summarizer reported it.

    A field is None when no call reported it: never 0 for "not reported".
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    """Input tokens the provider served from its prompt cache (part of ``input_tokens``)."""


@dataclass(frozen=True, slots=True)
class IntegrityReport:
    """What the identifier check of a new summary found (DESIGN 6.13)."""

    identifiers: int
    """Distinct identifiers the summary covers: those of the messages it newly covers, and
    the previous summary's again (so one an update dropped is checked like a new one)."""
    kept: int
    """Of those, how many the summary's own text holds verbatim."""
    appended: int
    """Lines written to the ledger after the summary: missing identifiers and artifacts."""
    dropped: int
    """Missing identifiers and artifacts that did not fit ``integrity.ledger_tokens`` (total
    recall still finds them when it is on)."""
    artifacts: int
    """Distinct artifacts of the tool trail (one per tool and identifying argument)."""
    repaired: bool = False
    """A repair call was made (``integrity.repair``): the first reply kept too few of the
    user's identifiers."""


@dataclass(frozen=True, slots=True)
class CompactionReport:
    """What one call of the compaction pipeline did, for logs, UIs and tests."""

    action: CompactionAction
    """``passthrough``: the conversation is sent unchanged (no trigger fired, or one fired but
    nothing could be evicted or shortened); ``reused``: a stored summary is in use, served
    without a model call; ``summarized``: a new summary was made and is in use; ``pruned``:
    pruning (or shortening the newest unit's tool results) alone made the context fit;
    ``failed``: summarizing failed, the store was unavailable, or the input still exceeds
    the budget (see ``over_budget``), and the best input that could be made was sent."""
    tokens_before: int
    """Tokens of the whole conversation as the agent would send it."""
    tokens_after: int
    """Tokens of the model input produced."""
    gauge: ContextGauge
    triggers_fired: tuple[str, ...] = ()
    """The triggers that fired on the whole conversation, as ``type>=value`` labels."""
    summary_id: str | None = None
    summary_version: int | None = None
    summarized_messages: int = 0
    """Messages covered by the summary in use (its prefix, leading system messages excluded)."""
    summary_calls: int = 0
    """Summary model calls made by this call (chunks included)."""
    pruned_count: int = 0
    """Tool results trimmed or cleared in the model input."""
    media_replaced: int = 0
    """Media blocks older than ``pruning.media_keep_last`` user turns replaced by a text
    reference in the model input. It applies at any context size: a call under every trigger
    that replaced some reports ``pruned``."""
    rescued_count: int = 0
    """Messages before the summary boundary kept verbatim: the latest user request, skill
    files, pinned units and user turns kept by ``keep_user_messages``."""
    shortened_count: int = 0
    """Messages shortened (head and tail kept): to fit the summary calls allowed, or tool
    results of the newest unit in the model input when it alone exceeded the budget."""
    over_trim_count: int = 0
    """Messages sent in the last summary call beyond ``trim_tokens_to_summarize``, because
    ``max_summary_chunks`` calls could not hold them even shortened."""
    dropped_count: int = 0
    """Messages left out of the model input by the failure fallback."""
    repaired_pairs: int = 0
    """Tool-pair repairs made by the final check (zero on any valid history)."""
    over_budget: bool = False
    """The model input still exceeds the budget: nothing more could be evicted, and the
    newest unit does not fit even with its tool results shortened (beside the summary in use,
    see ``summary_over_budget``). The call goes ahead (the provider may refuse it);
    ``action`` is ``failed`` and an event says so."""
    summary_over_budget: bool = False
    """With ``over_budget``: the summary in use is what does not fit (it alone exceeds the
    budget, or the input would fit without it), not the newest turn."""
    summary_cut: bool = False
    """A summary reply of this call was cut at ``max_summary_tokens``: the provider stopped it
    there (it was then trimmed to its last complete sentence), or it was over the cap by more
    than 10% and was cut to it, at a line or sentence end, before it was stored."""
    summary_usage: SummaryUsage | None = None
    """What this call's summary calls cost (summed over chunks and models), as the summarizer
    reported it; None when no summary call ran (a reuse, a pass-through)."""
    pinned_count: int = 0
    """Pinned messages (``additional_kwargs["pinned"]`` or ``SummaryStore.pin_messages``),
    with their tool pairs, kept verbatim after the summary instead of being summarized."""
    unpinned_over_budget: int = 0
    """Pinned messages that did not fit ``pin_budget`` and went to the summary."""
    error: str | None = None
    """Why the call failed, when ``action`` is ``failed``."""
    integrity: IntegrityReport | None = None
    """The identifier check of the summary this call made; None when it made none (a reuse,
    a pass-through, a failure) or ``integrity.enabled`` is false."""
