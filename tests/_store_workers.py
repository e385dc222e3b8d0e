"""What the store's multi-process tests run in their worker processes.

The tests start workers from a ``forkserver`` that has imported this module (and with it
langgraph, the package and the fakes) once, so each worker is a real, separate process that
costs a fork, not an interpreter start. Every function here is a worker body: it builds its
own SummaryStore from the URL, so nothing but the database links the processes.

A worker reports through `run_and_report`: ``(index, "ok", value)`` or ``(index, "error",
traceback)`` on the result queue, so the test can show a worker's failure.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

from fakes import RecordingSummarizer, SummarizerCall
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from sqlalchemy import Connection

from langgraph_compaction import SummaryRecord, SummaryStore, create_compaction_graph
from langgraph_compaction.errors import ThreadDeletedError
from langgraph_compaction.store.records import NewSummary
from langgraph_compaction.store.sql import summaries as summary_sql
from langgraph_compaction.store.summary_store import plumbing

__all__ = [
    "CONFIG",
    "add_after_deletion",
    "add_summaries",
    "add_summaries_until_killed",
    "compact",
    "compact_and_hang",
    "conversation",
    "deterministic_summary",
    "hold_lease",
    "insert_fields",
    "open_store",
    "race_for_lease",
    "run_and_report",
    "summary_text",
]

CONFIG: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 2000},
    "keep": {"type": "messages", "value": 6},
    "max_summary_tokens": 256,
}
"""Small enough that a 30-turn conversation compacts, and each 10 more turns compact again."""


def run_and_report(queue: Any, index: int, body: Callable[..., Any], *args: Any) -> None:
    """Run one worker body and put its outcome on ``queue``; warnings are errors here too."""
    warnings.simplefilter("error")
    try:
        queue.put((index, "ok", body(*args)))
    except BaseException:
        queue.put((index, "error", traceback.format_exc()))


def conversation(turns: int) -> list[AnyMessage]:
    """A system prompt and ``turns`` user turns, every turn but the last answered."""
    messages: list[AnyMessage] = [SystemMessage("You are a travel agent. Be brief.", id="sys")]
    for k in range(turns):
        ask = f"turn {k}: I need a flight from city {k} to city {k + 1}, economy, one adult. "
        messages.append(HumanMessage(ask * 3, id=f"user-{k}"))
        if k < turns - 1:
            reply = f"reply {k}: flight LH{400 + k} departs 09:{k % 60:02d}, fare 1{k:02d} EUR. "
            messages.append(AIMessage(reply * 3, id=f"ai-{k}"))
    return messages


def deterministic_summary(call: SummarizerCall) -> str:
    """The same prompt gives the same summary in every process (no call counter in it)."""
    digest = hashlib.sha256(call.prompt.encode()).hexdigest()[:12]
    lines = call.transcript.splitlines()
    # Names a flight of the transcript, so the pipeline's quality check takes it as a summary.
    flights = sorted({word for line in lines for word in line.split() if word.startswith("LH")})
    return f"Summary [{digest}] of {len(lines)} transcript lines: flights {' '.join(flights[:3])}."


def compact(
    url: str,
    thread: str,
    turns: list[int],
    barrier: Any,
    use_async: bool,
    delay: float = 0.0,
    fail: bool = False,
) -> list[dict[str, Any]]:
    """Compact ``conversation(n)`` for each n in ``turns`` on one thread; report each call.

    All workers wait at ``barrier`` (if any) before each call, so their calls overlap.
    """
    store = SummaryStore(url)
    summarizer = RecordingSummarizer(
        reply=deterministic_summary,
        delay=delay,
        fail_with=RuntimeError("summarizer down") if fail else None,
    )
    config = {**CONFIG, "max_failures": 2}
    graph = create_compaction_graph(config, model=summarizer, store=store)
    run_config: RunnableConfig = {"configurable": {"thread_id": thread}}
    reports = []
    for n in turns:
        if barrier is not None:
            barrier.wait(timeout=60)
        messages = conversation(n)
        before = summarizer.call_count
        if use_async:
            result = asyncio.run(graph.ainvoke({"messages": messages}, run_config))
        else:
            result = graph.invoke({"messages": messages}, run_config)
        report = result["compaction"]
        reports.append(
            {
                "turns": n,
                "action": report.action,
                "summary_id": report.summary_id,
                "summary_version": report.summary_version,
                "calls": summarizer.call_count - before,
            }
        )
    if use_async:
        asyncio.run(store.aclose())
    store.close()
    return reports


def compact_and_hang(url: str, thread: str, where: str, started: Any) -> None:
    """Compact, and hang (to be killed) inside the summary call or inside the insert.

    ``where="call"``: the summarizer signals ``started`` and sleeps. ``where="insert"``: the
    summary row is written in the open transaction, then the worker signals and sleeps,
    before the commit.
    """

    def hang_in_call(call: SummarizerCall) -> str:
        started.set()
        time.sleep(120)
        return "never returned"

    if where == "insert":
        real_insert = summary_sql.insert_summary

        def insert_then_hang(
            conn: Connection,
            new: NewSummary,
            retention: int | None,
            on_insert: Callable[[Connection], None] | None = None,
        ) -> SummaryRecord:
            record = real_insert(conn, new, retention, on_insert)
            started.set()
            time.sleep(120)
            return record

        summary_sql.insert_summary = insert_then_hang
    summarizer = RecordingSummarizer(reply=hang_in_call if where == "call" else None)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=SummaryStore(url))
    run_config: RunnableConfig = {"configurable": {"thread_id": thread}}
    graph.invoke({"messages": conversation(30)}, run_config)


def summary_text(n: int) -> str:
    """The n-th summary of the insert loops: long, and checkable for completeness."""
    return f"<summary {n}> " + f"line {n} of a long summary. " * 400 + f"</summary {n}>"


def insert_fields(thread: str, n: int, parent_id: str | None) -> dict[str, Any]:
    """add_summary arguments for the n-th summary of ``thread``."""
    return {
        "thread_id": thread,
        "namespace": "default",
        "parent_id": parent_id,
        "boundary_message_id": f"m-{n}",
        "covered_messages": n,
        "prefix_hash": f"prefix-{n}",
        "summary": summary_text(n),
        "summary_tokens": 10 * n,
        "source_tokens": 100 * n,
        "kind": "initial" if parent_id is None else "update",
        "model": "fake",
        "rescued_message_ids": [f"r-{n}"],
    }


def add_summaries(
    url: str, thread: str, count: int, seed: int, barrier: Any, use_async: bool
) -> dict[int, tuple[str, int, str | None]]:
    """Add summaries 1..count in a shuffled order; per n, the (id, version, parent) returned.

    Each names as parent the row it last got back for n - 1, if it has seen it yet.
    """
    order = list(range(1, count + 1))
    random.Random(seed).shuffle(order)
    store = SummaryStore(url)
    got: dict[int, tuple[str, int, str | None]] = {}

    def add(n: int) -> Any:
        parent = got[n - 1][0] if n - 1 in got else None
        return insert_fields(thread, n, parent)

    async def add_all_async() -> None:
        for n in order:
            record = await plumbing(store).aadd_summary(**add(n))
            got[n] = (record.id, record.version, record.parent_id)
        await store.aclose()

    barrier.wait(timeout=60)
    if use_async:
        asyncio.run(add_all_async())
    else:
        for n in order:
            record = plumbing(store).add_summary(**add(n))
            got[n] = (record.id, record.version, record.parent_id)
    store.close()
    return got


def add_summaries_until_killed(url: str, thread: str, started: Any, retention: int) -> None:
    """Add the thread's next summaries, forever, each the update of the one before."""
    store = SummaryStore(url, retention=retention)
    newest = store.latest_summaries(thread, limit=1)
    n, parent = (newest[0].version, newest[0].id) if newest else (0, None)
    started.set()
    while True:
        n += 1
        parent = plumbing(store).add_summary(**insert_fields(thread, n, parent)).id


def open_store(url: str, barrier: Any) -> str | None:
    """Open a store at the same moment as the other workers; the schema version it found."""
    store = SummaryStore(url)
    barrier.wait(timeout=60)
    store.list_summaries("t")
    store.close()
    from langgraph_compaction.store.cli.inspect import load_report

    version: str | None = load_report(url)["schema_version"]
    return version


def add_after_deletion(url: str, thread: str, read: Any, deleted: Any, use_async: bool) -> str:
    """Read the thread's generation, signal ``read``, wait for ``deleted``, then add a summary.

    Returns ``"stored"``, or the name of the error the store raised.
    """
    fields = insert_fields(thread, 1, None)

    async def run_async() -> str:
        store = SummaryStore(url)
        try:
            generation = (await store.athread_state(thread, "default")).generation
            read.set()
            await asyncio.to_thread(deleted.wait, 60)
            await plumbing(store).aadd_summary(**fields, generation=generation)
            return "stored"
        except ThreadDeletedError as exc:
            return type(exc).__name__
        finally:
            await store.aclose()

    if use_async:
        return asyncio.run(run_async())
    with SummaryStore(url) as store:
        generation = store.thread_state(thread, "default").generation
        read.set()
        deleted.wait(60)
        try:
            plumbing(store).add_summary(**fields, generation=generation)
        except ThreadDeletedError as exc:
            return type(exc).__name__
        return "stored"


def race_for_lease(url: str, prefix: str, barrier: Any, use_async: bool) -> bool:
    """Try for the prefix's lease at the barrier; hold it until every worker has tried.

    Returns whether this worker got it.
    """

    async def run_async() -> bool:
        store = SummaryStore(url)
        await store.alist_summaries("warm-up")  # open before the barrier: race the lease only
        await asyncio.to_thread(barrier.wait, 60)
        lease = await plumbing(store).aacquire_lease("t", "default", prefix)
        await asyncio.to_thread(barrier.wait, 60)
        if lease is not None:
            await plumbing(store).arelease_lease(lease)
        await store.aclose()
        return lease is not None

    if use_async:
        return asyncio.run(run_async())
    with SummaryStore(url) as store:
        store.list_summaries("warm-up")
        barrier.wait(timeout=60)
        lease = plumbing(store).acquire_lease("t", "default", prefix)
        barrier.wait(timeout=60)
        if lease is not None:
            plumbing(store).release_lease(lease)
        return lease is not None


def hold_lease(url: str, prefix: str, lease_ttl: float, seconds: float, started: Any) -> str:
    """Take the prefix's lease, signal ``started``, hold it ``seconds`` (forever if < 0)."""
    with SummaryStore(url, lease_ttl=lease_ttl) as store:
        lease = plumbing(store).acquire_lease("t", "default", prefix)
        if lease is None:
            return "not acquired"
        started.set()
        time.sleep(seconds if seconds >= 0 else 3600)
        plumbing(store).release_lease(lease)
        return "released"
