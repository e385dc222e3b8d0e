"""Worker bodies for the steering tests' multi-process races (see ``_store_workers``).

Each builds its own SummaryStore from the URL, so only the database links the processes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph_compaction import SummaryStore
from langgraph_compaction.store.summary_store import plumbing

__all__ = ["race_for_requests"]


def race_for_requests(
    url: str, thread: str, rounds: int, files: bool, barrier: Any, use_async: bool
) -> list[str | None]:
    """Each round: the filing worker files a request, then every worker reads it and tries to
    consume it.

    Returns, per round, the instruction this worker took, or None.
    """

    async def run_async() -> list[str | None]:
        store = SummaryStore(url)
        await plumbing(store).athread_controls(thread, "default")  # open before the race
        got: list[str | None] = []
        for n in range(rounds):
            if files:
                await store.arequest_compaction(thread, instruction=f"раунд {n}")
            await asyncio.to_thread(barrier.wait, 60)
            pending = await plumbing(store).apending_request(thread, "default")
            won = pending is not None and await plumbing(store).aconsume_request(
                thread, "default", pending
            )
            got.append(pending.instruction if pending is not None and won else None)
            await asyncio.to_thread(barrier.wait, 60)
        await store.aclose()
        return got

    if use_async:
        return asyncio.run(run_async())
    got: list[str | None] = []
    with SummaryStore(url) as store:
        plumbing(store).thread_controls(thread, "default")
        for n in range(rounds):
            if files:
                store.request_compaction(thread, instruction=f"раунд {n}")
            barrier.wait(timeout=60)
            pending = plumbing(store).pending_request(thread, "default")
            won = pending is not None and plumbing(store).consume_request(
                thread, "default", pending
            )
            got.append(pending.instruction if pending is not None and won else None)
            barrier.wait(timeout=60)
    return got
