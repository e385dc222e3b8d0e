"""One summary per prefix in a process: calls that need the same summary share one flight.

The first call that needs a summary of a prefix owns its flight and makes it; every other
call (another thread, or another task on an event loop) waits for the flight to land and
then finds the summary in the store. Across processes the store's lease does the same job;
this registry saves the round trips and the polling inside one process.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Hashable

__all__ = ["FLIGHTS", "Flight", "Flights"]


class Flight:
    """A summary being made; waiters block (threads) or await (tasks) until it lands."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._futures: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def wait(self, timeout: float | None = None) -> bool:
        """Block the calling thread until the flight lands; False on timeout."""
        return self._done.wait(timeout)

    async def await_(self, timeout: float | None = None) -> bool:
        """Wait on the running loop (never blocking it) until the flight lands."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._done.is_set():
                return True
            self._futures.append((loop, future))
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            return False
        return True

    def land(self) -> None:
        """Wake every waiter, on whichever thread or loop it waits."""
        with self._lock:
            self._done.set()
            futures, self._futures = self._futures, []
        for loop, future in futures:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Flights:
    """The flights in progress in this process, by key (store, namespace, thread, prefix)."""

    def __init__(self) -> None:
        self._flights: dict[Hashable, Flight] = {}
        self._lock = threading.Lock()

    def claim(self, key: Hashable) -> tuple[Flight, bool]:
        """The flight for ``key`` and whether this caller owns it (must make the summary)."""
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None:
                return flight, False
            flight = self._flights[key] = Flight()
            return flight, True

    def land(self, key: Hashable, flight: Flight) -> None:
        """The owner is done (stored, failed or gave up): wake the waiters."""
        with self._lock:
            if self._flights.get(key) is flight:
                del self._flights[key]
        flight.land()

    def __len__(self) -> int:
        return len(self._flights)


FLIGHTS = Flights()
"""Shared by every compaction graph of the process, so two graphs on one store coalesce."""
