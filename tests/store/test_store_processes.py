"""The store under many worker processes, and under workers killed with SIGKILL.

Workers are real processes, forked from a ``forkserver`` that imported the package once
(see ``_store_workers``); each builds its own SummaryStore from the URL. Every test runs on
SQLite (a WAL file) and on PostgreSQL (a schema of its own, dropped afterwards), and ends by
running the store's consistency check, which on SQLite includes ``PRAGMA integrity_check``.
"""

from __future__ import annotations

import queue
import random
import time
from collections.abc import Callable, Iterator
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

import _store_workers as workers
import pytest
from _store_support import preloaded_forkserver

from langgraph_compaction import SummaryStore
from langgraph_compaction.store.cli.inspect import main as cli
from langgraph_compaction.store.schema.migrate import SCHEMA_VERSION

WORKERS = 4
TIMEOUT_S = 90
TESTS = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def forkserver() -> Iterator[ForkServerContext]:
    """Workers fork from a server that has imported the package: no interpreter start each."""
    yield from preloaded_forkserver()


def run_workers(
    context: ForkServerContext, body: Callable[..., Any], jobs: list[tuple[Any, ...]]
) -> list[Any]:
    """Run ``body(*job)`` in one process per job, all at once; their results, in job order."""
    results: Any = context.Queue()
    processes = [
        context.Process(target=workers.run_and_report, args=(results, i, body, *job))
        for i, job in enumerate(jobs)
    ]
    for process in processes:
        process.start()
    outcomes: dict[int, Any] = {}
    errors = []
    try:
        for _ in processes:
            index, status, value = results.get(timeout=TIMEOUT_S)
            if status == "ok":
                outcomes[index] = value
            else:
                errors.append(f"worker {index}:\n{value}")
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
    assert not errors, "\n".join(errors)
    assert all(p.exitcode == 0 for p in processes), [p.exitcode for p in processes]
    return [outcomes[i] for i in range(len(jobs))]


def kill_when_started(context: ForkServerContext, body: Callable[..., Any], *args: Any) -> None:
    """Start ``body(*args, started)``, SIGKILL it once it sets ``started``, wait for it."""
    started = context.Event()
    process = context.Process(target=body, args=(*args, started))
    process.start()
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not started.wait(timeout=0.05):
            assert process.is_alive(), f"the worker died first (exit code {process.exitcode})"
            assert time.monotonic() < deadline, "the worker never reached the kill point"
    finally:
        process.kill()
        process.join(timeout=TIMEOUT_S)
    assert process.exitcode == -9


def assert_sound(store_url: str) -> None:
    """The consistency check (SQLite: PRAGMA integrity_check too) finds nothing."""
    with SummaryStore(store_url) as store:
        assert store.check_integrity() == []


# -- many writers --------------------------------------------------------------------------


@pytest.mark.slow
def test_workers_compacting_one_thread_at_once_store_one_lineage(
    forkserver: ForkServerContext, store_url: str
) -> None:
    turns = [30, 50, 70]  # each step evicts a new prefix: three summaries in all
    barrier = forkserver.Barrier(WORKERS)
    jobs = [(store_url, "shared", turns, barrier, i % 2 == 1, 0.2) for i in range(WORKERS)]

    reports = run_workers(forkserver, workers.compact, jobs)

    with SummaryStore(store_url) as store:
        rows = store.list_summaries("shared")
        assert store.check_integrity() == []
    assert [r.version for r in rows] == [1, 2, 3]
    assert len({r.prefix_hash for r in rows}) == 3
    assert [r.parent_id for r in rows] == [None, rows[0].id, rows[1].id]
    for step, row in enumerate(rows):
        # Every worker served the one stored summary of this step, made or found.
        assert {w[step]["summary_id"] for w in reports} == {row.id}
        assert {w[step]["action"] for w in reports} <= {"summarized", "reused"}
    # The summarizer ran at most once per worker and step, and never after a row existed.
    assert all(r["calls"] <= 1 for w in reports for r in w)


@pytest.mark.slow  # another process: seconds
def test_racing_add_summary_calls_keep_versions_and_prefixes_unique(
    forkserver: ForkServerContext, store_url: str
) -> None:
    count = 30
    barrier = forkserver.Barrier(WORKERS)
    jobs = [(store_url, "raw", count, seed, barrier, seed % 2 == 1) for seed in range(WORKERS)]

    got = run_workers(forkserver, workers.add_summaries, jobs)

    with SummaryStore(store_url) as store:
        rows = store.list_summaries("raw")
        assert store.check_integrity() == []
    assert sorted(r.version for r in rows) == list(range(1, count + 1))
    assert sorted(r.prefix_hash for r in rows) == sorted(f"prefix-{n}" for n in got[0])
    by_prefix = {r.prefix_hash: r for r in rows}
    for worker_got in got:  # whoever wrote a prefix, every worker got back that one row
        for n, (row_id, version, _) in worker_got.items():
            assert (by_prefix[f"prefix-{n}"].id, by_prefix[f"prefix-{n}"].version) == (
                row_id,
                version,
            )
    assert all(r.summary == workers.summary_text(int(r.prefix_hash[7:])) for r in rows)


def test_processes_opening_a_new_database_at_once_create_it_once(
    forkserver: ForkServerContext, store_url: str
) -> None:
    barrier = forkserver.Barrier(WORKERS)

    versions = run_workers(forkserver, workers.open_store, [(store_url, barrier)] * WORKERS)

    assert versions == [str(SCHEMA_VERSION)] * WORKERS
    assert_sound(store_url)


@pytest.mark.slow
def test_a_failure_in_one_process_opens_the_breaker_in_another(
    forkserver: ForkServerContext, store_url: str
) -> None:
    # Process A fails twice (max_failures=2) on the same history; process B then finds the
    # breaker open in the store and does not call its summarizer, though it would succeed.
    [a] = run_workers(
        forkserver, workers.compact, [(store_url, "t", [30, 30], None, False, 0.0, True)]
    )
    [b] = run_workers(forkserver, workers.compact, [(store_url, "t", [30], None, True)])

    assert [r["action"] for r in a] == ["failed", "failed"]
    assert [r["calls"] for r in a] == [1, 1]
    assert (b[0]["action"], b[0]["calls"]) == ("failed", 0)
    with SummaryStore(store_url) as store:
        state = store.thread_state("t", "default")
        assert state.consecutive_failures == 2
        assert state.last_error is not None and "summarizer down" in state.last_error
        assert store.list_summaries("t") == []
    # Twenty messages later the cooldown is over: B's next attempt summarizes and resets.
    [c] = run_workers(forkserver, workers.compact, [(store_url, "t", [40], None, False)])
    assert (c[0]["action"], c[0]["calls"]) == ("summarized", 1)


# -- crashes -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("where", ["call", "insert"])
def test_a_worker_killed_while_compacting_leaves_a_sound_store_that_serves(
    forkserver: ForkServerContext, store_url: str, where: str
) -> None:
    kill_when_started(forkserver, workers.compact_and_hang, store_url, "t", where)

    assert_sound(store_url)
    with SummaryStore(store_url) as store:
        assert store.list_summaries("t") == []  # nothing partial, nothing uncommitted
        assert store.thread_state("t", "default").consecutive_failures == 0
    # The next run (another process) compacts as if nothing had happened.
    [after] = run_workers(forkserver, workers.compact, [(store_url, "t", [30], None, False)])
    assert (after[0]["action"], after[0]["summary_version"]) == ("summarized", 1)
    assert_sound(store_url)


@pytest.mark.slow
def test_workers_killed_at_random_points_of_an_insert_loop(
    forkserver: ForkServerContext, store_url: str
) -> None:
    retention = 4
    rng = random.Random(20240601)
    for _ in range(4):
        started = forkserver.Event()
        process = forkserver.Process(
            target=workers.add_summaries_until_killed, args=(store_url, "loop", started, retention)
        )
        process.start()
        assert started.wait(timeout=TIMEOUT_S)
        try:
            process.join(timeout=rng.uniform(0.05, 0.5))
        finally:
            process.kill()
            process.join(timeout=TIMEOUT_S)
        assert process.exitcode == -9

        with SummaryStore(store_url) as store:
            assert store.check_integrity() == []
            rows = store.list_summaries("loop")
        versions = [r.version for r in rows]
        assert 0 < len(rows) <= retention
        assert versions == list(range(versions[0], versions[-1] + 1))
        # Every row whole: the text it was given, and its parent the version before.
        assert all(r.summary == workers.summary_text(r.version) for r in rows)
        assert all(r.prefix_hash == f"prefix-{r.version}" for r in rows)
        assert [r.parent_id for r in rows[1:]] == [r.id for r in rows[:-1]]
    assert cli(["check", "--url", store_url]) == 0


def test_run_and_report_passes_a_worker_error_on() -> None:
    results: queue.Queue[Any] = queue.Queue()

    workers.run_and_report(results, 3, int, "not a number")

    index, status, value = results.get_nowait()
    assert (index, status) == (3, "error") and "ValueError" in value
