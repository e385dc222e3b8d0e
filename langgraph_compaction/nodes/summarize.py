"""summarize-or-reuse: serve a stored summary, or make the next one incrementally.

A new summary covers a prefix of the conversation: the update prompt gets the previous
summary and only the messages evicted since, in consecutive chunks when they exceed one call.
One summary per prefix: calls of this process that need the same summary share one flight,
and workers of a fleet take the store's lease, so the others wait and reuse. A failure stores
nothing; the fallback model is tried once, then the failure policy and the circuit breaker
take over. A thread deleted meanwhile discards the result (the store checks its generation).

    summarize -> assemble
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from contextlib import suppress

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from .._call import Decision, DecisionInput, Measured, Outcome, Partition, Reuse
from .._cap import cap_summary
from .._chunks import ChunkPlan, plan_chunks, transcript_tokens
from .._config import CompactionConfig
from .._effects import (
    Sleep,
    Step,
    StoreCall,
    WaitFlight,
    acquire_lease,
    add_summary,
    find_summary,
    perform,
    record_failure,
    release_lease,
    reset_failures,
)
from .._exceptions import SummarizerError, SummaryStoreError, ThreadDeletedError
from .._flights import FLIGHTS
from .._messages import make_summary_message, tool_name_of
from .._model_calls import PromptTooLong, bind_summarizer, distinct_models, model_name, summary_call
from .._pipeline import Pipeline, Precompact
from .._prompts import fill_prompt, render_transcript
from .._quality import not_a_summary
from .._settings import emit
from .._summaries import message_key, store_outage
from ..store import IndexedMessage, Lease, SummaryRecord, SummaryStore, ThreadState

__all__ = ["LEASE_WAIT_S", "breaker_open", "summarize", "summarize_step"]

LEASE_WAIT_S = 120.0
"""Longest a call waits for the summary another call or worker is making, then fails over."""

_MAX_POLL_S = 0.2
"""Longest pause between two looks at another worker's lease: bounds what waiting adds."""
_MAX_OVERFLOW_RETRIES = 3

logger = logging.getLogger("langgraph_compaction")


def breaker_open(state: ThreadState | None, message_count: int, config: CompactionConfig) -> bool:
    """Half-open circuit breaker: after ``max_failures`` wait ``failure_cooldown_messages``."""
    if state is None or state.consecutive_failures < config.max_failures:
        return False
    since = message_count - (state.messages_at_last_failure or 0)
    return since < config.failure_cooldown_messages


def summarize(pipe: Pipeline, measured: Measured, decision: Decision) -> Step[Outcome]:
    """Reuse, or summarize incrementally; every I/O is a yielded effect."""
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
            outcome = yield from _make(pipe, measured, decision, plan)
            with suppress(SummaryStoreError):  # it stopped renewing; the row expires by itself
                yield from perform(release_lease(taken))
            released = True
            return outcome
        finally:
            if not released:  # abandoned midway (cancelled): release it off this thread/loop
                _release_later(settings.store, taken)
    finally:
        FLIGHTS.land(key, flight)


def summarize_step(
    pipe: Pipeline, precompact: Precompact, state: DecisionInput, config: RunnableConfig
) -> Step[dict[str, Outcome]]:
    """The node: the outcome assemble builds the input from."""
    measured = state["measured"]
    try:
        outcome = yield from summarize(pipe, measured, state["decision"])
    except SummaryStoreError as exc:
        outcome = store_outage(pipe, measured, exc)
    return {"outcome": outcome}


def _release_later(store: SummaryStore, lease: Lease) -> None:
    def release() -> None:
        with suppress(SummaryStoreError):
            store.release_lease(lease)

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


def _make(pipe: Pipeline, measured: Measured, decision: Decision, plan: Partition) -> Step[Outcome]:
    """Make the summary of ``plan`` (this call holds the prefix's lease) and store it."""
    settings, memory = pipe.settings, pipe.memory
    ns, thread_id, config = settings.namespace, measured.thread_id, settings.config
    generation = decision.generation
    models = distinct_models(settings.summarizer, settings.fallback_model)
    evicted = [measured.messages[i] for i in plan.evicted]
    source_tokens = sum(map(measured.scan.token, plan.evicted))  # what the model paid for them
    previous = plan.previous.summary if plan.previous else None
    chunks = _plan(pipe, evicted, previous, config.max_summary_chunks)
    emit(
        {
            "type": "context_compacting",
            "thread_id": thread_id,
            "namespace": ns,
            "messages": len(evicted),
            "source_tokens": source_tokens,
            "chunks": len(chunks.chunks),
            "tokens_before": measured.tokens_before,
        }
    )
    text, calls, shortened, over_trim = previous, 0, chunks.shortened, chunks.over_trim
    cut = False
    try:
        if not models:
            raise SummarizerError("no summarizer model: pass model= or fallback_model=")
        bound = [bind_summarizer(m, config) for m in models]
        queue = list(chunks.chunks)
        overflows = 0
        while queue:
            chunk = queue.pop(0)
            template = config.update_prompt if text is not None else config.summary_prompt
            transcript = render_transcript(chunk)
            prompt = fill_prompt(template, transcript, text)
            estimate = settings.counter([HumanMessage(content=prompt)])
            calls += 1
            try:
                reply = yield from summary_call(
                    models, bound, prompt, estimate, config.summary_timeout
                )
            except PromptTooLong as exc:
                overflows += 1
                if overflows > _MAX_OVERFLOW_RETRIES:
                    raise
                memory.learn_summarizer_overflow(
                    exc.overflow, exc.estimate, config.max_summary_tokens
                )
                rest = [*chunk, *(m for c in queue for m in c)]
                left = max(config.max_summary_chunks - calls + 1, 1)
                replanned = _plan(pipe, rest, text, left)
                queue = list(replanned.chunks)
                shortened += replanned.shortened
                over_trim = replanned.over_trim
                continue
            reason = (
                not_a_summary(reply.text, f"{text or ''}\n{transcript}")
                if config.summary_check == "basic"
                else None
            )
            if reason is not None:
                raise SummarizerError(f"the reply is not a summary ({reason})")
            memory.learn_summarizer_usage(reply.estimate, reply.input_tokens)
            text = cap_summary(reply.text, config.max_summary_tokens, settings.counter)
            cut = cut or len(text) < len(reply.text)
    except SummarizerError as exc:
        return (yield from _failed(pipe, measured, plan, generation, calls, str(exc)))
    assert text is not None
    try:
        record = yield from perform(
            add_summary(
                thread_id=thread_id,
                namespace=ns,
                parent_id=plan.previous.id if plan.previous else None,
                boundary_message_id=plan.boundary_message_id,
                covered_messages=plan.cutoff,
                prefix_hash=plan.prefix_hash,
                summary=text,
                summary_tokens=settings.counter(
                    [make_summary_message(text, "x", settings.recall_tool)]
                ),
                source_tokens=source_tokens,
                kind="update" if plan.previous else "initial",
                model=model_name(models[0]),
                rescued_message_ids=tuple(message_key(measured.messages, i) for i in plan.rescued),
                generation=generation,
                recall_messages=_recalled(measured, plan) if config.recall.enabled else (),
            )
        )
    except ThreadDeletedError:
        error = "the thread was deleted while its summary was made: the summary was discarded"
        return Outcome("failed", None, calls=calls, error=error)
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
            "calls": calls,
            "shortened": shortened,
            "over_trim": over_trim,
            "summary_cut": cut,
        }
    )
    return Outcome(
        "summarized",
        record,
        calls=calls,
        shortened=shortened,
        over_trim=over_trim,
        summary_cut=cut,
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


def _plan(
    pipe: Pipeline, messages: Sequence[BaseMessage], previous: str | None, max_chunks: int
) -> ChunkPlan:
    """Chunks within the configured trim and what the summarizer's window is known to take,
    each message sized by its transcript: what the summarizer reads, not what the model paid."""
    settings = pipe.settings
    config = settings.config
    overhead = settings.counter([HumanMessage(content=config.update_prompt)])
    if previous:
        overhead += settings.counter([HumanMessage(content=previous)])
    trim = pipe.memory.transcript_capacity(
        config.trim_tokens_to_summarize, overhead, config.max_summary_tokens
    )
    # Without a trim one call takes everything: there is nothing to size.
    tokens = transcript_tokens(messages, settings.counter) if trim is not None else []
    return plan_chunks(messages, tokens, trim, max_chunks, settings.counter)


def _failed(
    pipe: Pipeline,
    measured: Measured,
    plan: Partition,
    generation: int | None,
    calls: int,
    error: str,
) -> Step[Outcome]:
    """Record a failed summary (nothing stored) and fall back to the previous one, if any."""
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
    return Outcome("failed", plan.previous, calls=calls, error=error)
