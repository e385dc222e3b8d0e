"""summarize-or-reuse: serve a stored summary, or make the next one incrementally.

A new summary covers a prefix of the conversation: the update prompt gets the previous
summary and only the messages evicted since, in consecutive chunks when they exceed one call.
One summary per prefix: calls of this process that need the same summary share one flight,
and workers of a fleet take the store's lease, so the others wait and reuse. A failure stores
nothing; the fallback model is tried once, then the failure policy and the circuit breaker
take over. A thread deleted meanwhile discards the result (the store checks its generation).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Sequence
from contextlib import suppress

from langchain_core.messages import BaseMessage, HumanMessage

from .._chunks import ChunkPlan, plan_chunks
from .._config import CompactionConfig
from .._effects import Sleep, Step, StoreCall, WaitFlight
from .._exceptions import SummarizerError, SummaryStoreError, ThreadDeletedError
from .._flights import FLIGHTS
from .._messages import make_summary_message
from .._model_calls import (
    PromptTooLong,
    bind_summarizer,
    distinct_models,
    model_name,
    summary_call,
)
from .._prompts import fill_prompt, render_transcript
from .._quality import not_a_summary
from .._runtime import CallWork, CompactionRuntime, Outcome
from ..store import Lease, SummaryRecord, SummaryStore, ThreadState
from .partition import Partition, Reuse, find_matching_summaries, message_key

__all__ = [
    "LEASE_WAIT_S",
    "breaker_open",
    "held_summary",
    "outage_outcome",
    "summarize_step",
]

LEASE_WAIT_S = 120.0
"""Longest a call waits for the summary another call or worker is making, then fails over."""

_MAX_POLL_S = 0.2
"""Longest pause between two looks at another worker's lease: bounds what waiting adds."""
_MAX_OVERFLOW_RETRIES = 3
_OVERFLOW_MARGIN = 0.85
"""Share of the summarizer's window a re-chunked prompt aims for (its count is an estimate)."""

logger = logging.getLogger("langgraph_compaction")


def breaker_open(state: ThreadState | None, message_count: int, config: CompactionConfig) -> bool:
    """Half-open circuit breaker: after ``max_failures`` wait ``failure_cooldown_messages``."""
    if state is None or state.consecutive_failures < config.max_failures:
        return False
    since = message_count - (state.messages_at_last_failure or 0)
    return since < config.failure_cooldown_messages


def held_summary(runtime: CompactionRuntime, work: CallWork) -> SummaryRecord | None:
    """The summary this process holds for the thread, if its prefix still matches."""
    record = runtime.held(work.key)
    if record is None or not find_matching_summaries([record], work.messages, work.scan):
        return None
    return record


def outage_outcome(runtime: CompactionRuntime, work: CallWork, exc: Exception) -> Outcome:
    """The call goes ahead without the store: the held summary, else drop-oldest."""
    error = f"summary store unavailable: {exc}"
    runtime.note_store_failure(error)
    runtime.emit(
        {
            "type": "context_compaction_failed",
            "thread_id": work.thread_id,
            "namespace": runtime.namespace,
            "cause": "store",
            "error": error,
        }
    )
    return Outcome("failed", held_summary(runtime, work), error=error)


def summarize_step(runtime: CompactionRuntime, work: CallWork) -> Step[Outcome]:
    """Reuse, or summarize incrementally; every I/O is a yielded effect."""
    plan = work.plan
    if isinstance(plan, Reuse):
        return Outcome("reused", plan.record)
    if not isinstance(plan, Partition):  # nothing more can be evicted: assemble truncates
        return Outcome("reused", work.matching) if work.matching else Outcome("kept", None)
    ns, thread_id = runtime.namespace, work.thread_id
    lookup = StoreCall(
        "find_summary", {"thread_id": thread_id, "namespace": ns, "prefix_hash": plan.prefix_hash}
    )
    existing = yield lookup
    if existing is not None:  # made by another call or process: no model call
        return Outcome("reused", existing)
    if breaker_open(work.thread_state, len(work.messages), runtime.config):
        error = "circuit breaker open: too many consecutive summary failures"
        _emit_failed(runtime, work, error)
        return Outcome("failed", plan.previous, error=error)
    key = (runtime.store.url, ns, thread_id, plan.prefix_hash)
    flight, owner = FLIGHTS.claim(key)
    if not owner:  # another call of this process makes it: wait, then reuse
        yield WaitFlight(flight, LEASE_WAIT_S)
        existing = yield lookup
        if existing is not None:
            return Outcome("reused", existing)
        error = "the summary another call was making for this prefix did not land"
        return Outcome("failed", plan.previous, error=error)
    try:
        taken = yield from _take_lease(runtime.store, lookup, thread_id, ns, plan.prefix_hash)
        if isinstance(taken, SummaryRecord):
            return Outcome("reused", taken)
        if taken is None:
            error = f"another worker held this prefix's lease for over {LEASE_WAIT_S:g} s"
            _emit_failed(runtime, work, error)
            return Outcome("failed", plan.previous, error=error)
        released = False
        try:
            outcome = yield from _summarize(runtime, work, plan)
            with suppress(SummaryStoreError):  # it stopped renewing; the row expires by itself
                yield StoreCall("release_lease", {"lease": taken})
            released = True
            return outcome
        finally:
            if not released:  # abandoned midway (cancelled): release it off this thread/loop
                _release_later(runtime.store, taken)
    finally:
        FLIGHTS.land(key, flight)


def _release_later(store: SummaryStore, lease: Lease) -> None:
    def release() -> None:
        with contextlib.suppress(SummaryStoreError):
            store.release_lease(lease)

    threading.Thread(target=release, name="compaction-lease-release", daemon=True).start()


def _take_lease(
    store: SummaryStore, lookup: StoreCall, thread_id: str, namespace: str, prefix_hash: str
) -> Step[Lease | SummaryRecord | None]:
    """Take the prefix's lease, or wait for the worker holding it and return its summary.

    None: the holder kept it past :data:`LEASE_WAIT_S` without storing a summary.
    """
    waited, pause = 0.0, 0.05
    args = {"thread_id": thread_id, "namespace": namespace, "prefix_hash": prefix_hash}
    while True:
        lease = yield StoreCall("acquire_lease", args)
        existing = yield lookup  # stored by a worker that released just before we took it
        if existing is not None:
            if lease is not None:
                yield StoreCall("release_lease", {"lease": lease})
            return existing  # type: ignore[no-any-return]
        if lease is not None:
            return lease  # type: ignore[no-any-return]
        if waited >= LEASE_WAIT_S:
            return None
        yield Sleep(pause)
        waited += pause
        pause = min(pause * 2, _MAX_POLL_S)


def _emit_failed(runtime: CompactionRuntime, work: CallWork, error: str, **extra: object) -> None:
    runtime.emit(
        {
            "type": "context_compaction_failed",
            "thread_id": work.thread_id,
            "namespace": runtime.namespace,
            "error": error,
            **extra,
        }
    )


def _summarize(runtime: CompactionRuntime, work: CallWork, plan: Partition) -> Step[Outcome]:
    """Make the summary of ``plan`` (this call holds the prefix's lease) and store it."""
    ns, thread_id, config = runtime.namespace, work.thread_id, runtime.config
    generation = work.thread_state.generation if work.thread_state else None
    models = distinct_models(runtime.summarizer, runtime.fallback_model)
    evicted = [work.messages[i] for i in plan.evicted]
    tokens = [work.scan.tokens[i] for i in plan.evicted]
    source_tokens = sum(tokens)
    previous = plan.previous.summary if plan.previous else None
    chunks = _plan(runtime, evicted, tokens, previous, config.max_summary_chunks)
    runtime.emit(
        {
            "type": "context_compacting",
            "thread_id": thread_id,
            "namespace": ns,
            "messages": len(evicted),
            "source_tokens": source_tokens,
            "chunks": len(chunks.chunks),
            "tokens_before": work.tokens_before,
        }
    )
    text, calls, shortened, over_trim = previous, 0, chunks.shortened, chunks.over_trim
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
            estimate = runtime.counter([HumanMessage(content=prompt)])
            calls += 1
            try:
                reply = yield from summary_call(models, bound, prompt, estimate)
            except PromptTooLong as exc:
                overflows += 1
                if overflows > _MAX_OVERFLOW_RETRIES:
                    raise
                runtime.learn_summarizer_overflow(exc.overflow, exc.estimate)
                rest = [*chunk, *(m for c in queue for m in c)]
                left = max(config.max_summary_chunks - calls + 1, 1)
                replanned = _plan(runtime, rest, runtime.counts(rest), text, left)
                queue = list(replanned.chunks)
                shortened += replanned.shortened
                over_trim = replanned.over_trim
                continue
            reason = not_a_summary(reply.text, f"{text or ''}\n{transcript}")
            if reason is not None:
                raise SummarizerError(f"the reply is not a summary ({reason})")
            runtime.learn_summarizer_usage(reply.estimate, reply.input_tokens)
            text = reply.text
    except SummarizerError as exc:
        return (yield from _failed(runtime, work, plan, generation, calls, str(exc)))
    assert text is not None
    try:
        record = yield StoreCall(
            "add_summary",
            {
                "thread_id": thread_id,
                "namespace": ns,
                "parent_id": plan.previous.id if plan.previous else None,
                "boundary_message_id": plan.boundary_message_id,
                "covered_messages": plan.cutoff,
                "prefix_hash": plan.prefix_hash,
                "summary": text,
                "summary_tokens": runtime.counter([make_summary_message(text, "x")]),
                "source_tokens": source_tokens,
                "kind": "update" if plan.previous else "initial",
                "model": model_name(models[0]),
                "rescued_message_ids": tuple(message_key(work.messages, i) for i in plan.rescued),
                "generation": generation,
            },
        )
    except ThreadDeletedError:
        error = "the thread was deleted while its summary was made: the summary was discarded"
        return Outcome("failed", None, calls=calls, error=error)
    if work.thread_state is not None and work.thread_state.consecutive_failures:
        with suppress(SummaryStoreError):  # stored; a stale count only delays the reset
            yield StoreCall(
                "reset_failures",
                {"thread_id": thread_id, "namespace": ns, "generation": generation},
            )
    runtime.note_store_ok()
    runtime.emit(
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
        }
    )
    return Outcome("summarized", record, calls=calls, shortened=shortened, over_trim=over_trim)


def _plan(
    runtime: CompactionRuntime,
    messages: Sequence[BaseMessage],
    tokens: Sequence[int],
    previous: str | None,
    max_chunks: int,
) -> ChunkPlan:
    """Chunks within the configured trim and what the summarizer's window is known to take."""
    trim = runtime.transcript_capacity(previous)
    return plan_chunks(messages, tokens, trim, max_chunks, runtime.counter)


def _failed(
    runtime: CompactionRuntime,
    work: CallWork,
    plan: Partition,
    generation: int | None,
    calls: int,
    error: str,
) -> Step[Outcome]:
    """Record a failed summary (nothing stored) and fall back to the previous one, if any."""
    failures: int | None = None
    try:
        state = yield StoreCall(
            "record_failure",
            {
                "thread_id": work.thread_id,
                "namespace": runtime.namespace,
                "message_count": len(work.messages),
                "error": error,
                "generation": generation,
            },
        )
        failures = state.consecutive_failures
    except ThreadDeletedError:
        pass
    except SummaryStoreError as exc:
        logger.debug("could not record a summary failure: %s", exc)
    _emit_failed(runtime, work, error, consecutive_failures=failures)
    return Outcome("failed", plan.previous, calls=calls, error=error)
