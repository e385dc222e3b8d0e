"""Leases: one worker at a time summarizes a prefix, across every process sharing a store.

A lease is a row of ``compaction_leases`` with an owner and an expiry. Taking one is a single
``INSERT ... ON CONFLICT DO UPDATE ... WHERE expires_at < now``: it inserts a new row, or takes
over a row whose holder let it expire, and returns nothing while a live lease of another
owner holds the prefix. PostgreSQL makes that statement atomic with its row lock (the clock is
the server's, so hosts need not agree on the time); SQLite with its write lock.

While a lease is held, one daemon thread per process (the heartbeat) renews it every
``lease_ttl / 3`` through the store's sync engine, off any event loop, so a long summary call
keeps its lease while a killed worker's lease expires ``lease_ttl`` after its last renewal.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, Interval, delete, func, literal, update

from langgraph_compaction.store.sql.summaries import UTCDateTime, dialect_insert, leases

__all__ = ["HEARTBEAT", "Heartbeat", "Lease", "acquire", "new_owner", "release", "renew"]

_log = logging.getLogger("langgraph_compaction.store")

_HOST = socket.gethostname()
"""Read once: part of every owner name, so a person can tell which machine holds a lease."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A held lease on one prefix of one thread; give it back with ``release_lease``."""

    thread_id: str
    namespace: str
    prefix_hash: str
    owner: str
    """``hostname:pid:random``, unique per acquisition."""
    expires_at: datetime
    """When the lease lapsed as first taken; the heartbeat pushes the stored expiry on."""


def new_owner() -> str:
    """A fresh owner name: ``hostname:pid:random``."""
    return f"{_HOST}:{os.getpid()}:{secrets.token_hex(6)}"


def _now(conn: Connection) -> ColumnElement[datetime]:
    # PostgreSQL: the server's clock, shared by every host; SQLite lives on one host.
    if conn.dialect.name == "postgresql":
        return func.clock_timestamp(type_=UTCDateTime)
    return literal(datetime.now(UTC), UTCDateTime)


def _later(conn: Connection, seconds: float) -> ColumnElement[Any]:
    if conn.dialect.name == "postgresql":
        return func.clock_timestamp() + literal(timedelta(seconds=seconds), Interval())
    return literal(datetime.now(UTC) + timedelta(seconds=seconds), UTCDateTime)


def _key(lease: Lease) -> list[ColumnElement[bool]]:
    return [
        leases.c.thread_id == lease.thread_id,
        leases.c.namespace == lease.namespace,
        leases.c.prefix_hash == lease.prefix_hash,
        leases.c.owner == lease.owner,
    ]


def acquire(
    conn: Connection, thread_id: str, namespace: str, prefix_hash: str, owner: str, ttl: float
) -> Lease | None:
    """Take the prefix's lease for ``owner``, unless a live lease of another owner holds it."""
    stmt = dialect_insert(conn, leases).values(
        thread_id=thread_id,
        namespace=namespace,
        prefix_hash=prefix_hash,
        owner=owner,
        acquired_at=_now(conn),
        expires_at=_later(conn, ttl),
    )
    taken = stmt.on_conflict_do_update(
        index_elements=[leases.c.thread_id, leases.c.namespace, leases.c.prefix_hash],
        set_={
            "owner": stmt.excluded.owner,
            "acquired_at": stmt.excluded.acquired_at,
            "expires_at": stmt.excluded.expires_at,
        },
        where=leases.c.expires_at < stmt.excluded.acquired_at,
    ).returning(leases.c.owner, leases.c.expires_at)
    row = conn.execute(taken).first()
    if row is None or row.owner != owner:
        return None
    return Lease(thread_id, namespace, prefix_hash, owner, row.expires_at)


def renew(conn: Connection, lease: Lease, ttl: float) -> bool:
    """Push the lease's expiry ``ttl`` on; False when it is no longer this owner's."""
    stmt = update(leases).where(*_key(lease)).values(expires_at=_later(conn, ttl))
    return bool(conn.execute(stmt).rowcount)


def release(conn: Connection, lease: Lease) -> None:
    """Delete the lease if its owner still holds it; a lease already gone is no error."""
    conn.execute(delete(leases).where(*_key(lease)))


@dataclass
class _Held:
    renew: Callable[[Lease], bool]
    interval: float
    due: float
    """When the next renewal is due (``time.monotonic``)."""
    lapses: float
    """When the lease lapses without a renewal; past it, a failing renewal gives up."""


class Heartbeat:
    """The one daemon thread of a process that keeps its held leases alive.

    It starts with the first lease held, sleeps until the next renewal is due, and renews
    through the callable each store registered (a write on the store's sync engine). A lease
    the renewal reports lost (taken over after expiry, or deleted with its thread) is dropped;
    a renewal that fails (store unreachable) is tried again at the next interval.
    """

    def __init__(self) -> None:
        self._held: dict[Lease, _Held] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def hold(self, lease: Lease, renew: Callable[[Lease], bool], ttl: float) -> None:
        """Renew ``lease`` every ``ttl / 3`` seconds until :meth:`drop`."""
        now = time.monotonic()
        with self._wake:
            self._held[lease] = _Held(renew, ttl / 3, now + ttl / 3, now + ttl)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="compaction-lease-heartbeat", daemon=True
                )
                self._thread.start()
            self._wake.notify()

    def drop(self, lease: Lease) -> None:
        """Stop renewing ``lease``."""
        with self._wake:
            self._held.pop(lease, None)

    def held(self) -> list[Lease]:
        """The leases being renewed now."""
        with self._wake:
            return list(self._held)

    def _run(self) -> None:
        while True:
            with self._wake:
                now = time.monotonic()
                due = [(lease, h) for lease, h in self._held.items() if h.due <= now]
                if not due:
                    wait = min((h.due for h in self._held.values()), default=now + 3600) - now
                    self._wake.wait(timeout=wait)
                    continue
            for lease, held in due:
                self._renew_one(lease, held)

    def _renew_one(self, lease: Lease, held: _Held) -> None:
        started = time.monotonic()
        try:
            kept: bool | None = held.renew(lease)
        except Exception as exc:  # the store is down: the next beat tries again
            kept = None
            lapsed = time.monotonic() >= held.lapses
            if lapsed or held.due + held.interval >= held.lapses:  # log the last try only
                _log.warning(
                    "lease on prefix %s of thread %r %s: %s",
                    lease.prefix_hash,
                    lease.thread_id,
                    "lapsed, renewals failed" if lapsed else "could not be renewed",
                    exc,
                )
        with self._wake:
            if lease not in self._held:
                return
            if kept is False or (kept is None and time.monotonic() >= held.lapses):
                del self._held[lease]  # lost: taken over, deleted, or expired unrenewed
                return
            if kept:
                held.lapses = started + 3 * held.interval
            held.due = time.monotonic() + held.interval

    def _after_fork(self) -> None:
        # The child has no heartbeat thread and holds none of its parent's leases.
        self._held = {}
        self._wake = threading.Condition()
        self._thread = None


HEARTBEAT = Heartbeat()
"""The process's one heartbeat."""

os.register_at_fork(after_in_child=HEARTBEAT._after_fork)
