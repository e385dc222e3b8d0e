"""One summary per prefix: how many summarizer calls concurrent callers make, what waiting costs.

Run it with ``python benchmarks/fleet.py`` (about a minute), or ``--rounds N`` for more
samples. Every call needs the same summary at the same instant; the summarizer is a fake that
takes ``--summary-seconds`` (1.0) to answer, so overlap is certain and the wait is visible.

- In one process: 5 concurrent calls as threads on the sync path, and 5 as tasks on one event
  loop: summarizer calls, and how much later than the owner each waiter has its input.
- Across processes: 4 worker processes racing on one thread of one store, on SQLite (a file)
  and on PostgreSQL (a fresh schema at ``--pg-url``): summarizer calls per prefix, and how much
  later than the worker that made the summary the waiting workers have their input (lease
  polling included).

Medians over ``--rounds`` rounds (3), each on a new thread id.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))

from _fleet_worker import race  # noqa: E402
from conversations import chat  # noqa: E402
from fakes import RecordingSummarizer  # noqa: E402

from langgraph_compaction import SummaryStore, create_compaction_graph  # noqa: E402

CONFIG = {"trigger": {"type": "tokens", "value": 2000}, "keep": {"type": "messages", "value": 6}}


def _in_process_threads(url: str, seconds: float, calls: int) -> tuple[int, list[float]]:
    summarizer = RecordingSummarizer(delay=seconds)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=SummaryStore(url))
    thread = {"configurable": {"thread_id": uuid.uuid4().hex}}
    messages = chat(20)
    barrier = threading.Barrier(calls)
    timings: list[tuple[str, float]] = []

    def call() -> None:
        barrier.wait()
        report = graph.invoke({"messages": list(messages)}, thread)["compaction"]
        timings.append((report.action, time.time()))

    workers = [threading.Thread(target=call) for _ in range(calls)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return summarizer.call_count, _added(timings)


def _in_process_tasks(url: str, seconds: float, calls: int) -> tuple[int, list[float]]:
    summarizer = RecordingSummarizer(delay=seconds)
    store = SummaryStore(url)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    thread = {"configurable": {"thread_id": uuid.uuid4().hex}}
    messages = chat(20)

    async def one() -> tuple[str, float]:
        report = (await graph.ainvoke({"messages": list(messages)}, thread))["compaction"]
        return report.action, time.time()

    async def main() -> list[tuple[str, float]]:
        try:
            return list(await asyncio.gather(*(one() for _ in range(calls))))
        finally:
            await store.aclose()

    timings = asyncio.run(main())
    return summarizer.call_count, _added(timings)


def _added(timings: list[tuple[str, float]]) -> list[float]:
    """How much later than the call that made the summary each waiter had its input
    (finish instants, so a worker that started late is not credited with a short wait)."""
    owner = [t for action, t in timings if action == "summarized"]
    if len(owner) != 1:
        raise SystemExit(f"expected one summarizing call, got {timings}")
    return [t - owner[0] for action, t in timings if action != "summarized"]


def _fleet(url: str, workers: int) -> tuple[int, list[float]]:
    thread = uuid.uuid4().hex
    lines = race(url, thread, workers)
    calls = sum(int(line["calls"]) for line in lines)
    return calls, _added([(str(line["action"]), float(line["finished_at"])) for line in lines])


def _pg_schema(base: str) -> tuple[str, str]:
    import psycopg

    schema = f"lgc_fleet_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    return schema, f"{base}?options=-csearch_path%3D{schema}"


def _drop_schema(base: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _row(name: str, samples: list[tuple[int, list[float]]], per: str) -> None:
    calls = [c for c, _ in samples]
    added = [a for _, waits in samples for a in waits]
    print(
        f"{name:<34} {per:<22} calls/round {statistics.median(calls):>4.0f} "
        f"(max {max(calls)})   added wait median {statistics.median(added) * 1000:7.1f} ms"
        f"   max {max(added) * 1000:7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--summary-seconds", type=float, default=1.0)
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'fleet.db'}"
        SummaryStore(url).list_summaries("warm-up")
        print(f"{args.rounds} rounds; the summarizer answers in {args.summary_seconds:g} s\n")
        _row(
            "sync, 5 threads, one process",
            [_in_process_threads(url, args.summary_seconds, 5) for _ in range(args.rounds)],
            "SQLite",
        )
        _row(
            "async, 5 tasks, one event loop",
            [_in_process_tasks(url, args.summary_seconds, 5) for _ in range(args.rounds)],
            "SQLite",
        )
        _row("4 worker processes", [_fleet(url, 4) for _ in range(args.rounds)], "SQLite")
    if not args.no_postgres:
        schema, pg_url = _pg_schema(args.pg_url)
        try:
            SummaryStore(pg_url).list_summaries("warm-up")
            _row(
                "4 worker processes", [_fleet(pg_url, 4) for _ in range(args.rounds)], "PostgreSQL"
            )
        finally:
            _drop_schema(args.pg_url, schema)


if __name__ == "__main__":
    main()
