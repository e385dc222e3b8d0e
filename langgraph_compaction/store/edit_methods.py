"""SummaryStore's methods for a person's hand on summaries: edit, revoke, review.

A mixin, like ``_leasing``, so that the store's module stays one screenful per concern; it
needs only the store's ``_db`` and ``_retention``. The SQL is in ``_edits``.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from langgraph_compaction.store.database import Database
from langgraph_compaction.store.records import ReviewDraft, SummaryKind, SummaryRecord
from langgraph_compaction.store.sql import edits as edit_sql
from langgraph_compaction.store.sql.controls import check_thread_id
from langgraph_compaction.store.sql.edits import Review, check_edit, check_version

__all__ = ["EditMethods"]


class EditMethods:
    """``edit_summary``, ``revoke_summary``, the reviews, and their async twins."""

    _db: Database
    _retention: int | None

    def edit_summary(
        self, thread_id: str, text: str, *, namespace: str = "default"
    ) -> SummaryRecord:
        """Store ``text`` as a new version of the thread's newest summary in use.

        The new row keeps that summary's boundary, covered messages, prefix hash, rescued
        message ids and source tokens; ``kind="edited"``, ``parent_id`` that summary's id,
        ``model`` None, and ``summary_tokens`` estimated as ``ceil(len(text) / 4)`` (the
        pipeline counts the tokens again when it uses it). Later calls over the same prefix
        reuse the edit. Bumps the thread's control version.

        Raises:
            ValueError: ``text`` blank, ``thread_id`` empty, or no summary in use to edit.
        """
        return self._db.run(self._edit(thread_id, text, namespace), write=True)

    async def aedit_summary(
        self, thread_id: str, text: str, *, namespace: str = "default"
    ) -> SummaryRecord:
        """Async :meth:`edit_summary`."""
        return await self._db.arun(self._edit(thread_id, text, namespace), write=True)

    def _edit(
        self, thread_id: str, text: str, namespace: str
    ) -> Callable[[Connection], SummaryRecord]:
        check_thread_id(thread_id)
        stored, keep = check_edit(text), self._retention
        return lambda conn: edit_sql.edit_summary(conn, thread_id, namespace, stored, keep)

    def revoke_summary(
        self, thread_id: str, *, namespace: str = "default", version: int | None = None
    ) -> int:
        """Withdraw ``version`` (None: the newest in use) and every later version.

        Revoked rows are never served again (``latest_summaries``, ``find_summary``), so the
        next call over the trigger makes a new summary; ``list_summaries`` still lists them,
        with ``revoked_at`` set. Bumps the thread's control version.

        Returns:
            How many versions this call marked revoked.

        Raises:
            ValueError: no such version, or nothing left to revoke.
        """
        return self._db.run(_revoke(thread_id, namespace, version), write=True)

    async def arevoke_summary(
        self, thread_id: str, *, namespace: str = "default", version: int | None = None
    ) -> int:
        """Async :meth:`revoke_summary`."""
        return await self._db.arun(_revoke(thread_id, namespace, version), write=True)

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
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
    ) -> None:
        """Keep a new summary for a person to review (replacing one of the same prefix).

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
        self._db.run(lambda c: edit_sql.save_review(c, review, generation), write=True)

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
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
    ) -> None:
        """Async :meth:`save_review`."""
        usage = (input_tokens, output_tokens, cache_read_tokens)
        review = Review(thread_id, namespace, prefix_hash, summary, kind, model, *usage)
        await self._db.arun(lambda c: edit_sql.save_review(c, review, generation), write=True)

    def find_review(self, thread_id: str, namespace: str, prefix_hash: str) -> str | None:
        """The summary waiting for review for this prefix, or None."""
        return self._db.run(lambda c: edit_sql.find_review(c, thread_id, namespace, prefix_hash))

    async def afind_review(self, thread_id: str, namespace: str, prefix_hash: str) -> str | None:
        """Async :meth:`find_review`."""
        return await self._db.arun(
            lambda c: edit_sql.find_review(c, thread_id, namespace, prefix_hash)
        )

    def find_review_draft(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> ReviewDraft | None:
        """The draft waiting for review for this prefix, with its model and usage, or None."""
        return self._db.run(_find_draft(thread_id, namespace, prefix_hash))

    async def afind_review_draft(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> ReviewDraft | None:
        """Async :meth:`find_review_draft`."""
        return await self._db.arun(_find_draft(thread_id, namespace, prefix_hash))

    def drop_review(self, thread_id: str, namespace: str, prefix_hash: str) -> None:
        """Forget the review of this prefix; nothing happens when there is none."""
        op = _drop(thread_id, namespace, prefix_hash)
        self._db.run(op, write=True)

    async def adrop_review(self, thread_id: str, namespace: str, prefix_hash: str) -> None:
        """Async :meth:`drop_review`."""
        await self._db.arun(_drop(thread_id, namespace, prefix_hash), write=True)


def _revoke(thread_id: str, namespace: str, version: int | None) -> Callable[[Connection], int]:
    check_thread_id(thread_id)
    checked = check_version(version)
    return lambda conn: edit_sql.revoke_summary(conn, thread_id, namespace, checked)


def _find_draft(
    thread_id: str, namespace: str, prefix_hash: str
) -> Callable[[Connection], ReviewDraft | None]:
    return lambda conn: edit_sql.find_review_draft(conn, thread_id, namespace, prefix_hash)


def _drop(thread_id: str, namespace: str, prefix_hash: str) -> Callable[[Connection], None]:
    return lambda conn: edit_sql.drop_review(conn, thread_id, namespace, prefix_hash)
