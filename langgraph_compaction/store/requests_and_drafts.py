"""The store calls of steering only the pipeline makes: requests and review drafts.

A compaction request is read while it is pending and consumed in the transaction that stores
its summary (``Plumbing.add_summary``), answers its review (``drop_review``), or settles its
call without one (``consume_request``); never before, so a review's interrupt or a failed
summary does not lose it (DESIGN 6.11). A review draft is a new summary waiting for a person.
"""

from __future__ import annotations

from langgraph_compaction.store import operations as ops
from langgraph_compaction.store.database import Database
from langgraph_compaction.store.records import CompactionRequest, ReviewDraft, SummaryKind
from langgraph_compaction.store.sql.edits import Review

__all__ = ["RequestsAndDrafts"]


class RequestsAndDrafts:
    """Requests and review drafts, each call with its async twin; part of ``Plumbing``."""

    _db: Database

    # -- requests ----------------------------------------------------------------------------

    def pending_request(self, thread_id: str, namespace: str) -> CompactionRequest | None:
        """The thread's pending request, left pending; None when there is none."""
        return self._db.run(ops.pending_request(thread_id, namespace))

    async def apending_request(self, thread_id: str, namespace: str) -> CompactionRequest | None:
        """Async :meth:`pending_request`."""
        return await self._db.arun(ops.pending_request(thread_id, namespace))

    def consume_request(self, thread_id: str, namespace: str, request: CompactionRequest) -> bool:
        """Consume ``request`` (its call settled without a new summary), unless another
        instruction joined it since; True for the one caller, of all processes racing for
        it, that consumed it."""
        return self._db.run(ops.consume_request(thread_id, namespace, request), write=True)

    async def aconsume_request(
        self, thread_id: str, namespace: str, request: CompactionRequest
    ) -> bool:
        """Async :meth:`consume_request`."""
        return await self._db.arun(ops.consume_request(thread_id, namespace, request), write=True)

    # -- review drafts -----------------------------------------------------------------------

    def save_review(
        self,
        *,
        thread_id: str,
        namespace: str,
        prefix_hash: str,
        summary: str,
        kind: SummaryKind,
        model: str | None,
        generation: int | None = None,
        hold_request: bool = False,
        request_instruction: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
    ) -> None:
        """Keep a new summary for a person to review (replacing one of the same prefix).

        ``hold_request``: the draft of a call forced by its run's config: a request with
        ``request_instruction`` is filed in the same transaction unless one is pending, so the
        resumed run is forced too and finds the draft.

        A review is not a summary: no summary method returns it. ``input_tokens``,
        ``output_tokens``, ``cache_read_tokens``: what the draft's summary call(s) cost
        (None: not reported), given back by :meth:`find_review_draft` so that the summary
        stored on acceptance carries them.

        Raises:
            ValueError: the summary blank, the kind unknown, the prefix hash empty or a usage
                count negative.
            ThreadDeletedError: ``generation`` given and the thread deleted since.
        """
        usage = (input_tokens, output_tokens, cache_read_tokens)
        review = Review(thread_id, namespace, prefix_hash, summary, kind, model, *usage)
        self._db.run(
            ops.save_review(review, generation, hold_request, request_instruction), write=True
        )

    async def asave_review(
        self,
        *,
        thread_id: str,
        namespace: str,
        prefix_hash: str,
        summary: str,
        kind: SummaryKind,
        model: str | None,
        generation: int | None = None,
        hold_request: bool = False,
        request_instruction: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
    ) -> None:
        """Async :meth:`save_review`."""
        usage = (input_tokens, output_tokens, cache_read_tokens)
        review = Review(thread_id, namespace, prefix_hash, summary, kind, model, *usage)
        await self._db.arun(
            ops.save_review(review, generation, hold_request, request_instruction), write=True
        )

    def find_review_draft(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> ReviewDraft | None:
        """The draft waiting for review for this prefix, with its model and usage, or None."""
        return self._db.run(ops.find_review_draft(thread_id, namespace, prefix_hash))

    async def afind_review_draft(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> ReviewDraft | None:
        """Async :meth:`find_review_draft`."""
        return await self._db.arun(ops.find_review_draft(thread_id, namespace, prefix_hash))

    def drop_review(
        self,
        thread_id: str,
        namespace: str,
        prefix_hash: str,
        request: CompactionRequest | None = None,
    ) -> None:
        """Forget the review of this prefix (nothing happens when there is none); with
        ``request``, consume it in the same transaction: a rejection answers it."""
        self._db.run(ops.drop_review(thread_id, namespace, prefix_hash, request), write=True)

    async def adrop_review(
        self,
        thread_id: str,
        namespace: str,
        prefix_hash: str,
        request: CompactionRequest | None = None,
    ) -> None:
        """Async :meth:`drop_review`."""
        op = ops.drop_review(thread_id, namespace, prefix_hash, request)
        await self._db.arun(op, write=True)
