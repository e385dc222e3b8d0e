"""summarize-or-reuse: serve a stored summary, or make the next one incrementally.

A new summary covers a prefix of the conversation: the update prompt gets the previous
summary and only the messages evicted since, in consecutive chunks when they exceed one call.
One summary per prefix: calls of this process that need the same summary share one flight,
and workers of a fleet take the store's lease, so the others wait and reuse. A failure stores
nothing; the fallback model is tried once, then the failure policy and the circuit breaker
take over. A thread deleted meanwhile discards the result (the store checks its generation).

Every prompt ends with the caller's instructions (``summary_instructions`` and the run's
``instruction``), after the transcript. A custom compactor (``summarize=``) is used instead of
the summary model, in one call with all evicted messages (see :mod:`.._compactor`); when it
fails the fallback model is tried once, as after a failed summary model, and its reply goes
through the same not-a-summary check, cap, events and storage. With ``review`` a new summary is
saved as a draft and put to a person before it is stored (see :mod:`.._review`).

Every summary call is labelled ``compaction_summary`` with the thread, namespace and the version
the summary will get (``_model_calls.summary_labels``); the usage the calls report is stored
with the row, reported in ``CompactionReport.summary_usage`` and in ``context_compacted``.

    summarize -> assemble
"""

from __future__ import annotations

import logging
import threading
from contextlib import suppress
from dataclasses import replace
from typing import Literal

from langchain_core.runnables import RunnableConfig

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.config.run_control import join_instructions
from langgraph_compaction.config.settings import emit
from langgraph_compaction.content.messages import make_summary_message, tool_name_of
from langgraph_compaction.errors import SummaryStoreError, ThreadDeletedError
from langgraph_compaction.pipeline.context import Pipeline, Precompact
from langgraph_compaction.pipeline.effects import (
    Sleep,
    Step,
    StoreCall,
    WaitFlight,
    acquire_lease,
    add_summary,
    drop_review,
    find_summary,
    perform,
    record_failure,
    release_lease,
    reset_failures,
    save_review,
)
from langgraph_compaction.pipeline.flights import FLIGHTS
from langgraph_compaction.pipeline.records import (
    Decision,
    DecisionInput,
    Measured,
    Outcome,
    Partition,
    Reuse,
)
from langgraph_compaction.store import (
    IndexedMessage,
    Lease,
    SummaryRecord,
    SummaryStore,
    ThreadState,
)
from langgraph_compaction.store.summary_store import plumbing
from langgraph_compaction.summary.drafting import (
    Failure,
    draft_by_compactor,
    draft_by_models,
    plan_summary_chunks,
)
from langgraph_compaction.summary.matching import message_key, store_outage
from langgraph_compaction.summary.model_call import distinct_models, summary_labels, usage_columns
from langgraph_compaction.summary.prompts import render_transcript
from langgraph_compaction.summary.review import (
    REJECTED,
    Draft,
    ask_review,
    forget_draft,
    next_version,
    remember_draft,
    saved_draft,
)

__all__ = ["LEASE_WAIT_S", "breaker_open", "summarize", "summarize_step"]

LEASE_WAIT_S = 120.0
"""Longest a call waits for the summary another call or worker is making, then fails over."""

_MAX_POLL_S = 0.2
"""Longest pause between two looks at another worker's lease: bounds what waiting adds."""
SummaryKind = Literal["initial", "update", "edited"]
"""The store's kinds of summary (``edited``: a person's text)."""
_DELETED = "the thread was deleted while its summary was made: the summary was discarded"

logger = logging.getLogger("langgraph_compaction")


def breaker_open(state: ThreadState | None, message_count: int, config: CompactionConfig) -> bool:
    """Half-open circuit breaker: after ``max_failures`` wait ``failure_cooldown_messages``."""
    if state is None or state.consecutive_failures < config.max_failures:
        return False
    since = message_count - (state.messages_at_last_failure or 0)
    return since < config.failure_cooldown_messages


def summarize(
    pipe: Pipeline, measured: Measured, decision: Decision, *, review: bool = False
) -> Step[Outcome]:
    """Reuse, or summarize incrementally; every I/O is a yielded effect.

    ``review``: put a new summary to a person (``interrupt``) before storing it; see
    :mod:`.._review`. Only a node of a running graph may ask.
    """
    plan = decision.plan
    if decision.outcome is not None:  # settled in partition (the store failed)
        return decision.outcome
    if isinstance(plan, Reuse):
        return Outcome("reused", plan.record)
    if plan is None:  # nothing more can be evicted: assemble shortens what it must
        return Outcome("reused", decision.matching) if decision.matching else Outcome("kept", None)
    settings = pipe.settings
    ns, thread_id = settings.namespace, measured.thread_id
    lookup = find_summary(thread_id, ns, plan.prefix_hash)
    existing = yield from perform(lookup)
    if existing is not None:  # made by another call or process: no model call
        return Outcome("reused", existing)
    if review:  # the re-run of a resumed review: the draft is made already
        draft = yield from saved_draft(_draft_key(pipe, measured, plan))
        if draft is not None:
            return (yield from _reviewed(pipe, measured, decision, plan, draft))
    if breaker_open(decision.thread_state, len(measured.messages), settings.config):
        error = "circuit breaker open: too many consecutive summary failures"
        _emit_failed(pipe, measured, error)
        return Outcome("failed", plan.previous, error=error)
    key = (settings.store.url, ns, thread_id, plan.prefix_hash)
    flight, owner = FLIGHTS.claim(key)
    if not owner:  # another call of this process makes it: wait, then reuse
        yield WaitFlight(flight, LEASE_WAIT_S)
        existing = yield from perform(lookup)
        if existing is not None:
            return Outcome("reused", existing)
        error = "the summary another call was making for this prefix did not land"
        return Outcome("failed", plan.previous, error=error)
    try:
        taken = yield from _take_lease(lookup, thread_id, ns, plan.prefix_hash)
        if isinstance(taken, SummaryRecord):
            return Outcome("reused", taken)
        if taken is None:
            error = f"another worker held this prefix's lease for over {LEASE_WAIT_S:g} s"
            _emit_failed(pipe, measured, error)
            return Outcome("failed", plan.previous, error=error)
        released = False
        try:
            made = yield from _make(pipe, measured, decision, plan, review)
            with suppress(SummaryStoreError):  # it stopped renewing; the row expires by itself
                yield from perform(release_lease(taken))
            released = True
        finally:
            if not released:  # abandoned midway (cancelled): release it off this thread/loop
                _release_later(settings.store, taken)
    finally:
        FLIGHTS.land(key, flight)
    if isinstance(made, Draft):  # saved for review, the lease released: now ask
        return (yield from _reviewed(pipe, measured, decision, plan, made))
    return made


def summarize_step(
    pipe: Pipeline, precompact: Precompact, state: DecisionInput, config: RunnableConfig
) -> Step[dict[str, Outcome]]:
    """The node: the outcome assemble builds the input from."""
    measured = state["measured"]
    try:
        review = pipe.settings.config.review
        outcome = yield from summarize(pipe, measured, state["decision"], review=review)
    except SummaryStoreError as exc:
        outcome = store_outage(pipe, measured, exc)
    return {"outcome": outcome}


def _release_later(store: SummaryStore, lease: Lease) -> None:
    def release() -> None:
        with suppress(SummaryStoreError):
            plumbing(store).release_lease(lease)

    threading.Thread(target=release, name="compaction-lease-release", daemon=True).start()


def _take_lease(
    lookup: StoreCall[SummaryRecord | None], thread_id: str, namespace: str, prefix_hash: str
) -> Step[Lease | SummaryRecord | None]:
    """Take the prefix's lease, or wait for the worker holding it and return its summary.

    None: the holder kept it past :data:`LEASE_WAIT_S` without storing a summary.
    """
    waited, pause = 0.0, 0.05
    while True:
        lease = yield from perform(acquire_lease(thread_id, namespace, prefix_hash))
        existing = yield from perform(lookup)  # stored by a worker that released just now
        if existing is not None:
            if lease is not None:
                yield from perform(release_lease(lease))
            return existing
        if lease is not None:
            return lease
        if waited >= LEASE_WAIT_S:
            return None
        yield Sleep(pause)
        waited += pause
        pause = min(pause * 2, _MAX_POLL_S)


def _emit_failed(pipe: Pipeline, measured: Measured, error: str, **extra: object) -> None:
    emit(
        {
            "type": "context_compaction_failed",
            "thread_id": measured.thread_id,
            "namespace": pipe.settings.namespace,
            "error": error,
            **extra,
        }
    )


def _make(
    pipe: Pipeline, measured: Measured, decision: Decision, plan: Partition, review: bool
) -> Step[Outcome | Draft]:
    """Make the summary of ``plan`` (this call holds the prefix's lease) and store it, or,
    with ``review``, save it as a draft for the person to answer."""
    settings = pipe.settings
    config = settings.config
    evicted = [measured.messages[i] for i in plan.evicted]
    source_tokens = sum(map(measured.scan.token, plan.evicted))  # what the model paid for them
    previous = plan.previous.summary if plan.previous else None
    instruction = join_instructions(config.summary_instructions, measured.control.instruction)
    compactor = settings.compactor
    # The compactor is used instead of the summary model; the fallback model backs it up.
    models = distinct_models(
        *(
            (settings.fallback_model,)
            if compactor
            else (settings.summarizer, settings.fallback_model)
        )
    )
    chunks = plan_summary_chunks(pipe, evicted, previous, config.max_summary_chunks, instruction)
    version = yield from next_version(measured.thread_id, settings.namespace)
    labels = summary_labels(measured.thread_id, settings.namespace, version)
    emit(
        {
            "type": "context_compacting",
            "thread_id": measured.thread_id,
            "namespace": settings.namespace,
            "messages": len(evicted),
            "source_tokens": source_tokens,
            "chunks": 1 if compactor else len(chunks.chunks),
            "tokens_before": measured.tokens_before,
        }
    )
    made: Draft | Failure
    if compactor is not None:
        made = yield from draft_by_compactor(
            pipe, compactor, evicted, previous, instruction, labels
        )
        if isinstance(made, Failure) and models:  # the fallback model, once (DESIGN 6.5)
            first = made
            made = yield from draft_by_models(
                pipe, models, chunks, previous, instruction, labels, first.calls, first.usage
            )
            if isinstance(made, Failure):
                made = replace(made, error=f"{first.error}; then {made.error}")
    else:
        made = yield from draft_by_models(pipe, models, chunks, previous, instruction, labels)
    if isinstance(made, Failure):
        return (yield from _failed(pipe, measured, plan, decision.generation, made))
    if not review:
        return (yield from _store(pipe, measured, decision, plan, made, _kind(plan)))
    try:
        yield from perform(
            save_review(
                thread_id=measured.thread_id,
                namespace=settings.namespace,
                prefix_hash=plan.prefix_hash,
                summary=made.text,
                kind=_kind(plan),
                model=made.model,
                generation=decision.generation,
                **usage_columns(made.usage),
            )
        )
    except ThreadDeletedError:
        return Outcome("failed", None, calls=made.calls, error=_DELETED, usage=made.usage)
    remember_draft(_draft_key(pipe, measured, plan), made)
    return made


def _kind(plan: Partition) -> SummaryKind:
    return "update" if plan.previous else "initial"


def _store(
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
                **usage_columns(made.usage),
            )
        )
    except ThreadDeletedError:
        return Outcome("failed", None, calls=made.calls, error=_DELETED, usage=made.usage)
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
    )


def _draft_key(pipe: Pipeline, measured: Measured, plan: Partition) -> tuple[str, str, str, str]:
    settings = pipe.settings
    return (settings.store.url, settings.namespace, measured.thread_id, plan.prefix_hash)


def _reviewed(
    pipe: Pipeline, measured: Measured, decision: Decision, plan: Partition, draft: Draft
) -> Step[Outcome]:
    """Put the draft to a person (``interrupt``), then store it, their text, or nothing."""
    ns, thread_id = pipe.settings.namespace, measured.thread_id
    version = yield from next_version(thread_id, ns)
    answer = ask_review(thread_id, version, draft.text)  # raises GraphInterrupt the first time
    key = _draft_key(pipe, measured, plan)
    if answer.action == "reject":
        yield from perform(drop_review(thread_id, ns, plan.prefix_hash))
        forget_draft(key)
        _emit_failed(pipe, measured, REJECTED, cause="review")
        return Outcome(
            "failed", plan.previous, calls=draft.calls, error=REJECTED, usage=draft.usage
        )
    kind = _kind(plan)
    if answer.action == "edit":
        assert answer.summary is not None
        draft = replace(draft, text=answer.summary, summary_cut=False)
        kind = "edited"
    outcome = yield from _store(pipe, measured, decision, plan, draft, kind)
    with suppress(SummaryStoreError):  # a leftover draft is never read: the summary comes first
        yield from perform(drop_review(thread_id, ns, plan.prefix_hash))
    forget_draft(key)
    return outcome


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


def _failed(
    pipe: Pipeline, measured: Measured, plan: Partition, generation: int | None, failure: Failure
) -> Step[Outcome]:
    """Record a failed summary (nothing stored) and fall back to the previous one, if any."""
    error = failure.error
    failures: int | None = None
    effect = record_failure(
        measured.thread_id, pipe.settings.namespace, len(measured.messages), error, generation
    )
    try:
        state = yield from perform(effect)
        failures = state.consecutive_failures
    except ThreadDeletedError:
        pass
    except SummaryStoreError as exc:
        logger.debug("could not record a summary failure: %s", exc)
    _emit_failed(pipe, measured, error, consecutive_failures=failures)
    return Outcome("failed", plan.previous, calls=failure.calls, error=error, usage=failure.usage)
