"""SummaryStore's lease methods: one worker at a time summarizes a prefix (see ``_leases``).

A mixin, so that the store's module stays one screenful per concern; it needs only the
store's ``_db`` and ``_lease_ttl``.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from langgraph_compaction.store.database import Database
from langgraph_compaction.store.sql import leases as lease_sql
from langgraph_compaction.store.sql.leases import HEARTBEAT, Lease

__all__ = ["LeaseMethods"]


class LeaseMethods:
    """``acquire_lease`` / ``release_lease`` and their async twins, renewed by the heartbeat."""

    _db: Database
    _lease_ttl: float

    def acquire_lease(self, thread_id: str, namespace: str, prefix_hash: str) -> Lease | None:
        """Take the lease on summarizing this prefix; None while another owner holds it.

        A taken lease is renewed by the process's heartbeat until :meth:`release_lease`; a
        lease whose holder died is free ``lease_ttl`` after its last renewal.
        """
        lease = self._db.run(self._acquire(thread_id, namespace, prefix_hash), write=True)
        return self._hold(lease)

    async def aacquire_lease(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> Lease | None:
        """Async :meth:`acquire_lease`."""
        lease = await self._db.arun(self._acquire(thread_id, namespace, prefix_hash), write=True)
        return self._hold(lease)

    def release_lease(self, lease: Lease) -> None:
        """Give the lease back, if its owner still holds it; never raises for one gone."""
        HEARTBEAT.drop(lease)
        self._db.run(lambda c: lease_sql.release(c, lease), write=True)

    async def arelease_lease(self, lease: Lease) -> None:
        """Async :meth:`release_lease`."""
        HEARTBEAT.drop(lease)
        await self._db.arun(lambda c: lease_sql.release(c, lease), write=True)

    def _acquire(
        self, thread_id: str, namespace: str, prefix_hash: str
    ) -> Callable[[Connection], Lease | None]:
        owner, ttl = lease_sql.new_owner(), self._lease_ttl
        return lambda c: lease_sql.acquire(c, thread_id, namespace, prefix_hash, owner, ttl)

    def _hold(self, lease: Lease | None) -> Lease | None:
        if lease is not None:
            HEARTBEAT.hold(lease, self._renew, self._lease_ttl)
        return lease

    def _renew(self, lease: Lease) -> bool:
        """Called by the heartbeat thread, never on an event loop."""
        return self._db.run(lambda c: lease_sql.renew(c, lease, self._lease_ttl), write=True)
