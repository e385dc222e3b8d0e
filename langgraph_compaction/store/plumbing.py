"""The store calls only the pipeline makes: not part of the API.

Writing summaries, the leases, the circuit breaker's failure counts, calibration, the control
version (the requests and review drafts: ``requests_and_drafts``). Each SummaryStore holds
one ``Plumbing`` on its own ``Database`` and hands it out through ``summary_store.plumbing``;
a person or an agent's code uses the methods of ``SummaryStore`` instead. Every call is one
function of the ``sql`` modules over a sync connection, run by ``Database`` sync or async.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_compaction.store import operations as ops
from langgraph_compaction.store.database import Database
from langgraph_compaction.store.records import (
    CompactionRequest,
    IndexedMessage,
    IntegrityColumns,
    NewSummary,
    SummaryKind,
    SummaryRecord,
    ThreadControls,
    ThreadState,
    message_ids,
)
from langgraph_compaction.store.requests_and_drafts import RequestsAndDrafts
from langgraph_compaction.store.sql import leases as lease_sql
from langgraph_compaction.store.sql import summaries as summary_sql
from langgraph_compaction.store.sql import threads as thread_sql
from langgraph_compaction.store.sql.leases import HEARTBEAT, Lease

__all__ = ["Plumbing"]

_ADD_ATTEMPTS = 5
"""Tries of one add_summary when a writer outside this package takes the same version."""

_UNSTEERED = ThreadControls(0, False)


class Plumbing(RequestsAndDrafts):
    """One store's pipeline calls, each with its async twin (requests and review drafts
    in :class:`RequestsAndDrafts`)."""

    def __init__(self, db: Database, *, retention: int | None, lease_ttl: float) -> None:
        self._db = db
        self._retention = retention
        self._lease_ttl = lease_ttl

    # -- summaries ---------------------------------------------------------------------------

    def next_version(self, thread_id: str, namespace: str = "default") -> int:
        """The version the thread's next summary gets: one more than its newest, revoked ones
        included (1 for the first); one ``max`` over the thread's index."""
        return self._db.run(lambda c: summary_sql.next_version(c, thread_id, namespace))

    async def anext_version(self, thread_id: str, namespace: str = "default") -> int:
        """Async :meth:`next_version`."""
        return await self._db.arun(lambda c: summary_sql.next_version(c, thread_id, namespace))

    def find_summary(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> SummaryRecord | None:
        """The thread's newest summary in use of exactly this prefix (an edit of it, if
        one was made), or None."""
        return self._db.run(
            lambda c: summary_sql.find_summary(c, thread_id, namespace, prefix_hash)
        )

    async def afind_summary(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> SummaryRecord | None:
        """Async :meth:`find_summary`."""
        return await self._db.arun(
            lambda c: summary_sql.find_summary(c, thread_id, namespace, prefix_hash)
        )

    def add_summary(
        self,
        *,
        thread_id: str,
        namespace: str,
        parent_id: str | None,
        boundary_message_id: str,
        covered_messages: int,
        prefix_hash: str,
        summary: str,
        summary_tokens: int,
        source_tokens: int,
        kind: SummaryKind,
        model: str | None,
        rescued_message_ids: Sequence[str],
        generation: int | None = None,
        recall_messages: Sequence[IndexedMessage] = (),
        steered: bool = False,
        request: CompactionRequest | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
        integrity: IntegrityColumns | None = None,
    ) -> SummaryRecord:
        """Store a summary as the thread's next version, in one transaction.

        If the thread already holds a summary of this ``prefix_hash`` (say another worker just
        wrote it), nothing is written and that row is returned. With ``retention`` set, the
        versions beyond it are deleted in the same transaction (indexed messages stay). With
        ``generation`` (from ``thread_state``), a thread deleted since then gets nothing
        written. ``recall_messages`` (total recall: the messages this summary newly covers)
        are indexed in the same transaction, each message once, for ``search_messages``.
        ``steered``: the summary was asked for (a forced call, a request) and made under the
        triggers, where calls do not otherwise look in the store; storing it bumps the
        thread's control version, so that every process serving the thread looks it up.
        ``request``: the compaction request this summary answers, consumed in the same
        transaction (unless another instruction joined it since).
        ``input_tokens``, ``output_tokens``, ``cache_read_tokens``: what the summary call(s)
        cost as the model reported them (the sum over several calls); None, stored as NULL,
        when it reported nothing: never pass 0 for "not reported".
        ``integrity``: what the integrity check (DESIGN 6.13) found for this summary (the
        identifiers it kept, the ledger lines appended and dropped, the artifacts, whether it
        was repaired, the ledger's items as JSON), stored in the ``integrity_*`` columns;
        None, stored as NULLs, when no check ran (the check turned off).

        Returns:
            The stored row, with its id, version and created_at.

        Raises:
            ValueError: the summary is blank or a field invalid (a usage count negative, say,
                or ``integrity`` not an IntegrityColumns); nothing is stored.
            ThreadDeletedError: the thread's generation is no longer ``generation``.
            SummaryStoreError: the database failed; nothing is stored.
        """
        new = NewSummary(
            thread_id=thread_id,
            namespace=namespace,
            parent_id=parent_id,
            boundary_message_id=boundary_message_id,
            covered_messages=covered_messages,
            prefix_hash=prefix_hash,
            summary=summary,
            summary_tokens=summary_tokens,
            source_tokens=source_tokens,
            kind=kind,
            model=model,
            rescued_message_ids=message_ids(rescued_message_ids),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            integrity=integrity,
        )
        op = ops.insert_summary(new, self._retention, generation, recall_messages, steered, request)
        return self._db.run(op, write=True, attempts=_ADD_ATTEMPTS)

    async def aadd_summary(
        self,
        *,
        thread_id: str,
        namespace: str,
        parent_id: str | None,
        boundary_message_id: str,
        covered_messages: int,
        prefix_hash: str,
        summary: str,
        summary_tokens: int,
        source_tokens: int,
        kind: SummaryKind,
        model: str | None,
        rescued_message_ids: Sequence[str],
        generation: int | None = None,
        recall_messages: Sequence[IndexedMessage] = (),
        steered: bool = False,
        request: CompactionRequest | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
        integrity: IntegrityColumns | None = None,
    ) -> SummaryRecord:
        """Async :meth:`add_summary`."""
        new = NewSummary(
            thread_id=thread_id,
            namespace=namespace,
            parent_id=parent_id,
            boundary_message_id=boundary_message_id,
            covered_messages=covered_messages,
            prefix_hash=prefix_hash,
            summary=summary,
            summary_tokens=summary_tokens,
            source_tokens=source_tokens,
            kind=kind,
            model=model,
            rescued_message_ids=message_ids(rescued_message_ids),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            integrity=integrity,
        )
        op = ops.insert_summary(new, self._retention, generation, recall_messages, steered, request)
        return await self._db.arun(op, write=True, attempts=_ADD_ATTEMPTS)

    def deletion_epoch(self, thread_id: str, namespace: str) -> int:
        """How many deletions of the thread this process made on this database; no I/O.

        Shared by every SummaryStore of the process on the same database: record it beside a
        cached summary, and stop serving that summary once the epoch has changed.
        """
        return thread_sql.DELETIONS.epoch(self._db.identity, thread_id, namespace)

    # -- leases: one worker at a time summarizes a prefix (see ``sql.leases``) ---------------

    def acquire_lease(self, thread_id: str, namespace: str, prefix_hash: str) -> Lease | None:
        """Take the lease on summarizing this prefix; None while another owner holds it.

        A taken lease is renewed by the process's heartbeat until :meth:`release_lease`; a
        lease whose holder died is free ``lease_ttl`` after its last renewal.
        """
        op = ops.acquire_lease(thread_id, namespace, prefix_hash, self._lease_ttl)
        return self._hold(self._db.run(op, write=True))

    async def aacquire_lease(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> Lease | None:
        """Async :meth:`acquire_lease`."""
        op = ops.acquire_lease(thread_id, namespace, prefix_hash, self._lease_ttl)
        return self._hold(await self._db.arun(op, write=True))

    def release_lease(self, lease: Lease) -> None:
        """Give the lease back, if its owner still holds it; never raises for one gone."""
        HEARTBEAT.drop(lease)
        self._db.run(lambda c: lease_sql.release(c, lease), write=True)

    async def arelease_lease(self, lease: Lease) -> None:
        """Async :meth:`release_lease`."""
        HEARTBEAT.drop(lease)
        await self._db.arun(lambda c: lease_sql.release(c, lease), write=True)

    def _hold(self, lease: Lease | None) -> Lease | None:
        if lease is not None:
            HEARTBEAT.hold(lease, self._renew, self._lease_ttl)
        return lease

    def _renew(self, lease: Lease) -> bool:
        """Called by the heartbeat thread, never on an event loop."""
        return self._db.run(lambda c: lease_sql.renew(c, lease, self._lease_ttl), write=True)

    # -- the circuit breaker and calibration -------------------------------------------------

    def record_failure(
        self,
        thread_id: str,
        namespace: str,
        *,
        message_count: int,
        error: str,
        generation: int | None = None,
    ) -> ThreadState:
        """Count a failed summary call, made at a history of ``message_count`` messages.

        Raises:
            ThreadDeletedError: ``generation`` given and the thread deleted since.
        """
        op = ops.record_failure(thread_id, namespace, message_count, error, generation)
        return self._db.run(op, write=True)

    async def arecord_failure(
        self,
        thread_id: str,
        namespace: str,
        *,
        message_count: int,
        error: str,
        generation: int | None = None,
    ) -> ThreadState:
        """Async :meth:`record_failure`."""
        op = ops.record_failure(thread_id, namespace, message_count, error, generation)
        return await self._db.arun(op, write=True)

    def reset_failures(
        self, thread_id: str, namespace: str, *, generation: int | None = None
    ) -> None:
        """Zero the failure count after a successful summary (see ``generation`` above)."""
        self._db.run(ops.reset_failures(thread_id, namespace, generation), write=True)

    async def areset_failures(
        self, thread_id: str, namespace: str, *, generation: int | None = None
    ) -> None:
        """Async :meth:`reset_failures`."""
        await self._db.arun(ops.reset_failures(thread_id, namespace, generation), write=True)

    def set_calibration(
        self, thread_id: str, namespace: str, ratio: float, *, generation: int | None = None
    ) -> None:
        """Store the thread's measured/estimated token ratio (finite, > 0; else ValueError)."""
        self._db.run(ops.set_calibration(thread_id, namespace, ratio, generation), write=True)

    async def aset_calibration(
        self, thread_id: str, namespace: str, ratio: float, *, generation: int | None = None
    ) -> None:
        """Async :meth:`set_calibration`."""
        await self._db.arun(
            ops.set_calibration(thread_id, namespace, ratio, generation), write=True
        )

    # -- steering: the control version and taking a request ----------------------------------

    def thread_controls(self, thread_id: str, namespace: str) -> ThreadControls:
        """The thread's control version and whether a request is pending, in one statement.

        ``ThreadControls(0, False)`` for a thread never steered nor deleted. The version
        changes with every request, pin, unpin, edit, revoke and deletion of the thread. It
        runs before every model call, also those that pass through: on a SQLite file that does
        not exist yet it creates nothing (nobody can have steered a thread there).
        """
        if self._db.not_created():
            return _UNSTEERED
        return self._db.read_controls(thread_id, namespace)

    async def athread_controls(self, thread_id: str, namespace: str) -> ThreadControls:
        """Async :meth:`thread_controls`."""
        if self._db.not_created():
            return _UNSTEERED
        return await self._db.aread_controls(thread_id, namespace)
