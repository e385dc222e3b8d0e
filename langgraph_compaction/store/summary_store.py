"""SummaryStore: what a person or an agent's code calls, on one URL, sync and async.

Its public methods read (``list_summaries``, ``latest_summaries``, ``search_messages``,
``thread_state``), steer (``request_compaction``, the pins, ``edit_summary``,
``revoke_summary``) and keep house (``delete_thread``, ``check_integrity``, ``close``), each
with its async twin. The calls only the pipeline makes are on the store's ``Plumbing``,
reached through :func:`plumbing` and not part of the API. Every method runs one function of
a sync connection (``operations``, or a ``sql`` function) through ``Database``: on the sync
engine, or on the async engine through ``AsyncConnection.run_sync``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import TracebackType

from langgraph_compaction.store import operations as ops
from langgraph_compaction.store.database import Database
from langgraph_compaction.store.db.engine import BUSY_TIMEOUT_S
from langgraph_compaction.store.plumbing import Plumbing
from langgraph_compaction.store.records import RecalledMessage, SummaryRecord, ThreadState
from langgraph_compaction.store.sql import controls as control_sql
from langgraph_compaction.store.sql import summaries as summary_sql
from langgraph_compaction.store.sql import threads as thread_sql
from langgraph_compaction.store.sql.integrity import find_problems

__all__ = ["SummaryStore", "plumbing"]


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
    return float(value)


class SummaryStore:
    """Summaries and per-thread state in a SQLite file or a PostgreSQL database.

    One object serves the sync and the async graph path, is safe to share across threads
    (the sync engine's connection pool), and creates or upgrades its tables on first use
    (Alembic migrations shipped in the package, run off the event loop on the async path; a
    store written by a newer release is refused with SummaryStoreError naming both schema
    versions). Every failure is a SummaryStoreError, and the next call tries again. A NUL
    or a lone surrogate, which the databases refuse, is stored as U+FFFD wherever it occurs;
    a database deleted, replaced or dropped under a running store is opened again, its schema
    made anew, on the next call.

    ```python
    store = SummaryStore("sqlite:///compaction.db", retention=20)
    store.list_summaries("thread-1")
    await store.alist_summaries("thread-1")
    ```

    Its methods read, steer and keep house, each with an async twin; what the compaction
    pipeline itself does with the store (writing summaries, leases, failure counts) is not
    part of this API.

    The async engine belongs to the event loop that first used it. Used from another loop
    later (one loop after another, as in tests), the store closes it and builds a new one;
    using one store from two loops *at the same time* is not supported. Call ``aclose()``
    before a loop ends. With ``sqlite:///:memory:`` the sync and the async path each get their
    own database, not shared (and leases taken on the async path are not renewed).
    """

    def __init__(
        self,
        url: str = "sqlite:///compaction.db",
        *,
        retention: int | None = None,
        lease_ttl: float = 30.0,
        busy_timeout: float = BUSY_TIMEOUT_S,
    ) -> None:
        """Prepare the store at ``url``; nothing connects until the first call.

        Args:
            url: ``sqlite:///path.db``, ``sqlite:///:memory:`` or ``postgresql://...``; the
                async driver is derived from it.
            retention: keep only this many newest versions per thread; None keeps all. The
                oldest kept row's ``parent_id`` may then name a deleted row.
            lease_ttl: seconds a summary lease outlives its holder's last renewal; the
                holder's process renews it every ``lease_ttl / 3``.
            busy_timeout: the longest any store call waits before it fails (and the agent's
                call goes ahead as on an outage): a SQLite connection for another writer's
                lock; on PostgreSQL the connection attempt, ``lock_timeout``,
                ``statement_timeout`` and TCP keepalives; every lock this process takes.

        Raises:
            SummaryStoreError: the URL cannot be parsed or names an unsupported database.
            ValueError: retention is not a positive integer, or a timeout not > 0.
        """
        if retention is not None and (isinstance(retention, bool) or retention < 1):
            raise ValueError(f"retention must be a positive integer or None, got {retention!r}")
        self._url = url
        self._retention = retention
        self._lease_ttl = _positive("lease_ttl", lease_ttl)
        self._db = Database(url, _positive("busy_timeout", busy_timeout))
        self._plumbing = Plumbing(self._db, retention=retention, lease_ttl=self._lease_ttl)

    @property
    def url(self) -> str:
        """The URL as given, password included (``repr`` masks it)."""
        return self._url

    @property
    def retention(self) -> int | None:
        """How many newest versions per thread are kept; None keeps all."""
        return self._retention

    @property
    def lease_ttl(self) -> float:
        """Seconds a lease outlives its holder's last renewal."""
        return self._lease_ttl

    @property
    def busy_timeout(self) -> float:
        """Seconds any store call waits for a lock, a statement or the server before failing."""
        return self._db.busy_timeout

    def __repr__(self) -> str:
        return f"SummaryStore({self._db.where!r}, retention={self._retention!r})"

    def close(self) -> None:
        """Close the sync engine's pooled connections; the store reopens on next use."""
        self._db.close()

    async def aclose(self) -> None:
        """Close the async and the sync engine's connections; the store reopens on next use."""
        await self._db.aclose()

    def __enter__(self) -> SummaryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> SummaryStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- reading -----------------------------------------------------------------------------

    def list_summaries(self, thread_id: str, namespace: str = "default") -> list[SummaryRecord]:
        """Every stored summary of the thread, oldest (lowest version) first, revoked ones
        included (``revoked_at`` set)."""
        return self._db.run(lambda c: summary_sql.list_summaries(c, thread_id, namespace))

    async def alist_summaries(
        self, thread_id: str, namespace: str = "default"
    ) -> list[SummaryRecord]:
        """Async :meth:`list_summaries`."""
        return await self._db.arun(lambda c: summary_sql.list_summaries(c, thread_id, namespace))

    def latest_summaries(
        self, thread_id: str, namespace: str = "default", limit: int = 8
    ) -> list[SummaryRecord]:
        """The newest ``limit`` summaries of the thread in use (not revoked), newest first:
        the reuse candidates."""
        return self._db.latest_summaries(thread_id, namespace, limit)

    async def alatest_summaries(
        self, thread_id: str, namespace: str = "default", limit: int = 8
    ) -> list[SummaryRecord]:
        """Async :meth:`latest_summaries`."""
        return await self._db.alatest_summaries(thread_id, namespace, limit)

    def search_messages(
        self, thread_id: str, query: str, *, namespace: str = "default", limit: int = 5
    ) -> list[RecalledMessage]:
        """The thread's evicted messages that best match ``query``, best first (total recall:
        a summary indexes the messages it newly covers, in its own transaction).

        Any text is a valid query: only its words are searched (stop words dropped, words
        stemmed), never FTS or tsquery syntax; a query without a searchable word returns [].

        Raises:
            ValueError: ``limit`` is not between 1 and 100.
            SummaryStoreError: the database failed.
        """
        return self._db.run(ops.search_messages(thread_id, query, namespace, limit))

    async def asearch_messages(
        self, thread_id: str, query: str, *, namespace: str = "default", limit: int = 5
    ) -> list[RecalledMessage]:
        """Async :meth:`search_messages`."""
        return await self._db.arun(ops.search_messages(thread_id, query, namespace, limit))

    def thread_state(self, thread_id: str, namespace: str = "default") -> ThreadState:
        """The thread's failure count, calibration and current generation."""
        return self._db.run(lambda c: thread_sql.thread_state(c, thread_id, namespace))

    async def athread_state(self, thread_id: str, namespace: str = "default") -> ThreadState:
        """Async :meth:`thread_state`."""
        return await self._db.arun(lambda c: thread_sql.thread_state(c, thread_id, namespace))

    # -- steering (DESIGN 6.11) --------------------------------------------------------------

    def request_compaction(
        self, thread_id: str, *, namespace: str = "default", instruction: str | None = None
    ) -> None:
        """Ask that the thread's next compaction call compact as if forced, then forget it.

        A second request before that call keeps one request, its instruction both texts
        joined by a blank line (blank ones left out). Bumps the thread's control version.

        Raises:
            ValueError: ``thread_id`` is not a non-empty str, or ``instruction`` not a str.
        """
        self._db.run(ops.request_compaction(thread_id, namespace, instruction), write=True)

    async def arequest_compaction(
        self, thread_id: str, *, namespace: str = "default", instruction: str | None = None
    ) -> None:
        """Async :meth:`request_compaction`."""
        await self._db.arun(ops.request_compaction(thread_id, namespace, instruction), write=True)

    def pin_messages(
        self, thread_id: str, message_ids: Sequence[str], *, namespace: str = "default"
    ) -> None:
        """Pin messages by id: compaction never evicts nor prunes them. Pinning twice is a
        no-op; a new pin bumps the thread's control version.

        Raises:
            ValueError: ``thread_id`` empty, ``message_ids`` one string, or an id not a
                non-empty str.
        """
        op = ops.change_pins(control_sql.pin_messages, thread_id, message_ids, namespace)
        self._db.run(op, write=True)

    async def apin_messages(
        self, thread_id: str, message_ids: Sequence[str], *, namespace: str = "default"
    ) -> None:
        """Async :meth:`pin_messages`."""
        op = ops.change_pins(control_sql.pin_messages, thread_id, message_ids, namespace)
        await self._db.arun(op, write=True)

    def unpin_messages(
        self, thread_id: str, message_ids: Sequence[str], *, namespace: str = "default"
    ) -> None:
        """Unpin messages by id (ids not pinned are ignored); bumps the control version when
        one was pinned.

        Raises:
            ValueError: as :meth:`pin_messages`.
        """
        op = ops.change_pins(control_sql.unpin_messages, thread_id, message_ids, namespace)
        self._db.run(op, write=True)

    async def aunpin_messages(
        self, thread_id: str, message_ids: Sequence[str], *, namespace: str = "default"
    ) -> None:
        """Async :meth:`unpin_messages`."""
        op = ops.change_pins(control_sql.unpin_messages, thread_id, message_ids, namespace)
        await self._db.arun(op, write=True)

    def pinned_messages(self, thread_id: str, *, namespace: str = "default") -> frozenset[str]:
        """The ids of the thread's pinned messages."""
        return self._db.run(lambda c: control_sql.pinned_messages(c, thread_id, namespace))

    async def apinned_messages(
        self, thread_id: str, *, namespace: str = "default"
    ) -> frozenset[str]:
        """Async :meth:`pinned_messages`."""
        return await self._db.arun(lambda c: control_sql.pinned_messages(c, thread_id, namespace))

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
        op = ops.edit_summary(thread_id, text, namespace, self._retention)
        return self._db.run(op, write=True)

    async def aedit_summary(
        self, thread_id: str, text: str, *, namespace: str = "default"
    ) -> SummaryRecord:
        """Async :meth:`edit_summary`."""
        op = ops.edit_summary(thread_id, text, namespace, self._retention)
        return await self._db.arun(op, write=True)

    def revoke_summary(
        self, thread_id: str, *, namespace: str = "default", version: int | None = None
    ) -> int:
        """Withdraw ``version`` (None: the newest in use) and every later version.

        Revoked rows are never served again, so the next call over the trigger makes a new
        summary; ``list_summaries`` still lists them, with ``revoked_at`` set. Bumps the
        thread's control version.

        Returns:
            How many versions this call marked revoked.

        Raises:
            ValueError: no such version, or nothing left to revoke.
        """
        return self._db.run(ops.revoke_summary(thread_id, namespace, version), write=True)

    async def arevoke_summary(
        self, thread_id: str, *, namespace: str = "default", version: int | None = None
    ) -> int:
        """Async :meth:`revoke_summary`."""
        return await self._db.arun(ops.revoke_summary(thread_id, namespace, version), write=True)

    # -- housekeeping ------------------------------------------------------------------------

    def delete_thread(self, thread_id: str, namespace: str | None = None) -> int:
        """Delete the thread's summaries, indexed messages, state, pins, reviews, pending
        request and leases in one namespace (None: in all), in one transaction.

        Final: the thread's generation goes up in the same transaction, so a summary computed
        before (here or in another process) that carries the old generation is refused, and
        every store of this process on this database stops serving the summary it holds in
        memory for the thread.

        Returns:
            How many summaries were deleted.
        """
        try:
            return self._db.run(
                lambda c: thread_sql.delete_thread(c, thread_id, namespace), write=True
            )
        finally:  # also after a failure: forgetting a cached summary too many is harmless
            thread_sql.DELETIONS.bump(self._db.identity, thread_id, namespace)

    async def adelete_thread(self, thread_id: str, namespace: str | None = None) -> int:
        """Async :meth:`delete_thread`."""
        try:
            return await self._db.arun(
                lambda c: thread_sql.delete_thread(c, thread_id, namespace), write=True
            )
        finally:
            thread_sql.DELETIONS.bump(self._db.identity, thread_id, namespace)

    def check_integrity(self) -> list[str]:
        """Check the rows against the store's rules (and, on SQLite, the file's structure).

        Meant for after a crash, or before trusting a restored copy; it reads every row.

        Returns:
            One sentence per problem found; an empty list when the store is sound.
        """
        return self._db.run(find_problems, single=False)

    async def acheck_integrity(self) -> list[str]:
        """Async :meth:`check_integrity`."""
        return await self._db.arun(find_problems, single=False)


def plumbing(store: SummaryStore) -> Plumbing:
    """The store's calls only the pipeline makes (leases, failures, calibration, the control
    version, review drafts, writing summaries): not part of the API."""
    return store._plumbing
