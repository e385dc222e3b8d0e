"""One worker of a fleet racing on one thread: build a graph on a shared store, compact once.

Run as ``python tests/_fleet_worker.py --url URL --thread T --start EPOCH_SECONDS``, or start
a whole fleet with :func:`race`. Every worker builds its own graph, store and summarizer from
the URL alone, sleeps until the common start time (so the calls truly overlap), makes one
compaction call on the same history, and prints one JSON line: the summarizer calls it made,
the action, the summary id, how long the call took, and when it finished.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conversations import chat, graph_input
from fakes import RecordingSummarizer

from langgraph_compaction import SummaryStore, create_compaction_graph

CONFIG = {"trigger": {"type": "tokens", "value": 2000}, "keep": {"type": "messages", "value": 6}}
SUMMARY_SECONDS = 1.0
"""How long the fake summarizer takes: long enough that every worker overlaps the first."""


def race(url: str, thread: str, workers: int, timeout: float = 180) -> list[dict[str, Any]]:
    """Start ``workers`` processes of this script on one store and thread; their JSON lines.

    Each opens the store first; they call at one common instant, 6 s ahead (time for every
    interpreter to start and import).

    Raises:
        RuntimeError: a worker failed (its stderr is the message).
    """
    start = time.time() + 6.0
    here = Path(__file__).resolve()
    # Keep the caller's PYTHONPATH: the workers import the same copy of the package.
    paths = [str(here.parent), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    argv = [sys.executable, str(here), "--url", url, "--thread", thread, "--start", str(start)]
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(workers)
    ]
    lines: list[dict[str, Any]] = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(err)
        lines.append(json.loads(out.strip().splitlines()[-1]))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--thread", required=True)
    parser.add_argument("--start", type=float, required=True)
    args = parser.parse_args()
    summarizer = RecordingSummarizer(delay=SUMMARY_SECONDS)
    store = SummaryStore(args.url)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    messages = chat(20)
    store.list_summaries(args.thread)  # open (and migrate) before the race, not in it
    time.sleep(max(args.start - time.time(), 0))
    started = time.perf_counter()
    report = graph.invoke(graph_input(messages), {"configurable": {"thread_id": args.thread}})[
        "compaction"
    ]
    elapsed = time.perf_counter() - started
    line = {
        "calls": summarizer.call_count,
        "action": report.action,
        "summary_id": report.summary_id,
        "seconds": elapsed,
        "finished_at": time.time(),
    }
    print(json.dumps(line), flush=True)
    store.close()


if __name__ == "__main__":
    main()
