"""Stored summaries against one history: which still match, what they rescue, whether they fit.

A summary covers a prefix of the conversation and matches as long as that prefix is unchanged
(boundary id and prefix hash). With it in place of its prefix, the context is
``system + summary + rescued + messages[boundary:]``; it can serve a call when that context
fires no trigger, as it stands or with the kept messages pruned (pruning comes first).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from langgraph_compaction.config.settings import emit
from langgraph_compaction.config.triggers import Threshold, find_keep_start, fired_triggers
from langgraph_compaction.content.history_scan import HistoryScan
from langgraph_compaction.content.tokens import calibrated
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.records import Measured, Outcome
from langgraph_compaction.pruning.epochs import (
    input_shrinks,
    pruned_triggers,
    refine_count,
    summary_phase,
)
from langgraph_compaction.store import SummaryRecord, storable

__all__ = [
    "compressed_context",
    "compressed_triggers",
    "find_matching_summaries",
    "held_summary",
    "message_key",
    "rescued_positions",
    "still_serves",
    "store_outage",
    "summary_fits",
]


def message_key(messages: Sequence[BaseMessage], index: int) -> str:
    """A message's id, or its position when it has none."""
    return messages[index].id or f"#{index}"


def find_matching_summaries(
    summaries: Sequence[SummaryRecord], messages: Sequence[BaseMessage], scan: HistoryScan
) -> list[SummaryRecord]:
    """The summaries (in the given order) whose prefix is still exactly the head of this history.

    Of several rows of one prefix only the newest version counts: a person's edit
    (``edit_summary``) supersedes the row it edits.
    """
    matching: list[SummaryRecord] = []
    newest: dict[str, SummaryRecord] = {}
    for record in summaries:
        seen = newest.get(record.prefix_hash)
        if seen is not None:
            if record.version > seen.version:  # given oldest first: the newer one replaces it
                matching[matching.index(seen)] = newest[record.prefix_hash] = record
            continue
        covered = record.covered_messages
        if covered > len(messages) or covered <= 0:
            continue
        if storable(messages[covered - 1].id or "") != record.boundary_message_id:
            continue
        if scan.matches(covered, record.prefix_hash):
            matching.append(record)
            newest[record.prefix_hash] = record
    return matching


def rescued_positions(
    pipe: Pipeline, record: SummaryRecord, messages: Sequence[BaseMessage]
) -> tuple[int, ...]:
    """Indexes of a summary's rescued messages (its prefix matched, so they are stable)."""

    def find() -> tuple[int, ...]:
        wanted = set(record.rescued_message_ids)
        if not wanted:
            return ()
        return tuple(
            i
            for i in range(record.covered_messages)
            if storable(message_key(messages, i)) in wanted
        )

    return pipe.memory.rescued(record, find)


def compressed_context(
    pipe: Pipeline,
    measured: Measured,
    kept_from: int,
    rescued: Sequence[int],
    summary_tokens: int,
) -> tuple[int, int, int]:
    """Tokens, message count and refine count of ``system + summary + rescued + kept``."""
    scan, lead, settings = measured.scan, measured.lead, pipe.settings
    raw = (
        settings.fixed_tokens
        + scan.prefix(lead)
        + summary_tokens
        + sum(map(scan.token, rescued))
        + scan.tokens_between(kept_from, len(measured.messages))
    )
    count = lead + 1 + len(rescued) + len(measured.messages) - kept_from
    refine = 0
    if settings.needs_refine_count:
        keep, window = settings.config.keep, settings.window
        refine = find_keep_start(measured.messages, scan, kept_from, keep, window) - kept_from
    return calibrated(raw, measured.ratio), count, refine


def compressed_triggers(
    pipe: Pipeline,
    measured: Measured,
    record: SummaryRecord,
    thresholds: Sequence[Threshold] | None = None,
) -> tuple[str, ...]:
    """Triggers the context fires with this summary in place of its prefix."""
    _, summary_tokens = pipe.memory.summary_message(record, pipe.settings.recall_tool)
    rescued = rescued_positions(pipe, record, measured.messages)
    tokens, count, refine = compressed_context(
        pipe, measured, record.covered_messages, rescued, summary_tokens
    )
    if thresholds is None:
        thresholds = pipe.settings.thresholds
    return fired_triggers(thresholds, tokens, count, refine)


def summary_fits(pipe: Pipeline, measured: Measured, record: SummaryRecord) -> bool:
    """Whether this summary can serve the call: its compressed context fires no trigger, as it
    stands or with the messages after its boundary pruned or their old media replaced
    (DESIGN 6.2: pruning comes first)."""
    if not compressed_triggers(pipe, measured, record):
        return True
    if not input_shrinks(pipe):
        return False
    rescued = rescued_positions(pipe, record, measured.messages)
    boundary = record.covered_messages
    count = measured.lead + 1 + len(rescued) + len(measured.messages) - boundary
    phase = summary_phase(pipe, measured, record, rescued)
    refine = refine_count(pipe, measured, boundary)
    return not pruned_triggers(pipe, measured, phase, count, refine)


def held_summary(pipe: Pipeline, measured: Measured) -> SummaryRecord | None:
    """The summary this process holds for the thread, if its prefix still matches."""
    record = pipe.memory.held(measured.key, pipe.settings.store)
    if record is None or not find_matching_summaries([record], measured.messages, measured.scan):
        return None
    return record


def still_serves(pipe: Pipeline, measured: Measured) -> SummaryRecord | None:
    """The summary this process served the thread last, if it can serve this call as well.

    Contexts only grow, so a summary that matches and fits is the one the store lookup would
    pick too; the call then needs no store access.
    """
    record = held_summary(pipe, measured)
    return record if record is not None and summary_fits(pipe, measured, record) else None


def store_outage(pipe: Pipeline, measured: Measured, exc: Exception) -> Outcome:
    """The call goes ahead without the store: the held summary, else drop-oldest."""
    error = f"summary store unavailable: {exc}"
    pipe.memory.note_store_failure(error)
    emit(
        {
            "type": "context_compaction_failed",
            "thread_id": measured.thread_id,
            "namespace": pipe.settings.namespace,
            "cause": "store",
            "error": error,
        }
    )
    return Outcome("failed", held_summary(pipe, measured), error=error)
