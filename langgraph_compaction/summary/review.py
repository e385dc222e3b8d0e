"""Review (``review: true``): a new summary is put to a person before its first use.

The summarize node makes the summary (model or compactor), caps it, saves it in the store as a
draft keyed by its prefix hash (with the usage its calls reported, stored with the summary),
releases the prefix's lease, and only then calls LangGraph's ``interrupt()``: LangGraph re-runs
an interrupted node from its start when the run resumes, so the re-run finds the draft and puts
the same text to the answer instead of calling the summarizer again (a person reviews what will
be stored, and the summary is paid for once).

The answer (the value of ``Command(resume=...)``):

- ``{"action": "accept"}``: the draft is stored as the summary (kind ``initial`` or
  ``update``), its ledger as shown, and used from this call on;
- ``{"action": "edit", "summary": "..."}``: the person's text is stored instead, as written
  (kind ``edited``; no not-a-summary check and no cap: a person's words are theirs), with the
  ledger recomputed against it (a ledger in their text is replaced, DESIGN 6.13);
- ``{"action": "reject"}``: nothing is stored and the draft is dropped; that call goes ahead
  as after a failed summary (the newest matching summary, else drop-oldest), reports
  ``action="failed"`` with the error ``"the summary was rejected in review"`` and emits
  ``context_compaction_failed`` with ``cause="review"``. A rejection is a person's verdict,
  not a summarizer failure: it does not count toward the circuit breaker, and the next call
  over the trigger drafts a new summary and asks again.

Anything else fails the call with a ``CompactionConfigError`` naming what is wrong (the draft
stays, so resuming again with a valid answer still works). Reused summaries never interrupt,
and background pre-compaction does nothing while review is on: it runs outside any run, where
no person can be asked.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from langgraph.types import interrupt

from langgraph_compaction.errors import CompactionConfigError, SummaryStoreError, ThreadDeletedError
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.effects import (
    Step,
    StoreCall,
    drop_review,
    next_version,
    perform,
    save_review,
)
from langgraph_compaction.pipeline.records import Decision, Measured, Outcome, Partition
from langgraph_compaction.pipeline.report import IntegrityReport, SummaryUsage
from langgraph_compaction.store import ReviewDraft, storable
from langgraph_compaction.store.summary_store import plumbing
from langgraph_compaction.summary.breaker import emit_failed
from langgraph_compaction.summary.drafting import Draft
from langgraph_compaction.summary.model_call import usage_columns
from langgraph_compaction.summary.saving import DELETED, kind_of, store_summary
from langgraph_compaction.summary.verify import recheck

__all__ = [
    "REJECTED",
    "REVIEW_TYPE",
    "ReviewAnswer",
    "ask_review",
    "draft_key",
    "forget_draft",
    "parse_answer",
    "recall_draft",
    "remember_draft",
    "review_payload",
    "reviewed",
    "save_draft",
    "saved_draft",
]

REVIEW_TYPE = "compaction_review"
"""The ``type`` of the interrupt's payload."""

REJECTED = "the summary was rejected in review"
"""The error a call whose draft was rejected reports."""

ReviewAction = Literal["accept", "edit", "reject"]
_ACTIONS: tuple[ReviewAction, ...] = ("accept", "edit", "reject")


@dataclass(frozen=True, slots=True)
class ReviewAnswer:
    """What the person answered."""

    action: ReviewAction
    summary: str | None = None
    """The edited text (``edit`` only)."""


def review_payload(
    thread_id: str, version: int, summary: str, integrity: IntegrityReport | None = None
) -> dict[str, Any]:
    """The interrupt's value: what the person is asked to review (the summary with its
    ledger, and the identifier check's figures when it ran)."""
    # As stored, and as the server's JSON encoder takes it: a NUL or a lone surrogate (a
    # custom compactor's, a thread id's) becomes U+FFFD, as in the events.
    return {
        "type": REVIEW_TYPE,
        "thread_id": storable(thread_id),
        "version": version,
        "summary": storable(summary),
        "integrity": asdict(integrity) if integrity is not None else None,
    }


def parse_answer(value: object) -> ReviewAnswer:
    """The person's answer, checked.

    Raises:
        CompactionConfigError: not a mapping, no or an unknown ``action``, an unknown key, or
            an ``edit`` without non-blank ``summary`` text.
    """
    where = "the answer to a compaction_review interrupt (Command(resume=...))"
    example = '{"action": "accept"}, {"action": "edit", "summary": "..."} or {"action": "reject"}'
    if not isinstance(value, Mapping):
        raise CompactionConfigError(
            f"{where} must be a mapping such as {example}, got {type(value).__name__}"
        )
    action = value.get("action")
    if action not in _ACTIONS:
        given = f"action {action!r}" if "action" in value else "no 'action'"
        raise CompactionConfigError(
            f"{where} has {given}; give one of accept, edit, reject: {example}"
        )
    allowed = ("action", "summary") if action == "edit" else ("action",)
    unknown = [key for key in value if key not in allowed]
    if unknown:
        raise CompactionConfigError(
            f"{where} has unknown key {unknown[0]!r} for action {action!r}; "
            f"it takes {', '.join(allowed)}"
        )
    if action != "edit":
        return ReviewAnswer(action)
    summary = value.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        got = "blank text" if isinstance(summary, str) else type(summary).__name__
        raise CompactionConfigError(
            f"{where}: action 'edit' needs the edited text as a non-blank string under "
            f"'summary', got {got}"
        )
    return ReviewAnswer("edit", summary.strip())


def ask_review(
    thread_id: str, version: int, summary: str, integrity: IntegrityReport | None = None
) -> ReviewAnswer:
    """Interrupt the run with the draft (first run), or read the answer (the resumed re-run)."""
    return parse_answer(interrupt(review_payload(thread_id, version, summary, integrity)))


_DraftKey = tuple[str, str, str, str]
"""``(store url, namespace, thread_id, prefix hash)``."""

_DRAFTS_KEPT = 256
_drafts: OrderedDict[_DraftKey, Draft] = OrderedDict()
_lock = threading.Lock()


def remember_draft(key: _DraftKey, draft: Draft) -> None:
    """Keep what making a draft cost, for the report and the model column after the resume.

    The store keeps the draft's text; this process also remembers which model made it and
    its figures (bounded: a draft never answered is forgotten after newer ones).
    """
    with _lock:
        _drafts[key] = draft
        _drafts.move_to_end(key)
        while len(_drafts) > _DRAFTS_KEPT:
            _drafts.popitem(last=False)


def recall_draft(key: _DraftKey, text: str) -> Draft | None:
    """The draft remembered under ``key``, when its text is the one the store holds."""
    with _lock:
        draft = _drafts.get(key)
    return draft if draft is not None and draft.text == text else None


def saved_draft(key: _DraftKey) -> Step[Draft | None]:
    """The draft saved for review under ``key`` (the resumed re-run's), or None.

    As this process remembers it, else as the store kept it (its model and usage; how many
    calls made it is not kept).
    """
    _, namespace, thread_id, prefix_hash = key
    saved: ReviewDraft | None = yield from perform(
        StoreCall(
            lambda s: plumbing(s).find_review_draft(thread_id, namespace, prefix_hash),
            lambda s: plumbing(s).afind_review_draft(thread_id, namespace, prefix_hash),
        )
    )
    if saved is None:
        return None
    usage = SummaryUsage(saved.input_tokens, saved.output_tokens, saved.cache_read_tokens)
    stored = Draft(saved.summary, saved.model or "unknown", usage=usage)
    return recall_draft(key, saved.summary) or stored


def forget_draft(key: _DraftKey) -> None:
    """Forget a draft that was answered."""
    with _lock:
        _drafts.pop(key, None)


def draft_key(pipe: Pipeline, measured: Measured, plan: Partition) -> _DraftKey:
    """Where this call's draft is kept: the store, namespace, thread and prefix."""
    settings = pipe.settings
    return (settings.store.url, settings.namespace, measured.thread_id, plan.prefix_hash)


def save_draft(
    pipe: Pipeline, measured: Measured, decision: Decision, plan: Partition, made: Draft
) -> Step[Outcome | Draft]:
    """Save the summary made for ``plan`` as a draft for review (the caller holds the lease)."""
    try:
        yield from perform(
            save_review(
                thread_id=measured.thread_id,
                namespace=pipe.settings.namespace,
                prefix_hash=plan.prefix_hash,
                summary=made.text,
                kind=kind_of(plan),
                model=made.model,
                generation=decision.generation,
                hold_request=_holds_request(measured),
                request_instruction=measured.control.instruction,
                **usage_columns(made.usage),
            )
        )
    except ThreadDeletedError:
        return Outcome("failed", None, calls=made.calls, error=DELETED, usage=made.usage)
    remember_draft(draft_key(pipe, measured, plan), made)
    return made


def _holds_request(measured: Measured) -> bool:
    """A call forced by its run's config (no store request) files one with the draft, with
    its instruction, so the resumed run is forced too and finds the draft whatever config it
    is given; a store request stays pending as it is."""
    control = measured.control
    return control.force and control.request is None


def reviewed(
    pipe: Pipeline, measured: Measured, decision: Decision, plan: Partition, draft: Draft
) -> Step[Outcome]:
    """Put the draft to a person (``interrupt``), then store it, their text, or nothing."""
    ns, thread_id = pipe.settings.namespace, measured.thread_id
    checking = pipe.settings.config.integrity.enabled
    if checking and draft.integrity is None:  # read back from the store: the same check again
        checked = recheck(pipe, measured, plan, draft.text)
        draft = replace(draft, integrity=checked.report, integrity_items=checked.items)
    version = yield from perform(next_version(thread_id, ns))
    # raises GraphInterrupt the first time
    answer = ask_review(thread_id, version, draft.text, draft.integrity)
    key = draft_key(pipe, measured, plan)
    if answer.action == "reject":  # answered: a request for it is consumed with the draft
        yield from perform(drop_review(thread_id, ns, plan.prefix_hash, measured.control.request))
        forget_draft(key)
        emit_failed(pipe, measured, REJECTED, cause="review")
        return Outcome(
            "failed", plan.previous, calls=draft.calls, error=REJECTED, usage=draft.usage
        )
    kind = kind_of(plan)
    if answer.action == "edit":
        assert answer.summary is not None
        draft = replace(draft, text=answer.summary, summary_cut=False)
        if checking:  # the person's prose as written, the ledger recomputed against it
            checked = recheck(pipe, measured, plan, answer.summary)
            draft = replace(
                draft, text=checked.text, integrity=checked.report, integrity_items=checked.items
            )
        kind = "edited"
    outcome = yield from store_summary(pipe, measured, decision, plan, draft, kind)
    with suppress(SummaryStoreError):  # a leftover draft is never read: the summary comes first
        yield from perform(drop_review(thread_id, ns, plan.prefix_hash))
    forget_draft(key)
    return outcome
