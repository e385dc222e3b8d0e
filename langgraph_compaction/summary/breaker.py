"""A failed summary: nothing stored, the failure counted, and the half-open circuit breaker.

After ``max_failures`` consecutive failures in a thread the summarizer is not called again
until ``failure_cooldown_messages`` new messages have arrived; then one attempt is allowed,
and a failure starts the cooldown again (DESIGN 6.5). A success resets the count (see
:mod:`.saving`). Every failure emits ``context_compaction_failed``.
"""

from __future__ import annotations

import logging

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.config.settings import emit
from langgraph_compaction.errors import SummaryStoreError, ThreadDeletedError
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.effects import Step, perform, record_failure
from langgraph_compaction.pipeline.records import Measured, Outcome, Partition
from langgraph_compaction.store import ThreadState
from langgraph_compaction.summary.drafting import Failure

__all__ = ["BREAKER_OPEN", "breaker_open", "emit_failed", "record_failed"]

BREAKER_OPEN = "circuit breaker open: too many consecutive summary failures"

logger = logging.getLogger("langgraph_compaction")


def breaker_open(state: ThreadState | None, message_count: int, config: CompactionConfig) -> bool:
    """Half-open circuit breaker: after ``max_failures`` wait ``failure_cooldown_messages``."""
    if state is None or state.consecutive_failures < config.max_failures:
        return False
    since = message_count - (state.messages_at_last_failure or 0)
    return since < config.failure_cooldown_messages


def emit_failed(pipe: Pipeline, measured: Measured, error: str, **extra: object) -> None:
    """The ``context_compaction_failed`` event of this call; a store request it served stays
    pending for the next call, and the event says so (``request``)."""
    request = measured.control.request
    if request is not None:
        extra = {"request": {"pending": True, "instruction": request.instruction}, **extra}
    emit(
        {
            "type": "context_compaction_failed",
            "thread_id": measured.thread_id,
            "namespace": pipe.settings.namespace,
            "error": error,
            **extra,
        }
    )


def record_failed(
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
    emit_failed(pipe, measured, error, consecutive_failures=failures)
    return Outcome("failed", plan.previous, calls=failure.calls, error=error, usage=failure.usage)
