"""Leases: one summary per prefix across processes, on SQLite and PostgreSQL.

In one process (sync and async): a lease is exclusive until released or expired, a release
never removes another owner's lease, the heartbeat keeps a held lease alive past
``lease_ttl``, and ``delete_thread`` removes the thread's leases. Across real processes:
two or four workers racing for one prefix get exactly one lease; a SIGKILLed holder's lease
is taken over once ``lease_ttl`` has passed, and not before; a live holder's heartbeat keeps
its lease beyond ``lease_ttl``.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
from uuid import uuid4

import _store_workers as workers
import pytest
from _store_support import call, preloaded_forkserver

from langgraph_compaction.store import Lease, SummaryStore
from langgraph_compaction.store.sql.leases import HEARTBEAT
from langgraph_compaction.store.summary_store import plumbing

TIMEOUT_S = 60


@pytest.fixture
async def stores(store_url: str) -> AsyncIterator[list[SummaryStore]]:
    """Two store objects on one database, as two workers would have (short lease_ttl)."""
    opened = [SummaryStore(store_url, lease_ttl=1.2), SummaryStore(store_url, lease_ttl=1.2)]
    yield opened
    for store in opened:
        await store.aclose()


def prefix() -> str:
    return f"prefix-{uuid4().hex[:8]}"


async def test_a_lease_is_exclusive_until_released(
    stores: list[SummaryStore], is_async: bool
) -> None:
    a, b = stores
    p = prefix()
    first = await call(a, is_async, "acquire_lease", "t", "default", p)
    assert isinstance(first, Lease) and (first.thread_id, first.prefix_hash) == ("t", p)
    host, pid, token = first.owner.split(":")
    assert (host, int(pid)) == (socket.gethostname(), __import__("os").getpid())
    assert re.fullmatch(r"[0-9a-f]{12}", token)
    assert isinstance(first.expires_at, datetime) and first.expires_at.tzinfo is not None

    assert await call(b, is_async, "acquire_lease", "t", "default", p) is None
    assert await call(a, is_async, "acquire_lease", "t", "default", p) is None  # same process
    other = await call(b, is_async, "acquire_lease", "t", "default", prefix())
    assert other is not None  # another prefix is another lease
    in_other_ns = await call(b, is_async, "acquire_lease", "t", "other-ns", p)
    assert in_other_ns is not None

    await call(a, is_async, "release_lease", first)
    await call(a, is_async, "release_lease", first)  # already gone: no error
    second = await call(b, is_async, "acquire_lease", "t", "default", p)
    assert second is not None and second.owner != first.owner
    for lease in (second, other, in_other_ns):
        await call(b, is_async, "release_lease", lease)


@pytest.mark.slow
async def test_an_expired_lease_is_taken_over_and_its_old_owner_cannot_release_it(
    stores: list[SummaryStore], is_async: bool
) -> None:
    a, b = stores
    p = prefix()
    stale = await call(a, is_async, "acquire_lease", "t", "default", p)
    assert stale is not None
    HEARTBEAT.drop(stale)  # as if its process had died: nobody renews it
    assert await call(b, is_async, "acquire_lease", "t", "default", p) is None

    await asyncio.sleep(1.5)  # past lease_ttl = 1.2
    taken = await call(b, is_async, "acquire_lease", "t", "default", p)
    assert taken is not None and taken.owner != stale.owner

    await call(a, is_async, "release_lease", stale)  # the row is no longer a's
    assert await call(a, is_async, "acquire_lease", "t", "default", p) is None
    await call(b, is_async, "release_lease", taken)


@pytest.mark.slow
async def test_the_heartbeat_keeps_a_held_lease_past_its_ttl(
    stores: list[SummaryStore], is_async: bool
) -> None:
    a, b = stores
    p = prefix()
    held = await call(a, is_async, "acquire_lease", "t", "default", p)
    assert held is not None and held in HEARTBEAT.held()
    deadline = time.monotonic() + 4.0  # over three times lease_ttl
    while time.monotonic() < deadline:
        assert await call(b, is_async, "acquire_lease", "t", "default", p) is None
        await asyncio.sleep(0.1)
    await call(a, is_async, "release_lease", held)
    assert held not in HEARTBEAT.held()
    after = await call(b, is_async, "acquire_lease", "t", "default", p)
    assert after is not None
    await call(b, is_async, "release_lease", after)


async def test_deleting_the_thread_removes_its_leases(
    stores: list[SummaryStore], is_async: bool
) -> None:
    a, b = stores
    p = prefix()
    held = await call(a, is_async, "acquire_lease", "t", "default", p)
    assert held is not None
    await call(a, is_async, "delete_thread", "t")
    after = await call(b, is_async, "acquire_lease", "t", "default", p)
    assert after is not None
    await call(a, is_async, "release_lease", held)  # gone with the thread: no error
    await call(b, is_async, "release_lease", after)


def test_lease_ttl_and_busy_timeout_must_be_positive() -> None:
    for bad in (0, -1.0, float("nan"), True):
        with pytest.raises(ValueError, match="lease_ttl must be"):
            SummaryStore("sqlite:///:memory:", lease_ttl=bad)
        with pytest.raises(ValueError, match="busy_timeout must be"):
            SummaryStore("sqlite:///:memory:", busy_timeout=bad)


# -- across processes ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def forkserver() -> Iterator[ForkServerContext]:
    yield from preloaded_forkserver()


@pytest.mark.slow
@pytest.mark.parametrize("count", [2, 4])
@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_workers_racing_for_one_prefix_get_exactly_one_lease(
    forkserver: ForkServerContext, store_url: str, count: int, use_async: bool
) -> None:
    from test_store_processes import run_workers

    barrier = forkserver.Barrier(count)
    for round_ in range(3):  # a few rounds: each a fresh prefix, all workers at once
        won = run_workers(
            forkserver,
            workers.race_for_lease,
            [(store_url, f"race-{round_}", barrier, use_async)] * count,
        )
        assert sorted(won) == [False] * (count - 1) + [True], won


def start_holder(
    context: ForkServerContext, store_url: str, p: str, lease_ttl: float, seconds: float
) -> tuple[BaseProcess, float]:
    """A worker that holds ``p``'s lease; returns it and when it took the lease."""
    started = context.Event()
    holder = context.Process(
        target=workers.hold_lease, args=(store_url, p, lease_ttl, seconds, started)
    )
    holder.start()
    assert started.wait(TIMEOUT_S), "the holder never took the lease"
    return holder, time.monotonic()


@pytest.mark.slow
def test_a_killed_holders_lease_is_taken_over_after_lease_ttl(
    forkserver: ForkServerContext, store_url: str
) -> None:
    ttl = 1.5
    holder, _ = start_holder(forkserver, store_url, "killed", ttl, -1)
    time.sleep(ttl)  # the heartbeat has renewed it by now
    holder.kill()
    holder.join()
    killed_at = time.monotonic()
    with SummaryStore(store_url, lease_ttl=ttl) as store:
        assert plumbing(store).acquire_lease("t", "default", "killed") is None  # not expired yet
        while (lease := plumbing(store).acquire_lease("t", "default", "killed")) is None:
            assert time.monotonic() - killed_at < ttl + 5, "the dead lease never expired"
            time.sleep(0.05)
        waited = time.monotonic() - killed_at
        plumbing(store).release_lease(lease)
    print(f"dead holder's lease taken over {waited:.2f} s after the kill (lease_ttl {ttl} s)")
    assert waited <= ttl + 1.0  # it expires lease_ttl after the last renewal, before the kill


@pytest.mark.slow
def test_a_live_holder_keeps_its_lease_beyond_lease_ttl(
    forkserver: ForkServerContext, store_url: str
) -> None:
    ttl = 0.6
    holder, taken_at = start_holder(forkserver, store_url, "live", ttl, 2.5)
    with SummaryStore(store_url, lease_ttl=ttl) as store:
        while time.monotonic() - taken_at < 2.0:  # over three times lease_ttl
            assert plumbing(store).acquire_lease("t", "default", "live") is None
            time.sleep(0.1)
        holder.join(TIMEOUT_S)
        assert holder.exitcode == 0
        lease = plumbing(store).acquire_lease("t", "default", "live")  # released: free at once
        assert lease is not None
        plumbing(store).release_lease(lease)
