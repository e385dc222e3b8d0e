"""summarize-or-reuse: serve a stored summary, or make the next one incrementally.

A new summary covers a prefix of the conversation: the update prompt gets the previous
summary and only the messages evicted since (``summary.drafting``). One summary per prefix:
calls of this process share one flight and workers of a fleet take the store's lease, so the
others wait and reuse (``summary.lease``). A failure stores nothing: the fallback model is
tried once, then the failure policy and the circuit breaker take over (``summary.breaker``).
With ``review`` a new summary is saved as a draft and put to a person before it is stored
(``summary.review``); otherwise it is stored at once (``summary.saving``), and a thread deleted
meanwhile discards it.

    summarize -> assemble
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.pipeline.context import Pipeline, Precompact
from langgraph_compaction.pipeline.effects import Step, consume_request, find_summary, perform
from langgraph_compaction.pipeline.records import Decision, DecisionInput, Measured, Outcome, Reuse
from langgraph_compaction.steering.changes import still_asked
from langgraph_compaction.summary.breaker import (
    BREAKER_OPEN,
    breaker_open,
    emit_failed,
    record_failed,
)
from langgraph_compaction.summary.drafting import Draft, Failure, draft_summary
from langgraph_compaction.summary.lease import Taken, exclusively
from langgraph_compaction.summary.matching import store_outage
from langgraph_compaction.summary.review import draft_key, reviewed, save_draft, saved_draft
from langgraph_compaction.summary.saving import kind_of, store_summary

__all__ = ["summarize", "summarize_step"]


def summarize(
    pipe: Pipeline, measured: Measured, decision: Decision, *, review: bool = False
) -> Step[Outcome]:
    """Reuse, or summarize incrementally; every I/O is a yielded effect.

    ``review``: put a new summary to a person (``interrupt``) before storing it. Only a node
    of a running graph may ask.
    """
    plan = decision.plan
    if decision.outcome is not None:  # settled in partition (the store failed)
        return decision.outcome
    if isinstance(plan, Reuse):
        return Outcome("reused", plan.record)
    matching = decision.matching
    unchanged = Outcome("reused", matching) if matching else Outcome("kept", None)
    if plan is None:  # nothing more can be evicted: assemble shortens what it must
        return unchanged
    settings = pipe.settings
    ns, thread_id = settings.namespace, measured.thread_id
    lookup = find_summary(thread_id, ns, plan.prefix_hash)
    existing = yield from perform(lookup)
    if existing is not None:  # made by another call or process: no model call
        return Outcome("reused", existing)
    if review:  # the re-run of a resumed review: the draft is made already
        draft = yield from saved_draft(draft_key(pipe, measured, plan))
        if draft is not None:
            return (yield from reviewed(pipe, measured, decision, plan, draft))
    if breaker_open(decision.thread_state, len(measured.messages), settings.config):
        emit_failed(pipe, measured, BREAKER_OPEN)
        return Outcome("failed", plan.previous, error=BREAKER_OPEN)

    def make() -> Step[Outcome | Draft]:
        if not (yield from still_asked(pipe, measured)):  # another worker answered it first
            return (
                Outcome("reused", decision.matching) if decision.matching else Outcome("kept", None)
            )
        made = yield from draft_summary(pipe, measured, plan)
        if isinstance(made, Failure):
            return (yield from record_failed(pipe, measured, plan, decision.generation, made))
        if review:  # saved as a draft; the lease is released before the person is asked
            return (yield from save_draft(pipe, measured, decision, plan, made))
        return (yield from store_summary(pipe, measured, decision, plan, made, kind_of(plan)))

    made = yield from exclusively(settings.store, (ns, thread_id, plan.prefix_hash), lookup, make)
    if isinstance(made, Taken):  # another call or worker made it, or never landed it
        if made.record is not None:
            return Outcome("reused", made.record)
        if made.announce:
            emit_failed(pipe, measured, made.error)
        return Outcome("failed", plan.previous, error=made.error)
    if isinstance(made, Draft):  # saved for review, the lease released: now ask
        return (yield from reviewed(pipe, measured, decision, plan, made))
    return made


def summarize_step(
    pipe: Pipeline, precompact: Precompact, state: DecisionInput, config: RunnableConfig
) -> Step[dict[str, Outcome]]:
    """The node: the outcome assemble builds the input from."""
    measured = state["measured"]
    try:
        review = pipe.settings.config.review
        outcome = yield from summarize(pipe, measured, state["decision"], review=review)
        request = measured.control.request
        if request is not None and outcome.action in ("reused", "kept"):  # settled, no summary
            yield from perform(
                consume_request(measured.thread_id, pipe.settings.namespace, request)
            )
    except SummaryStoreError as exc:
        outcome = store_outage(pipe, measured, exc)
    return {"outcome": outcome}
