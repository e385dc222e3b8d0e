"""SummaryStore: one URL serving the sync and the async graph path.

Every operation is one function of ``_tables``, ``_threads`` or ``_leases`` over a sync
connection; ``_database`` runs it on the sync engine, or on the async engine through
``AsyncConnection.run_sync``, so each public method stays a line or two. The summaries and
deletion are here; per-thread state (``_tracking``), leases (``_leasing``), recall
(``_recalling``), steering (``_controlling``) and edits (``_editing``) are mixins.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import TracebackType

from sqlalchemy import Connection

from langgraph_compaction.store.database import Database
from langgraph_compaction.store.db.engine import BUSY_TIMEOUT_S
from langgraph_compaction.store.edit_methods import EditMethods
from langgraph_compaction.store.lease_methods import LeaseMethods
from langgraph_compaction.store.records import (
    IndexedMessage,
    NewSummary,
    SummaryKind,
    SummaryRecord,
    indexed_messages,
    message_ids,
)
from langgraph_compaction.store.search_methods import RecallMethods
from langgraph_compaction.store.sql import controls as control_sql
from langgraph_compaction.store.sql import search as search_sql
from langgraph_compaction.store.sql import summaries as summary_sql
from langgraph_compaction.store.sql import threads as thread_sql
from langgraph_compaction.store.sql.integrity import find_problems
from langgraph_compaction.store.steering_methods import ControlMethods
from langgraph_compaction.store.thread_methods import ThreadStateMethods

__all__ = ["SummaryStore"]

_ADD_ATTEMPTS = 5
"""Tries of one add_summary when a writer outside this package takes the same version."""


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
    return float(value)


class SummaryStore(ThreadStateMethods, LeaseMethods, RecallMethods, ControlMethods, EditMethods):
    """Summaries and per-thread state in a SQLite file or a PostgreSQL database.

    One object serves the sync and the async graph path, is safe to share across threads
    (the sync engine's connection pool), and creates or upgrades its tables on first use
    (Alembic migrations shipped in the package, run off the event loop on the async path; a
    store written by a newer release is refused with SummaryStoreError naming both schema
    versions). Every failure is a SummaryStoreError, and the next call tries again. A NUL
    or a lone surrogate, which the databases refuse, is stored as U+FFFD wherever it occurs
    (``_text``); a database deleted, replaced or dropped under a running store is opened
    again, its schema made anew, on the next call (``_reopen``).

    ```python
    store = SummaryStore("sqlite:///compaction.db", retention=20)
    store.list_summaries("thread-1")
    await store.alist_summaries("thread-1")
    ```

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
            busy_timeout: seconds a SQLite connection waits for another writer's lock (and a
                PostgreSQL connection attempt for the server) before the call fails.

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
        """Seconds a connection waits for a lock (SQLite) or the server (PostgreSQL)."""
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

    # -- summaries ---------------------------------------------------------------------------

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
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
    ) -> SummaryRecord:
        """Store a summary as the thread's next version, in one transaction.

        If the thread already holds a summary of this ``prefix_hash`` (say another worker just
        wrote it), nothing is written and that row is returned. With ``retention`` set, the
        versions beyond it are deleted in the same transaction (indexed messages stay). With
        ``generation`` (from :meth:`thread_state`), a thread deleted since then gets nothing
        written. ``recall_messages`` (total recall: the messages this summary newly covers)
        are indexed in the same transaction, each message once, for :meth:`search_messages`.
        ``steered``: the summary was asked for (a forced call, a request) and made under the
        triggers, where calls do not otherwise look in the store; storing it bumps the
        thread's control version, so that every process serving the thread looks it up.
        ``input_tokens``, ``output_tokens``, ``cache_read_tokens``: what the summary call(s)
        cost as the model reported them (the sum over several calls); None, stored as NULL,
        when it reported nothing: never pass 0 for "not reported".

        Returns:
            The stored row, with its id, version and created_at.

        Raises:
            ValueError: the summary is blank or a field invalid (a usage count negative, say);
                nothing is stored.
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
        )
        op = self._insert(new, generation, recall_messages, steered)
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
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
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
        )
        op = self._insert(new, generation, recall_messages, steered)
        return await self._db.arun(op, write=True, attempts=_ADD_ATTEMPTS)

    def _insert(
        self,
        new: NewSummary,
        generation: int | None,
        recall: Sequence[IndexedMessage],
        steered: bool,
    ) -> Callable[[Connection], SummaryRecord]:
        batch = indexed_messages(recall)

        def on_insert(conn: Connection) -> None:
            if batch:  # recall on
                search_sql.index_messages(conn, new.thread_id, new.namespace, batch)
            if steered:
                control_sql.bump_controls(conn, new.thread_id, new.namespace)

        def insert(conn: Connection) -> SummaryRecord:
            thread_sql.check_generation(conn, new.thread_id, new.namespace, generation)
            if not batch and not steered:
                return summary_sql.insert_summary(conn, new, self._retention)
            return summary_sql.insert_summary(conn, new, self._retention, on_insert)

        return insert

    # -- deletion ----------------------------------------------------------------------------

    def delete_thread(self, thread_id: str, namespace: str | None = None) -> int:
        """Delete the thread's summaries, indexed messages, state, pins, reviews, pending
        request and leases in one namespace (None: in all), in one transaction.

        Final: the thread's generation goes up in the same transaction, so a summary computed
        before (here or in another process) that carries the old generation is refused, and
        :meth:`deletion_epoch` changes for every store of this process on this database.

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

    def deletion_epoch(self, thread_id: str, namespace: str) -> int:
        """How many deletions of the thread this process made on this database; no I/O.

        Shared by every SummaryStore of the process on the same database: record it beside a
        cached summary, and stop serving that summary once the epoch has changed.
        """
        return thread_sql.DELETIONS.epoch(self._db.identity, thread_id, namespace)

    # -- upkeep ------------------------------------------------------------------------------

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
