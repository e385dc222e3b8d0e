"""One summary per prefix: this process's calls share one flight, a fleet's workers one lease.

The first call of a process that needs a prefix's summary owns its flight; the others wait for
it and reuse what it stored. The owner then takes the store's lease on the prefix, so a worker
of another process waits instead of paying for the same summary, and reuses it once stored.
A wait is bounded (:data:`LEASE_WAIT_S`): past it the call fails over, as after a failed
summary. A lease left behind by a cancelled call is released off this thread and loop; one
that is never released expires in the store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TypeVar

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.pipeline.effects import (
    Sleep,
    Step,
    StoreCall,
    WaitFlight,
    acquire_lease,
    perform,
    release_lease,
)
from langgraph_compaction.pipeline.flights import FLIGHTS
from langgraph_compaction.store import Lease, SummaryRecord, SummaryStore
from langgraph_compaction.store.summary_store import plumbing

__all__ = ["LEASE_WAIT_S", "Taken", "exclusively"]

LEASE_WAIT_S = 120.0
"""Longest a call waits for the summary another call or worker is making, then fails over."""

_MAX_POLL_S = 0.2
"""Longest pause between two looks at another worker's lease: bounds what waiting adds."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Taken:
    """Why :func:`exclusively` did not make the summary: another made it, or the wait ran out."""

    record: SummaryRecord | None
    """The summary another call or worker stored (None: it did not land in time)."""
    error: str = ""
    announce: bool = False
    """Whether this call must emit the failure (another process's holder emits its own; a
    call of this process that owned the flight emitted it already)."""


def exclusively(
    store: SummaryStore,
    key: tuple[str, str, str],
    lookup: StoreCall[SummaryRecord | None],
    make: Callable[[], Step[T]],
) -> Step[T | Taken]:
    """Run ``make`` holding the prefix's flight and lease, or reuse what their holder stored.

    ``key``: ``(namespace, thread_id, prefix_hash)``; ``lookup`` finds the prefix's summary.
    """
    namespace, thread_id, prefix_hash = key
    flight_key = (store.url, namespace, thread_id, prefix_hash)
    flight, owner = FLIGHTS.claim(flight_key)
    if not owner:  # another call of this process makes it: wait, then reuse
        yield WaitFlight(flight, LEASE_WAIT_S)
        existing = yield from perform(lookup)
        return Taken(existing, "the summary another call was making for this prefix did not land")
    try:
        taken = yield from _take_lease(lookup, thread_id, namespace, prefix_hash)
        if not isinstance(taken, Lease):
            error = f"another worker held this prefix's lease for over {LEASE_WAIT_S:g} s"
            return Taken(taken, error, announce=True)
        released = False
        try:
            made = yield from make()
            with suppress(SummaryStoreError):  # it stopped renewing; the row expires by itself
                yield from perform(release_lease(taken))
            released = True
        finally:
            if not released:  # abandoned midway (cancelled): release it off this thread/loop
                _release_later(store, taken)
    finally:
        FLIGHTS.land(flight_key, flight)
    return made


def _take_lease(
    lookup: StoreCall[SummaryRecord | None], thread_id: str, namespace: str, prefix_hash: str
) -> Step[Lease | SummaryRecord | None]:
    """Take the prefix's lease, or wait for the worker holding it and return its summary.

    None: the holder kept it past :data:`LEASE_WAIT_S` without storing a summary.
    """
    waited, pause = 0.0, 0.05
    while True:
        lease = yield from perform(acquire_lease(thread_id, namespace, prefix_hash))
        existing = yield from perform(lookup)  # stored by a worker that released just now
        if existing is not None:
            if lease is not None:
                yield from perform(release_lease(lease))
            return existing
        if lease is not None:
            return lease
        if waited >= LEASE_WAIT_S:
            return None
        yield Sleep(pause)
        waited += pause
        pause = min(pause * 2, _MAX_POLL_S)


def _release_later(store: SummaryStore, lease: Lease) -> None:
    def release() -> None:
        with suppress(SummaryStoreError):
            plumbing(store).release_lease(lease)

    threading.Thread(target=release, name="compaction-lease-release", daemon=True).start()
