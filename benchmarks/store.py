"""Summary store latency and throughput, on SQLite and on PostgreSQL.

Run it with ``python benchmarks/store.py`` (a few minutes on a busy two-core machine),
``--quick`` (1,000 threads, short phases: a smoke run), or pick backends with
``--backends sqlite`` / ``--backends postgres`` and the server with ``--pg-url``.

What is measured, per backend:

- A store of ``--threads`` threads (default 10,000) x ``--versions`` versions (10), each
  summary ~800 characters, bulk-inserted through the store's own table (``executemany`` of
  5,000-row batches, not 100,000 ``add_summary`` calls), then ``ANALYZE``. The schema is the
  one ``SummaryStore`` creates (its migrations ran first).
- Latency of the pipeline's lookups in one process, one call at a time, each on a random
  thread: ``find_summary`` (by prefix hash: the reuse check) and ``latest_summaries(limit=8)``
  (the reuse candidates), through the sync API, and ``afind_summary`` through the async one.
- Latency of ``add_summary``: the next version of a random thread (per-thread lock, version
  = max + 1, duplicate check, commit).
- Throughput of ``--workers`` (8) concurrent worker processes, each with its own
  SummaryStore on the URL, for ``--seconds`` (5) per phase: ``find_summary`` on random
  threads; ``add_summary`` on random threads; ``add_summary`` all on one hot thread (every
  writer contends for the same versions). Errors are counted, never retried by the
  benchmark. Afterwards the store's consistency check runs over every row.

Timer: ``time.perf_counter_ns`` around each call. PostgreSQL runs in a schema created for the
run and dropped afterwards; SQLite in a temporary directory. Aims (for information): lookup
median under 1 ms on SQLite and under 3 ms on local PostgreSQL; zero errors with 8 workers.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

from sqlalchemy import create_engine, insert, text

from langgraph_compaction import SummaryStore
from langgraph_compaction.store.db.engine import derive_urls
from langgraph_compaction.store.sql.summaries import summaries
from langgraph_compaction.store.summary_store import plumbing

NAMESPACE = "bench"
TEXT = ("Goal: ship the release. Progress: tests green on SQLite and PostgreSQL. " * 12)[:800]
BATCH = 5_000


@dataclass
class Row:
    """One line of the result table."""

    backend: str
    operation: str
    samples: int
    median_ms: float
    p95_ms: float
    ops_per_s: float | None = None
    errors: int = 0

    def cells(self) -> list[str]:
        ops = "-" if self.ops_per_s is None else f"{self.ops_per_s:,.0f}"
        return [
            self.backend,
            self.operation,
            f"{self.samples:,}",
            f"{self.median_ms:.3f}",
            f"{self.p95_ms:.3f}",
            ops,
            str(self.errors),
        ]


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def p95(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def summarize(backend: str, operation: str, ns: Sequence[int], **extra: Any) -> Row:
    ms = [n / 1e6 for n in ns]
    return Row(backend, operation, len(ms), statistics.median(ms), p95(ms), **extra)


def new_summary(thread: str, prefix: str) -> dict[str, Any]:
    return {
        "thread_id": thread,
        "namespace": NAMESPACE,
        "parent_id": None,
        "boundary_message_id": f"m-{prefix}",
        "covered_messages": 40,
        "prefix_hash": prefix,
        "summary": TEXT,
        "summary_tokens": 200,
        "source_tokens": 8_000,
        "kind": "initial",
        "model": "bench",
        "rescued_message_ids": [],
    }


# -- databases -----------------------------------------------------------------------------


@contextmanager
def database(backend: str, pg_url: str) -> Iterator[str]:
    """A store URL on an empty database, removed afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="store-bench-") as folder:
            yield f"sqlite:///{Path(folder) / 'store.db'}"
        return
    import psycopg

    schema = f"lgc_bench_{uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        try:
            yield f"{pg_url}?options=-csearch_path%3D{schema}"
        finally:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def populate(url: str, threads: int, versions: int, label: str) -> None:
    """Bulk-insert threads x versions summaries, each the update of the one before."""
    with SummaryStore(url) as store:
        store.list_summaries("warm-up")  # creates the schema through the migrations
    engine = create_engine(derive_urls(url)[0])
    total, done, started = threads * versions, 0, time.perf_counter()
    stamp = datetime.now(UTC)
    try:
        rows: list[dict[str, Any]] = []
        for t in range(threads):
            parent: str | None = None
            for v in range(1, versions + 1):
                row_id = uuid4().hex
                rows.append(
                    {
                        **new_summary(f"thread-{t}", f"prefix-{v}"),
                        "id": row_id,
                        "version": v,
                        "parent_id": parent,
                        "parent_version": v - 1 if parent else None,
                        "kind": "update" if parent else "initial",
                        "created_at": stamp,
                        "rescued_message_ids": "[]",
                    }
                )
                parent = row_id
            if len(rows) >= BATCH or t == threads - 1:
                with engine.begin() as conn:
                    conn.execute(insert(summaries), rows)
                done += len(rows)
                rows = []
                if done % (BATCH * 4) == 0 or done == total:
                    elapsed = time.perf_counter() - started
                    progress(f"[{label}] populated {done:,}/{total:,} rows ({elapsed:.1f} s)")
        with engine.begin() as conn:
            conn.execute(text("ANALYZE"))
    finally:
        engine.dispose()


# -- one process ----------------------------------------------------------------------------


def timed(calls: int, call: Callable[[int], object]) -> list[int]:
    samples = []
    for i in range(calls):
        started = time.perf_counter_ns()
        call(i)
        samples.append(time.perf_counter_ns() - started)
    return samples


def single_process(url: str, label: str, threads: int, calls: int, inserts: int) -> list[Row]:
    rng = random.Random(7)
    picks = [
        (f"thread-{rng.randrange(threads)}", f"prefix-{rng.randint(1, 10)}") for _ in range(calls)
    ]
    rows = []
    with SummaryStore(url) as store:
        plumbing(store).find_summary(picks[0][0], NAMESPACE, picks[0][1])  # warm the pool
        progress(f"[{label}] find_summary x {calls:,}")
        found = timed(
            calls, lambda i: plumbing(store).find_summary(picks[i][0], NAMESPACE, picks[i][1])
        )
        rows.append(summarize(label, "find_summary", found))
        progress(f"[{label}] latest_summaries(limit=8) x {calls:,}")
        latest = timed(calls, lambda i: store.latest_summaries(picks[i][0], NAMESPACE, limit=8))
        rows.append(summarize(label, "latest_summaries(8)", latest))
        progress(f"[{label}] afind_summary x {calls:,}")
        rows.append(
            summarize(label, "afind_summary (async)", asyncio.run(_async_finds(store, picks)))
        )
        progress(f"[{label}] add_summary x {inserts:,}")
        targets = [f"thread-{rng.randrange(threads)}" for _ in range(inserts)]
        added = timed(
            inserts, lambda i: plumbing(store).add_summary(**new_summary(targets[i], f"new-{i}"))
        )
        rows.append(summarize(label, "add_summary", added))
    return rows


async def _async_finds(store: SummaryStore, picks: list[tuple[str, str]]) -> list[int]:
    await plumbing(store).afind_summary(picks[0][0], NAMESPACE, picks[0][1])  # engine and pool
    samples = []
    for thread, prefix in picks:
        started = time.perf_counter_ns()
        await plumbing(store).afind_summary(thread, NAMESPACE, prefix)
        samples.append(time.perf_counter_ns() - started)
    await store.aclose()
    return samples


# -- many processes -------------------------------------------------------------------------

PHASES = ("find_summary", "add_summary", "add_summary, one hot thread")


def worker(url: str, index: int, threads: int, seconds: float, barrier: Any, out: Any) -> None:
    """One worker process: each phase, as many calls as fit in ``seconds``."""
    rng = random.Random(index)
    store = SummaryStore(url)
    plumbing(store).find_summary("warm-up", NAMESPACE, "x")
    for phase in PHASES:
        barrier.wait(timeout=600)
        samples: list[int] = []
        errors, first_error, n = 0, "", 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            n += 1
            thread = f"thread-{rng.randrange(threads)}"
            started = time.perf_counter_ns()
            try:
                if phase == "find_summary":
                    plumbing(store).find_summary(thread, NAMESPACE, f"prefix-{rng.randint(1, 10)}")
                elif phase == "add_summary":
                    plumbing(store).add_summary(**new_summary(thread, f"w{index}-{n}"))
                else:
                    plumbing(store).add_summary(**new_summary("hot-thread", f"w{index}-{n}"))
            except Exception as exc:  # counted: the aim is zero
                errors += 1
                first_error = first_error or f"{type(exc).__name__}: {exc}"
            samples.append(time.perf_counter_ns() - started)
        out.put((phase, index, samples, errors, first_error))
    store.close()


def many_processes(url: str, label: str, workers: int, threads: int, seconds: float) -> list[Row]:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["langgraph_compaction.store"])
    barrier = context.Barrier(workers + 1)
    out = context.Queue()
    processes = [
        context.Process(target=worker, args=(url, i, threads, seconds, barrier, out))
        for i in range(workers)
    ]
    progress(f"[{label}] starting {workers} worker processes")
    for process in processes:
        process.start()
    rows = []
    try:
        for phase in PHASES:
            barrier.wait(timeout=600)
            progress(f"[{label}] {workers} workers: {phase} for {seconds:g} s")
            results = [out.get(timeout=600 + seconds) for _ in processes]
            samples = [s for r in results for s in r[2]]
            errors = sum(r[3] for r in results)
            for r in results:
                if r[4]:
                    progress(f"[{label}] worker {r[1]} error: {r[4]}")
            rows.append(
                summarize(
                    label,
                    f"{workers} workers: {phase}",
                    samples,
                    ops_per_s=len(samples) / seconds,
                    errors=errors,
                )
            )
    finally:
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()
    return rows


# -- main -----------------------------------------------------------------------------------


def render(rows: Sequence[Row]) -> str:
    headers = ["backend", "operation", "samples", "median ms", "p95 ms", "ops/s", "errors"]
    cells = [r.cells() for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    left = {0, 1}

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.ljust(w) if i in left else v.rjust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        )

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, cells)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backends", default="sqlite,postgres", help="comma-separated")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--versions", type=int, default=10)
    parser.add_argument("--calls", type=int, default=2_000, help="timed lookups per kind")
    parser.add_argument("--inserts", type=int, default=500, help="timed add_summary calls")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0, help="per many-worker phase")
    parser.add_argument("--quick", action="store_true", help="1,000 threads, short phases")
    args = parser.parse_args(argv)
    if args.quick:
        args.threads, args.calls, args.inserts, args.seconds = 1_000, 300, 100, 1.0

    rows: list[Row] = []
    for backend in args.backends.split(","):
        label = backend.strip()
        with database(label, args.pg_url) as url:
            populate(url, args.threads, args.versions, label)
            rows += single_process(url, label, args.threads, args.calls, args.inserts)
            rows += many_processes(url, label, args.workers, args.threads, args.seconds)
            progress(f"[{label}] consistency check of every row")
            with SummaryStore(url) as store:
                problems = store.check_integrity()
            progress(f"[{label}] consistency check: {problems or 'ok'}")
            if problems:
                rows[-1].errors += len(problems)
    print()
    print(
        f"{args.threads:,} threads x {args.versions} versions per backend; "
        f"{args.workers} worker processes, {args.seconds:g} s per phase"
    )
    print(render(rows))
    return 1 if any(r.errors for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
