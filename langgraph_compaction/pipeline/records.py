"""The frozen records one call's nodes hand each other, and the working state that holds them.

Each node reads the records it needs and returns new ones under typed untracked keys
(``measured``, ``decision``, ``outcome``); nothing is mutated across nodes, and nothing of it
is checkpointed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal

from langchain_core.messages import BaseMessage
from langgraph.channels.untracked_value import UntrackedValue
from typing_extensions import TypedDict

from langgraph_compaction.config.run_control import NO_CONTROL, RunControl
from langgraph_compaction.content.history_scan import HistoryScan
from langgraph_compaction.pipeline.report import IntegrityReport, SummaryUsage
from langgraph_compaction.pipeline.state import CompactionState
from langgraph_compaction.store import SummaryRecord, ThreadState

__all__ = [
    "Decision",
    "DecisionInput",
    "Epochs",
    "Measured",
    "MeasuredInput",
    "Outcome",
    "OutcomeAction",
    "OutcomeInput",
    "Partition",
    "Phase",
    "Plan",
    "Reuse",
    "WorkingState",
]


@dataclass(frozen=True, slots=True)
class Measured:
    """What measure found: the call's thread, its history's scan, and the triggers fired."""

    thread_id: str
    key: tuple[str, str]
    """``(namespace, thread_id)``: the key of every per-thread cache."""
    epoch: int
    """The store's deletion epoch of the thread when this call started."""
    messages: Sequence[BaseMessage]
    scan: HistoryScan
    lead: int
    """How many leading system messages the history has (they always stay)."""
    ratio: float | None
    """The thread's token calibration ratio, when known."""
    tokens_before: int
    fired: tuple[str, ...]
    near: bool = False
    """No trigger fired, but the context reached ``precompact_ratio`` of one."""
    control: RunControl = NO_CONTROL
    """What the caller asked of this call (``configurable.compaction``, a store request)."""
    pins: frozenset[str] = frozenset()
    """Ids of the thread's messages pinned in the store (``SummaryStore.pin_messages``)."""
    started_ns: int = 0
    """``time.time_ns()`` when measure began: the start of the call's trace span."""


@dataclass(frozen=True, slots=True)
class Reuse:
    """Serve a stored summary: its prefix matches and the compressed context fits."""

    record: SummaryRecord


@dataclass(frozen=True, slots=True)
class Partition:
    """A new summary: ``messages[:cutoff]`` becomes its prefix."""

    cutoff: int
    rescued: tuple[int, ...]
    """Indexes before the cutoff kept verbatim, in order."""
    evicted: tuple[int, ...]
    """Indexes the summarizer must see now (newly evicted, and folded-in former rescues)."""
    previous: SummaryRecord | None
    prefix_hash: str
    boundary_message_id: str


Plan = Reuse | Partition | None
"""None: nothing more can be evicted."""

OutcomeAction = Literal["reused", "summarized", "failed", "pruned", "kept"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the call settled on: the summary to assemble with, if any, and what it cost."""

    action: OutcomeAction
    """``pruned``: pruning alone made it fit; ``kept``: nothing could be evicted and no
    summary applies (assemble shortens what it must)."""
    record: SummaryRecord | None
    calls: int = 0
    shortened: int = 0
    over_trim: int = 0
    error: str | None = None
    summary_cut: bool = False
    """A summary reply was cut at ``max_summary_tokens`` (by the provider, or by the cap)."""
    usage: SummaryUsage | None = None
    """What this call's summary calls cost as reported (None: no summary call ran)."""
    integrity: IntegrityReport | None = None
    """The identifier check of the summary this call stored (None: none was stored)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What partition decided from the store: reuse, or what a new summary evicts."""

    thread_state: ThreadState | None
    matching: SummaryRecord | None
    """The newest stored summary whose prefix still matches this history."""
    plan: Plan
    precompact_from: SummaryRecord | None = None
    """The summary in use when the context nears a trigger: prepare the next one from it."""
    outcome: Outcome | None = None
    """Already settled (the store failed): summarize passes it on."""

    @property
    def generation(self) -> int | None:
        return self.thread_state.generation if self.thread_state is not None else None


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


class WorkingState(CompactionState, total=False):
    """The subgraph's internal state: its schema plus one call's records."""

    measured: Annotated[Measured, UntrackedValue]
    decision: Annotated[Decision, UntrackedValue]
    outcome: Annotated[Outcome, UntrackedValue]


class MeasuredInput(TypedDict):
    """What prune and partition read."""

    measured: Annotated[Measured, UntrackedValue]


class DecisionInput(MeasuredInput):
    """What summarize reads."""

    decision: Annotated[Decision, UntrackedValue]


class OutcomeInput(MeasuredInput):
    """What assemble reads."""

    outcome: Annotated[Outcome, UntrackedValue]
