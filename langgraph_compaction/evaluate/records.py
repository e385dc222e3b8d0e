"""The evaluation's frozen records: what was read, what each call sent, where each item ended,
what the probes found, what it cost. Every other module of ``evaluate`` passes these along;
``as_json`` turns any of them into the ``--json`` output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import BaseMessage

__all__ = [
    "PROBE_KINDS",
    "Bill",
    "CallFigures",
    "Compaction",
    "Conversation",
    "ConversationResult",
    "Evaluation",
    "EvaluationInputError",
    "ItemFate",
    "Place",
    "Probe",
    "ProbeKind",
    "as_json",
]

ProbeKind = Literal["fact", "artifact", "next_step", "decision"]
PROBE_KINDS: tuple[ProbeKind, ...] = ("fact", "artifact", "next_step", "decision")
"""Factory's four kinds: a fact stated, an artifact, the next step, a decision and its reason."""

Place = Literal["model input", "summary", "recall", "lost"]
"""Where an identifier or artifact is at the end, best first: in a verbatim message of the last
model input, in the summary (prose or ledger), found by total recall, or nowhere."""


class EvaluationInputError(Exception):
    """Bad input: the message is one line naming the file line, thread or model at fault."""


@dataclass(frozen=True)
class Conversation:
    """One conversation to replay."""

    name: str
    """Where it came from: ``FILE:LINE``, ``FILE[INDEX]`` or ``thread T``."""
    messages: tuple[BaseMessage, ...]


@dataclass(frozen=True)
class Compaction:
    """A call that stored a new summary: what it evicted and what the model got instead."""

    call: int
    """Index of the call in ``ConversationResult.calls``."""
    version: int
    start: int
    """The evicted span is ``messages[start:end]`` of the conversation."""
    end: int
    model_input: tuple[BaseMessage, ...]
    """``llm_input_messages`` of that call (kept for the probes, not written to JSON)."""
    history: tuple[BaseMessage, ...]
    """The whole history at that call: the model input without compaction."""


@dataclass(frozen=True)
class CallFigures:
    """One model call of the replay."""

    index: int
    messages: int
    """Length of the history at this call."""
    tokens_without: int
    """The whole history as the model would get it without compaction."""
    tokens_with: int
    """``llm_input_messages`` as counted by the same counter."""
    action: str
    summary_version: int | None
    summary_calls: int
    summary_input_tokens: int
    summary_output_tokens: int
    output_tokens: int
    """The agent's reply after this call in the conversation (the same with and without)."""
    cached_with: int
    """Tokens of the compacted input read from the provider's prompt cache."""
    cache_written_with: int
    cached_without: int
    cache_written_without: int
    pair_violations: int
    """Breaches of the tool-pair rule in the compacted input."""
    integrity_identifiers: int | None = None
    integrity_kept: int | None = None
    integrity_appended: int | None = None
    integrity_dropped: int | None = None
    integrity_artifacts: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class ItemFate:
    """An identifier or artifact mentioned in the conversation, and where it is at the end."""

    kind: Literal["identifier", "artifact"]
    text: str
    """The identifier, or ``tool target`` for an artifact."""
    place: Place


@dataclass(frozen=True)
class Probe:
    """One probe question on one compaction, answered with and without compaction, graded."""

    call: int
    kind: ProbeKind
    question: str
    expected: str
    """The answer the evicted span gives (written with the question)."""
    answer_compacted: str
    answer_full: str
    right_compacted: bool
    right_full: bool
    comment_compacted: str = ""
    comment_full: str = ""


@dataclass(frozen=True)
class Bill:
    """Dollars for one conversation, with or without compaction, under prompt caching."""

    agent: float
    """The agent's calls: input (cache reads and writes priced as such) and output."""
    summarizer: float
    """The summary calls (zero without compaction)."""

    @property
    def total(self) -> float:
        return self.agent + self.summarizer


@dataclass(frozen=True)
class ConversationResult:
    """Everything measured on one conversation."""

    name: str
    calls: tuple[CallFigures, ...]
    compactions: tuple[Compaction, ...]
    fates: tuple[ItemFate, ...]
    bill_with: Bill
    bill_without: Bill
    probes: tuple[Probe, ...] = ()
    unprobed: tuple[str, ...] = ()
    """Compactions the judge could not write questions for, with why."""
    seconds: float = 0.0

    @property
    def tokens_with(self) -> int:
        return sum(c.tokens_with for c in self.calls)

    @property
    def tokens_without(self) -> int:
        return sum(c.tokens_without for c in self.calls)

    @property
    def peak_with(self) -> int:
        return max((c.tokens_with for c in self.calls), default=0)

    @property
    def peak_without(self) -> int:
        return max((c.tokens_without for c in self.calls), default=0)

    @property
    def summary_calls(self) -> int:
        return sum(c.summary_calls for c in self.calls)

    @property
    def pair_violations(self) -> int:
        return sum(c.pair_violations for c in self.calls)

    def places(self, kind: Literal["identifier", "artifact"]) -> dict[Place, int]:
        """How many items of ``kind`` ended in each place."""
        counts: dict[Place, int] = {"model input": 0, "summary": 0, "recall": 0, "lost": 0}
        for fate in self.fates:
            if fate.kind == kind:
                counts[fate.place] += 1
        return counts

    def probe_share(self, *, compacted: bool) -> float | None:
        """Share of the probes answered right (None without probes)."""
        if not self.probes:
            return None
        right = sum(p.right_compacted if compacted else p.right_full for p in self.probes)
        return right / len(self.probes)


@dataclass(frozen=True)
class Evaluation:
    """A whole run: its settings and one result per conversation."""

    settings: Mapping[str, Any]
    """Models, prices and configuration as given (for the reader of the JSON)."""
    results: tuple[ConversationResult, ...]
    seconds: float = 0.0


def as_json(value: Any) -> Any:
    """A record (or a tuple of them) as plain JSON data; messages are left out, totals added."""
    if isinstance(value, BaseMessage):
        raise TypeError("messages are not written to the evaluation's JSON")
    if isinstance(value, Compaction):
        return {"call": value.call, "version": value.version, "evicted": [value.start, value.end]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = {
            f.name: as_json(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not (isinstance(value, Conversation) and f.name == "messages")
        }
        if isinstance(value, Bill):
            data["total"] = value.total
        if isinstance(value, ConversationResult):
            data["totals"] = {
                "tokens_with": value.tokens_with,
                "tokens_without": value.tokens_without,
                "peak_with": value.peak_with,
                "peak_without": value.peak_without,
                "summary_calls": value.summary_calls,
                "pair_violations": value.pair_violations,
                "identifiers": value.places("identifier"),
                "artifacts": value.places("artifact"),
                "probes_right_compacted": value.probe_share(compacted=True),
                "probes_right_full": value.probe_share(compacted=False),
            }
        return data
    if isinstance(value, Mapping):
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [as_json(v) for v in value]
    return value
