"""Storing a new summary: the row, what total recall indexes with it, and the events.

The summary is stored with its prefix hash, boundary, rescued messages, usage and identifier
check (figures and items, DESIGN 6.13), in one transaction that also indexes the messages it
newly covers (``recall``) and checks the thread's generation: a thread deleted meanwhile
discards it (DESIGN 6.9). A success resets the thread's failure count and emits
``context_compacted``.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import asdict
from typing import Literal

from langgraph_compaction.config.settings import emit
from langgraph_compaction.content.messages import make_summary_message, tool_name_of
from langgraph_compaction.errors import SummaryStoreError, ThreadDeletedError
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.effects import Step, add_summary, perform, reset_failures
from langgraph_compaction.pipeline.records import Decision, Measured, Outcome, Partition
from langgraph_compaction.store import IndexedMessage, IntegrityColumns
from langgraph_compaction.summary.drafting import Draft
from langgraph_compaction.summary.matching import message_key
from langgraph_compaction.summary.model_call import usage_columns
from langgraph_compaction.summary.prompts import render_transcript

__all__ = ["DELETED", "SummaryKind", "integrity_columns", "kind_of", "store_summary"]

SummaryKind = Literal["initial", "update", "edited"]
"""The store's kinds of summary (``edited``: a person's text)."""

DELETED = "the thread was deleted while its summary was made: the summary was discarded"


def kind_of(plan: Partition) -> SummaryKind:
    """``update`` when the summary extends a previous one, else ``initial``."""
    return "update" if plan.previous else "initial"


def store_summary(
    pipe: Pipeline,
    measured: Measured,
    decision: Decision,
    plan: Partition,
    made: Draft,
    kind: SummaryKind,
) -> Step[Outcome]:
    """Store a summary made (or reviewed) for ``plan``, and report it."""
    settings, memory = pipe.settings, pipe.memory
    ns, thread_id, config = settings.namespace, measured.thread_id, settings.config
    generation = decision.generation
    source_tokens = sum(map(measured.scan.token, plan.evicted))
    try:
        record = yield from perform(
            add_summary(
                thread_id=thread_id,
                namespace=ns,
                parent_id=plan.previous.id if plan.previous else None,
                boundary_message_id=plan.boundary_message_id,
                covered_messages=plan.cutoff,
                prefix_hash=plan.prefix_hash,
                summary=made.text,
                summary_tokens=settings.counter(
                    [make_summary_message(made.text, "x", settings.recall_tool)]
                ),
                source_tokens=source_tokens,
                kind=kind,
                model=made.model,
                rescued_message_ids=tuple(message_key(measured.messages, i) for i in plan.rescued),
                generation=generation,
                recall_messages=_recalled(measured, plan) if config.recall.enabled else (),
                steered=measured.control.force,
                request=measured.control.request,  # consumed in the same transaction
                integrity=integrity_columns(made),
                **usage_columns(made.usage),
            )
        )
    except ThreadDeletedError:
        return Outcome("failed", None, calls=made.calls, error=DELETED, usage=made.usage)
    state = decision.thread_state
    if state is not None and state.consecutive_failures:
        with suppress(SummaryStoreError):  # stored; a stale count only delays the reset
            yield from perform(reset_failures(thread_id, ns, generation))
    memory.note_store_ok(settings.store)
    emit(
        {
            "type": "context_compacted",
            "thread_id": thread_id,
            "namespace": ns,
            "summary_id": record.id,
            "version": record.version,
            "summary_tokens": record.summary_tokens,
            "source_tokens": source_tokens,
            "calls": made.calls,
            "shortened": made.shortened,
            "over_trim": made.over_trim,
            "summary_cut": made.summary_cut,
            "usage": usage_columns(made.usage),
            "integrity": asdict(made.integrity) if made.integrity else None,
        }
    )
    return Outcome(
        "summarized",
        record,
        calls=made.calls,
        shortened=made.shortened,
        over_trim=made.over_trim,
        summary_cut=made.summary_cut,
        usage=made.usage,
        integrity=made.integrity,
    )


def integrity_columns(made: Draft) -> IntegrityColumns | None:
    """The row's integrity figures and items; None (NULL columns) when it was not checked."""
    report = made.integrity
    if report is None or made.integrity_items is None:
        return None
    return IntegrityColumns(
        identifiers=report.identifiers,
        kept=report.kept,
        appended=report.appended,
        dropped=report.dropped,
        artifacts=report.artifacts,
        repaired=report.repaired,
        items=made.integrity_items,
    )


def _recalled(measured: Measured, plan: Partition) -> tuple[IndexedMessage, ...]:
    """What total recall indexes with this summary: the originals it newly covers."""
    messages = measured.messages
    return tuple(
        IndexedMessage(
            position=index,
            message_id=message_key(messages, index),
            type=messages[index].type,
            name=tool_name_of(messages, index) or None,
            text=render_transcript([messages[index]]),
        )
        for index in plan.evicted
    )
