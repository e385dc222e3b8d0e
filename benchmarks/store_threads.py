"""Many threads of one process on one store: per-call latency, duplicates, store check.

Run it with ``python benchmarks/store_threads.py`` (about 5 minutes), or ``--quick`` for a
smoke run. The load: ``--threads`` (16) worker threads of one process drive
``--conversations`` (20) conversations of ``--turns`` (100) turns each through one
``create_compaction_graph`` on one store. A worker takes the conversation that waited
longest, runs its next turn (``graph.invoke`` with the history up to that user message, as an
agent calls its model), waits ``--model-ms`` for "the model" (a sleep: 0, back to back, and
100, still far quicker than any real model, by default), and puts the conversation back, so
no conversation runs two turns at once. Assistant replies list a varying number of parcel
scans, so conversations grow at their own pace and reach the trigger at different turns. The
summarizer is an instant fake that writes a sectioned summary naming the orders, invoices and
cities it read; the trigger (2,000 tokens, 6 messages kept) makes a summary every 10 turns or
so, and each summary writes three transactions (its lease, the row, the lease's release).

Reported per run: the median, p95, p99 and max of a call (wall time of ``graph.invoke``),
what the calls did, the summaries stored, duplicates (two rows of one thread for one prefix)
and the result of ``python -m langgraph_compaction.store check``. On SQLite (a new file) and
on PostgreSQL (``--pg-url``, a new schema dropped after).

Before and after side by side: the package as it was at ``--before`` (default: the commit
before the one that added the in-process write queue, ``store/_writers.py``) and at
``--after`` (default: this checkout as it is) are exported with ``git archive`` into a
temporary folder, and each run is a child process whose ``PYTHONPATH`` puts that copy first
(the child reports which package it imported). Runs alternate before/after, ``--rounds`` (2)
times, so both meet the same machine load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
QUEUE_MODULE = "langgraph_compaction/store/_writers.py"
CONFIG = {
    "trigger": {"type": "tokens", "value": 2000},
    "keep": {"type": "messages", "value": 6},
}
CITIES = ("Lisbon", "Osaka", "Denver", "Nairobi", "Tallinn", "Recife", "Perth", "Bergen")
STATES = ("on hold", "packed", "in customs", "delivered", "returned", "refunded")


def _turn_messages(conversation: int, turns: int) -> list[Any]:
    """A support conversation with stable ids: the system prompt, then user/assistant turns."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    messages: list[Any] = [
        SystemMessage("You are the order desk assistant of a mail-order shop.", id="sys")
    ]
    for turn in range(turns):
        order = f"ORD-{conversation:02d}{turn:03d}"
        invoice = f"INV-{conversation:02d}{turn:03d}"
        city = CITIES[(conversation + turn) % len(CITIES)]
        state = STATES[(conversation * 7 + turn) % len(STATES)]
        # Scans of varying number, so conversations grow at their own pace and reach the
        # trigger at different turns, as real ones do (not all in the same instant).
        rng = random.Random(f"{conversation}-{turn}")
        scans = " ".join(
            f"Scan {k + 1}: {rng.choice(CITIES)} hub, day {rng.randint(1, 28)}."
            for k in range(rng.randrange(8))
        )
        messages.append(
            HumanMessage(
                f"Turn {turn}: please check order {order} for the customer in {city}. "
                f"Invoice {invoice} shows {40 + turn % 37}.{turn % 10}0 EUR, the parcel "
                f"should have left the warehouse on day {turn % 28 + 1}, and the customer "
                "asks whether the delivery address can still be changed.",
                id=f"c{conversation}-h{turn}",
            )
        )
        messages.append(
            AIMessage(
                f"Order {order} is {state}. Invoice {invoice} matches the order total; "
                f"the carrier's last scan was in {city} on day {turn % 28 + 1}. The address "
                f"can be changed until the parcel is out for delivery: I noted the request "
                f"on {order} and will confirm by mail. {scans}",
                id=f"c{conversation}-a{turn}",
            )
        )
    return messages


def _summary_reply(call: Any) -> str:
    """A summary as a model writes one: sections, naming the orders and invoices it read."""
    transcript = call.transcript
    orders = list(dict.fromkeys(re.findall(r"ORD-\d+", transcript)))
    invoices = list(dict.fromkeys(re.findall(r"INV-\d+", transcript)))
    cities = list(dict.fromkeys(c for c in CITIES if c in transcript))
    named = ", ".join(orders[:3] + (["..."] if len(orders) > 4 else []) + orders[-1:])
    return (
        "## Goal\nThe customer wants the status of several orders and, for each, to know "
        "whether the delivery address can still be changed.\n\n"
        f"## Progress\n- Orders checked: {named} ({len(orders)} in all).\n"
        f"- Invoices matched their totals: {', '.join(invoices[:2])} and "
        f"{max(0, len(invoices) - 2)} more.\n"
        f"- Parcels last scanned in {', '.join(cities) or 'the warehouse'}.\n\n"
        "## Next Steps\n- Confirm each address change by mail once the carrier accepts it."
    )


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


@contextmanager
def _store_url(backend: str, folder: Path, pg_url: str) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'store.db'}"
        return
    import psycopg

    schema = f"lgc_threads_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{pg_url}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _drive(
    url: str, threads: int, conversations: int, turns: int, model_s: float
) -> dict[str, Any]:
    """Run the load on ``url``; the figures of one run."""
    sys.path.insert(0, str(TESTS))
    from fakes import RecordingSummarizer
    from sqlalchemy import create_engine, text

    import langgraph_compaction
    from langgraph_compaction import SummaryStore, create_compaction_graph

    summarizer = RecordingSummarizer(reply=_summary_reply)
    store = SummaryStore(url)
    store.list_summaries("warm-up")  # the schema is made before the clock starts
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    histories = [_turn_messages(c, turns) for c in range(conversations)]
    waiting = deque((c, 0) for c in range(conversations))
    lock = threading.Lock()
    times: list[float] = []
    by_action: dict[str, list[float]] = {}
    actions: Counter[str] = Counter()
    errors: list[str] = []

    def work() -> None:
        while True:
            with lock:
                if not waiting:
                    return
                conversation, turn = waiting.popleft()
            messages = histories[conversation][: 2 + 2 * turn]  # up to this turn's question
            config = {"configurable": {"thread_id": f"conversation-{conversation}"}}
            started = time.perf_counter()
            try:
                action = graph.invoke({"messages": messages}, config)["compaction"].action
            except Exception as exc:  # a failure is a result here: count it, go on
                action = "raised"
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
            elapsed = time.perf_counter() - started
            time.sleep(model_s)  # the agent's model answers; the conversation waits for it
            with lock:
                times.append(elapsed)
                by_action.setdefault(action, []).append(elapsed)
                actions[action] += 1
                if turn + 1 < turns:
                    waiting.append((conversation, turn + 1))

    workers = [threading.Thread(target=work) for _ in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - started
    store.close()

    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT count(*) FROM compaction_summaries")).scalar_one()
        duplicates = conn.execute(
            text(
                "SELECT count(*) FROM (SELECT 1 FROM compaction_summaries "
                "GROUP BY thread_id, namespace, prefix_hash HAVING count(*) > 1) AS d"
            )
        ).scalar_one()
    engine.dispose()
    check = subprocess.run(  # cwd elsewhere: ``-m`` would put this checkout's package first
        [sys.executable, "-m", "langgraph_compaction.store", "check", "--url", url],
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
    )
    return {
        "package": str(Path(langgraph_compaction.__file__).resolve().parent.parent),
        "calls": len(times),
        "wall_s": wall,
        "median_ms": statistics.median(times) * 1000,
        "p95_ms": _percentile(times, 0.95) * 1000,
        "p99_ms": _percentile(times, 0.99) * 1000,
        "max_ms": max(times) * 1000,
        "p99_ms_by_action": {k: _percentile(v, 0.99) * 1000 for k, v in by_action.items()},
        "actions": dict(actions),
        "summarizer_calls": summarizer.call_count,
        "summaries": rows,
        "duplicates": duplicates,
        "check_exit": check.returncode,
        "check": (check.stdout + check.stderr).strip().splitlines()[-1:],
        "errors": errors[:3],
    }


def _child(args: argparse.Namespace) -> None:
    with (
        tempfile.TemporaryDirectory() as folder,
        _store_url(args.backend, Path(folder), args.pg_url) as url,
    ):
        figures = _drive(
            url, args.threads, args.conversations, args.turns, float(args.model_ms) / 1000
        )
    print(json.dumps(figures))


def _git(*argv: str) -> str:
    done = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _before_revision(given: str | None) -> str:
    if given:
        return _git("rev-parse", "--verify", f"{given}^{{commit}}")
    added = _git("log", "--diff-filter=A", "--format=%H", "--", QUEUE_MODULE).splitlines()
    # Not committed yet: the working tree is the change, HEAD is before it.
    return _git("rev-parse", f"{added[-1]}^" if added else "HEAD")


def _export(revision: str, folder: Path) -> Path:
    """The package at ``revision``, unpacked into ``folder`` (git archive, no work tree)."""
    folder.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, "langgraph_compaction"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def _copy_work_tree(folder: Path) -> Path:
    """This checkout's package as it is now, copied (an edit during the runs is not seen)."""
    shutil.copytree(ROOT / "langgraph_compaction", folder / "langgraph_compaction")
    return folder


def _run(tree: Path, backend: str, model_ms: float, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(TESTS)])}
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", "--backend", backend]
    argv += ["--threads", str(args.threads), "--conversations", str(args.conversations)]
    argv += ["--turns", str(args.turns), "--pg-url", args.pg_url]
    argv += ["--model-ms", str(model_ms)]
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir()
    )
    if done.returncode != 0:
        raise SystemExit(f"the {backend} run on {tree} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(figures["package"]) != tree.resolve():
        raise SystemExit(f"the child imported {figures['package']}, not {tree}")
    return figures


def _print_row(label: str, backend: str, model_ms: float, f: dict[str, Any]) -> None:
    actions = ", ".join(f"{k} {v}" for k, v in sorted(f["actions"].items()))
    check = "clean" if f["check_exit"] == 0 else f"exit {f['check_exit']}: {f['check']}"
    print(
        f"| {label} | {backend} | {model_ms:g} | {f['calls']} | {f['median_ms']:.1f} | "
        f"{f['p95_ms']:.1f} | "
        f"{f['p99_ms']:.1f} | {f['max_ms']:.1f} | {f['summaries']} | {f['duplicates']} | "
        f"{check} | {actions} |",
        flush=True,
    )
    for error in f["errors"]:
        print(f"|   error: {error}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 threads, 4 x 40 turns, 1 round")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--model-ms", default="0,100", help="the model's time per turn (a sleep), a list"
    )
    parser.add_argument("--before", help="git revision of the 'before' package")
    parser.add_argument(
        "--after", help="git revision of the 'after' package (default: this checkout)"
    )
    parser.add_argument("--no-before", action="store_true", help="the 'after' package only")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", default="sqlite", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    if args.quick:
        args.threads, args.conversations, args.turns, args.rounds = 4, 4, 40, 1
        args.model_ms = "0"
    backends = ["sqlite"] + ([] if args.no_postgres else ["postgres"])
    with tempfile.TemporaryDirectory() as folder:
        if args.after:
            after = _git("rev-parse", "--verify", f"{args.after}^{{commit}}")
            trees = [(f"after ({after[:9]})", _export(after, Path(folder) / "after"))]
        else:
            trees = [("after (work tree)", _copy_work_tree(Path(folder) / "after"))]
        if not args.no_before:
            revision = _before_revision(args.before)
            before = _export(revision, Path(folder) / "before")
            trees.insert(0, (f"before ({revision[:9]})", before))
        print(
            f"{args.threads} threads, {args.conversations} conversations x {args.turns} turns, "
            f"{args.rounds} round(s); per call ms\n"
        )
        print(
            "| package | store | model ms | calls | median | p95 | p99 | max | summaries | "
            "duplicates | store check | actions |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|", flush=True)
        pacings = [float(ms) for ms in args.model_ms.split(",")]
        for _ in range(args.rounds):
            for backend in backends:
                for model_ms in pacings:
                    for label, tree in trees:
                        figures = _run(tree, backend, model_ms, args)
                        _print_row(label, backend, model_ms, figures)


if __name__ == "__main__":
    main()
