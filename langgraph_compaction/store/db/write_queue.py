"""One queue per SQLite file for the writers of this process, threads and tasks alike.

SQLite lets one connection write at a time. Writers that meet at ``BEGIN IMMEDIATE`` wait in
SQLite's busy handler, which sleeps and polls with a growing back-off: under many threads the
waiters wake late and out of turn (seconds at p99). So the writers of one process queue here
first, in arrival order, and begin their transaction only when their turn comes; the busy
handler is left to the writers of other processes.

The lock is handed straight to the next waiter on release (no barging), which keeps the order.
A thread waits on a gate lock of its own; a task waits on a future of its event loop, woken
with ``call_soon_threadsafe``, so no loop ever blocks. Whether a waiter owns the lock is
decided in one place, under the queue's state lock: it owns it once it has been taken off the
queue. A waiter that gives up (a timeout, a cancelled task) after that passes the lock on, so
it never leaks.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial

from langgraph_compaction.errors import SummaryStoreError

__all__ = ["WriteQueue", "write_queue"]


class _Waiter:
    """One writer in the queue and how to wake it; ``wake`` is False when nobody can wake."""

    __slots__ = ("wake",)

    def __init__(self, wake: Callable[[], bool]) -> None:
        self.wake = wake


def _open_gate(gate: threading.Lock) -> bool:
    gate.release()
    return True


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():  # a cancelled waiter sees it has the lock and passes it on
        future.set_result(None)


def _wake_task(loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> bool:
    try:
        loop.call_soon_threadsafe(_resolve, future)
    except RuntimeError:  # the loop is closed: its task will never take the turn
        return False
    return True


class WriteQueue:
    """A FIFO lock over one database's write transactions, shared by the whole process."""

    def __init__(self, identity: str) -> None:
        self.identity = identity
        self._state = threading.Lock()  # held for a few operations on the fields below only
        self._held = False  # invariant: waiters only queue while the lock is held
        self._waiters: deque[_Waiter] = deque()

    @property
    def waiting(self) -> int:
        """How many writers wait for their turn now."""
        with self._state:
            return len(self._waiters)

    def locked(self) -> bool:
        """Whether a writer holds the lock (or has been handed it and not yet woken)."""
        with self._state:
            return self._held

    def _join(self, wake: Callable[[], bool]) -> _Waiter | None:
        """Take the free lock (None), or queue a waiter woken by ``wake``."""
        with self._state:
            if not self._held:
                self._held = True
                return None
            waiter = _Waiter(wake)
            self._waiters.append(waiter)
            return waiter

    def _leave(self, waiter: _Waiter) -> bool:
        """Take a waiter that gives up off the queue; True if it had been handed the lock."""
        with self._state:
            try:
                self._waiters.remove(waiter)
            except ValueError:
                return True
            return False

    def _timed_out(self, timeout: float) -> SummaryStoreError:
        return SummaryStoreError(
            f"other writers of this process held the write lock for over {timeout:g} s "
            "(busy_timeout); the next call tries again"
        )

    def acquire(self, timeout: float) -> None:
        """Wait (blocking this thread) for the lock, at most ``timeout`` seconds.

        Raises:
            SummaryStoreError: the turn did not come within ``timeout``.
        """
        gate = threading.Lock()
        gate.acquire()
        waiter = self._join(partial(_open_gate, gate))
        if waiter is None:
            return
        try:
            woken = gate.acquire(timeout=timeout)
        except BaseException:
            if self._leave(waiter):
                self.release()
            raise
        if not woken and not self._leave(waiter):
            raise self._timed_out(timeout)

    async def aacquire(self, timeout: float) -> None:
        """Wait for the lock on the running event loop, which is never blocked.

        Raises:
            SummaryStoreError: the turn did not come within ``timeout``.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        waiter = self._join(partial(_wake_task, loop, future))
        if waiter is None:
            return
        try:
            async with asyncio.timeout(timeout):
                await future
        except TimeoutError:
            if not self._leave(waiter):
                raise self._timed_out(timeout) from None
        except BaseException:  # cancelled: never keep a turn nobody will use
            if self._leave(waiter):
                self.release()
            raise

    def release(self) -> None:
        """Hand the lock to the next waiter, or free it."""
        while True:
            with self._state:
                if not self._waiters:
                    self._held = False
                    return
                waiter = self._waiters.popleft()
            if waiter.wake():
                return

    def _after_fork(self) -> None:
        # The child has only the forking thread: no other holder or waiter lives on.
        self._state = threading.Lock()
        self._held = False
        self._waiters = deque()

    @contextmanager
    def hold(self, timeout: float) -> Iterator[None]:
        """The lock for the duration of the block (sync)."""
        self.acquire(timeout)
        try:
            yield
        finally:
            self.release()

    @asynccontextmanager
    async def ahold(self, timeout: float) -> AsyncIterator[None]:
        """The lock for the duration of the block (async)."""
        await self.aacquire(timeout)
        try:
            yield
        finally:
            self.release()


_QUEUES: weakref.WeakValueDictionary[str, WriteQueue] = weakref.WeakValueDictionary()
_QUEUES_LOCK = threading.Lock()


def write_queue(identity: str) -> WriteQueue:
    """The process's queue for the database ``identity`` (see ``engine.database_identity``).

    Every store of the process on one file gets the same queue while any of them lives.
    """
    with _QUEUES_LOCK:
        queue = _QUEUES.get(identity)
        if queue is None:
            queue = _QUEUES[identity] = WriteQueue(identity)
        return queue


def _reset_after_fork() -> None:
    global _QUEUES_LOCK
    _QUEUES_LOCK = threading.Lock()
    for queue in list(_QUEUES.values()):
        queue._after_fork()


os.register_at_fork(after_in_child=_reset_after_fork)
