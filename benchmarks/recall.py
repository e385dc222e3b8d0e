"""Total recall on LoCoMo: how well search_messages finds what compaction evicted, and how fast.

Run ``python benchmarks/recall.py`` (recall on both stores, latency at 10,000 and 100,000
messages, indexing cost; some minutes), ``--quick`` (recall on SQLite, latency at 2,000:
a smoke run), ``--backends sqlite``, ``--study`` (the ranking variants tried, on raw FTS5).
LoCoMo (``../shared/data/locomo``, CC BY-NC) is read from there, never copied.

Method:

- Each conversation is replayed as one thread: a header message per session (``Session 3,
  1:56 pm on 8 May, 2023``, a human message), then its turns, speaker A as human and speaker
  B as ai messages named after the speaker; a turn that shares a photo carries its caption
  (``[shares a photo: ...]``), the only part of it a text model sees.
- Compaction with recall on, tokens trigger 4,000, keep 20 messages: once the messages after
  the last cut (plus a 300-token summary) pass 4,000 tokens (langchain-core's approximate
  count), all but the last 20 are summarized, and the ones newly covered are indexed through
  ``add_summary(..., recall_messages=...)``, rendered as the summary transcript renders them.
- Every question of categories 1-4 whose evidence turns were all evicted is searched with
  its own text; recall@k is the share of its evidence turns among the first k hits, averaged
  over questions (per category and overall).
- Latency: the store filled with LoCoMo's turns (cycled) to 10,000 and 100,000 messages, in
  threads of 600 (a long conversation each), and once in one thread holding them all
  (PostgreSQL analyzed after the fill, as autovacuum would); 300 questions searched in
  random threads, one call at a time; p50 and p95.
- Indexing cost: ``add_summary`` with 100 evicted messages against the same call without.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from sqlalchemy import create_engine

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.store import IndexedMessage
from langgraph_compaction.store.summary_store import plumbing
from langgraph_compaction.summary.prompts import render_transcript

DATA = (
    Path(
        os.environ.get("COMPACTION_SHARED_DATA")
        or Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    / "locomo"
    / "locomo10.json"
)
TRIGGER, KEEP, SUMMARY_TOKENS = 4000, 20, 300
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def load() -> list[dict[str, Any]]:
    if not DATA.exists():
        sys.exit(f"LoCoMo is not at {DATA}; see ../shared/data/locomo/SOURCE.md")
    conversations: list[dict[str, Any]] = json.loads(DATA.read_text())
    return conversations


def replay_messages(conversation: dict[str, Any]) -> list[BaseMessage]:
    """The conversation as a thread's history: session headers, then the turns."""
    conv, n = conversation["conversation"], 1
    out: list[BaseMessage] = []
    while f"session_{n}" in conv:
        header = f"Session {n}, {conv[f'session_{n}_date_time']}"
        out.append(HumanMessage(header, id=f"S{n}"))
        for turn in conv[f"session_{n}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            kind = HumanMessage if turn["speaker"] == conv["speaker_a"] else AIMessage
            out.append(kind(text, id=turn["dia_id"], name=turn["speaker"]))
        n += 1
    return out


def indexed(position: int, message: BaseMessage) -> IndexedMessage:
    """What the pipeline passes for one evicted message."""
    return IndexedMessage(
        position=position,
        message_id=message.id or f"#{position}",
        type=message.type,
        name=message.name,
        text=render_transcript([message]),
    )


def compaction_cuts(history: list[BaseMessage]) -> list[int]:
    """Where each summary of the replay ends: the history length minus ``KEEP`` at a trigger."""
    cuts, cut, live = [], 0, SUMMARY_TOKENS
    for i, message in enumerate(history):
        live += count_tokens_approximately([message])
        if live > TRIGGER and i + 1 - KEEP > cut:
            cut = i + 1 - KEEP
            cuts.append(cut)
            live = SUMMARY_TOKENS + count_tokens_approximately(history[cut : i + 1])
    return cuts


def replay_direct(store: SummaryStore, thread: str, history: list[BaseMessage]) -> int:
    """``--direct``: the cuts computed here, indexed through ``add_summary`` itself."""
    start, parent = 0, None
    for n, cut in enumerate(compaction_cuts(history), 1):
        record = plumbing(store).add_summary(
            thread_id=thread, namespace="bench", parent_id=parent,
            boundary_message_id=history[cut - 1].id or "", covered_messages=cut,
            prefix_hash=f"{thread}/{cut}", summary=f"Summary {n}.", summary_tokens=5,
            source_tokens=0, kind="initial" if n == 1 else "update", model="fake",
            rescued_message_ids=(),
            recall_messages=[indexed(p, history[p]) for p in range(start, cut)],
        )  # fmt: skip
        start, parent = cut, record.id
    return start


class EchoSummarizer(BaseChatModel):
    """A summarizer that answers at once with the transcript's first 60 words.

    Instant and deterministic; its reply names the conversation's words, as the pipeline's
    check that a reply is a summary requires.
    """

    @property
    def _llm_type(self) -> str:
        return "echo-summarizer"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        transcript = prompt.partition("<conversation>")[2] or prompt
        summary = "Summary: " + " ".join(transcript.split()[:60])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(summary))])


PIPELINE = {
    "recall": {"enabled": True},
    "trigger": {"type": "tokens", "value": TRIGGER},
    "keep": {"type": "messages", "value": KEEP},
}


def replay(store: SummaryStore, thread: str, history: list[BaseMessage]) -> int:
    """Replay one conversation through the real pipeline; returns how many were evicted.

    The compaction graph runs before every turn as an agent runs it before calling its
    model, on the history so far; the summarizer is a fixed fake (instant, deterministic).
    What gets indexed is what the pipeline indexes. Evicted = the covered prefix of the
    last summary, read back from the store.
    """
    summarizer = EchoSummarizer()
    graph = create_compaction_graph(PIPELINE, model=summarizer, store=store, namespace="bench")
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    for end in range(1, len(history) + 1):
        graph.invoke({"messages": history[:end]}, config)
    latest = store.latest_summaries(thread, namespace="bench", limit=1)
    return latest[0].covered_messages if latest else 0


def evidence(question: dict[str, Any]) -> list[str]:
    return [i for e in question.get("evidence", []) for i in re.split(r"[\s;,]+", e) if i]


def measure_recall(
    store: SummaryStore, conversations: list[dict[str, Any]], replayer: Any = None
) -> dict[Any, Any]:
    """Per category: [questions, summed recall@5, summed recall@10]."""
    totals: dict[int, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for conversation in conversations:
        thread, history = conversation["sample_id"], replay_messages(conversation)
        evicted = (replayer or replay)(store, thread, history)
        where = {m.id: p for p, m in enumerate(history)}
        for question in conversation["qa"]:
            if question["category"] not in CATEGORIES:
                continue
            wanted = {where[e] for e in evidence(question) if e in where}
            if not wanted or max(wanted) >= evicted:
                continue
            hits = store.search_messages(thread, question["question"], namespace="bench", limit=10)
            found = [h.position for h in hits]
            row = totals[question["category"]]
            row[0] += 1
            row[1] += len(wanted & set(found[:5])) / len(wanted)
            row[2] += len(wanted & set(found)) / len(wanted)
    return totals


def recall_table(name: str, totals: dict[int, list[float]]) -> list[str]:
    lines = [f"\n### Recall on {name}\n", "| category | questions | recall@5 | recall@10 |"]
    lines.append("| --- | ---: | ---: | ---: |")
    for category, label in CATEGORIES.items():
        n, at5, at10 = totals.get(category, [0, 0.0, 0.0])
        if n:
            lines.append(f"| {category} {label} | {n:.0f} | {at5 / n:.3f} | {at10 / n:.3f} |")
    n, at5, at10 = (sum(row[i] for row in totals.values()) for i in range(3))
    lines.append(f"| **all** | {n:.0f} | **{at5 / n:.3f}** | **{at10 / n:.3f}** |")
    return lines


def fill(store: SummaryStore, total: int, per_thread: int, turns: list[BaseMessage]) -> list[str]:
    """``total`` indexed messages in threads of ``per_thread``, 100 per summary."""
    threads = []
    for t in range(0, total, per_thread):
        thread = f"fill-{t // per_thread}"
        threads.append(thread)
        for start in range(0, min(per_thread, total - t), 100):
            batch = [
                indexed(p, turns[(t + p) % len(turns)])
                for p in range(start, min(start + 100, per_thread, total - t))
            ]
            plumbing(store).add_summary(
                thread_id=thread, namespace="bench", parent_id=None,
                boundary_message_id=batch[-1].message_id, covered_messages=start + len(batch),
                prefix_hash=f"{thread}/{start}", summary="Summary.", summary_tokens=2,
                source_tokens=0, kind="initial", model=None, rescued_message_ids=(),
                recall_messages=[IndexedMessage(m.position, f"{thread}:{m.position}", m.type,
                                                m.name, m.text) for m in batch],
            )  # fmt: skip
    return threads


def analyze(url: str) -> None:
    """PostgreSQL: table statistics after the bulk fill, as autovacuum gathers them soon after.

    Without them the planner guesses one row per thread and filters a long thread row by row
    instead of asking the GIN index."""
    if url.startswith("postgresql"):
        engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        with engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE compaction_messages")
        engine.dispose()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(calls: list[Callable[[], object]]) -> tuple[float, float]:
    """p50 and p95 in milliseconds."""
    times = []
    for call in calls:
        start = time.perf_counter_ns()
        call()
        times.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(times), percentile(times, 0.95)


def latency(url_for: Callable[[], Any], sizes: list[int], questions: list[str]) -> list[str]:
    turns = [m for c in load() for m in replay_messages(c)]
    lines = ["| messages | layout | p50 ms | p95 ms |", "| ---: | --- | ---: | ---: |"]
    rng = random.Random(7)
    for size in sizes:
        for layout, per_thread in (("threads of 600", 600), ("one thread", size)):
            with url_for() as url, SummaryStore(url) as store:
                threads = fill(store, size, per_thread, turns)
                analyze(url)
                asked = rng.sample(questions, min(300, len(questions)))
                store.search_messages(threads[0], asked[0], namespace="bench")  # warm
                search = partial(store.search_messages, namespace="bench")
                p50, p95 = timed([partial(search, rng.choice(threads), q) for q in asked])
                lines.append(f"| {size:,} | {layout} | {p50:.2f} | {p95:.2f} |")
                print(lines[-1], flush=True)
    return lines


def indexing_cost(url_for: Callable[[], Any]) -> str:
    turns = [m for c in load() for m in replay_messages(c)][:100]
    with url_for() as url, SummaryStore(url) as store:
        costs: dict[bool, list[Callable[[], object]]] = {False: [], True: []}
        for n in range(200):
            recall = n % 2 == 1
            batch = [indexed(p, m) for p, m in enumerate(turns)] if recall else []
            costs[recall].append(
                partial(
                    plumbing(store).add_summary,
                    thread_id=f"cost-{n}", namespace="bench", parent_id=None,
                    boundary_message_id="m", covered_messages=100, prefix_hash="p",
                    summary="Summary.", summary_tokens=2, source_tokens=0, kind="initial",
                    model=None, rescued_message_ids=(), recall_messages=batch,
                )
            )  # fmt: skip
        without, _ = timed(costs[False])
        with_recall, _ = timed(costs[True])
    return (
        f"add_summary median {without:.2f} ms without recall, {with_recall:.2f} ms with 100 "
        f"messages indexed: +{with_recall - without:.2f} ms"
    )


@contextmanager
def sqlite_url() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        yield f"sqlite:///{folder}/recall.db"


@contextmanager
def kept(path: str) -> Iterator[str]:
    Path(path).unlink(missing_ok=True)
    yield f"sqlite:///{path}"


def postgres_url() -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _store_support import pg_schema  # the tests' fresh-schema helper

    return pg_schema("lgc_recall_bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--study", action="store_true", help="ranking variants")
    parser.add_argument("--direct", action="store_true", help="index via add_summary itself")
    parser.add_argument("--keep", metavar="FILE", help="SQLite only: keep the replayed store")
    parser.add_argument("--recall-only", action="store_true", help="no latency, no cost")
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgres"])
    args = parser.parse_args()
    conversations = load()
    if args.study:
        sys.path.insert(0, str(Path(__file__).parent))
        module = importlib.import_module("recall_study")  # benchmarks/recall_study.py
        module.study(conversations)
        module.pipeline_study(conversations, measure_recall)
        return
    backends = {"sqlite": sqlite_url, "postgres": postgres_url}
    chosen = ["sqlite"] if args.quick else args.backends
    questions = [q["question"] for c in conversations for q in c["qa"] if q["category"] != 5]
    sizes = [2_000] if args.quick else [10_000, 100_000]
    out = ["## Total recall on LoCoMo"]
    for name in chosen:
        replayer = replay_direct if args.direct else replay
        started = time.perf_counter()
        recall_url = kept(args.keep) if args.keep and name == "sqlite" else backends[name]()
        with recall_url as url, SummaryStore(url) as store:
            out += recall_table(name, measure_recall(store, conversations, replayer))
        out.append(f"\n(replay and search: {time.perf_counter() - started:.0f} s)")
        print("\n".join(out), flush=True)
        if args.recall_only:
            continue
        out += [f"\n### Search latency on {name}\n", *latency(backends[name], sizes, questions)]
        out.append(f"\nIndexing cost on {name}: {indexing_cost(backends[name])}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
