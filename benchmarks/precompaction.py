"""Time each compaction call adds to a turn, with background pre-compaction on and off.

Replays real agent traces (tau-bench airline runs joined into one long session, and every
SWE-Gym trajectory as its own thread) at each point where the agent would call its model. The
summarizer sleeps like a real one (``--summary-seconds``, default 2 s) and counts its calls and
input tokens; between two calls the agent's own model "runs" for ``--pause`` seconds. Both
modes replay the same turns with the same settings; only ``precompact_ratio`` differs.

    python benchmarks/precompaction.py            # full replay, a few minutes
    python benchmarks/precompaction.py --quick    # a short smoke run

Aim: p95 added latency under 50 ms with pre-compaction on, at no more than 10% extra
summarizer tokens.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from traces import concatenate_sessions, load_swe_gym, load_tau_bench_airline, model_call_points

from langgraph_compaction import SummaryStore, create_compaction_graph


class SleepingSummarizer(BaseChatModel):
    """Answers after ``seconds``, like a real model; counts calls and input tokens."""

    seconds: float = 2.0
    calls: int = 0
    input_tokens: int = 0

    @property
    def _llm_type(self) -> str:
        return "sleeping-summarizer"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with _COUNT_LOCK:
            self.calls += 1
            self.input_tokens += count_tokens_approximately(messages)
        time.sleep(self.seconds)
        text = f"summary {self.calls}: " + " ".join(str(messages[-1].content).split()[:60])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


_COUNT_LOCK = threading.Lock()


@dataclass
class ModeResult:
    mode: str
    added_ms: list[float]
    summary_calls: int
    summary_tokens: int
    turns: int
    covered: int
    """Messages the threads' newest summaries cover, summed: how far summarizing got."""


def workloads() -> list[tuple[str, list[BaseMessage]]]:
    """The traces replayed: one long tau-bench session and each SWE-Gym trajectory."""
    tau = concatenate_sessions(load_tau_bench_airline(), 12)
    return [("tau-bench x12", tau)] + [
        (f"swe-gym {i}", run) for i, run in enumerate(load_swe_gym())
    ]


def trigger_for(messages: Sequence[BaseMessage]) -> int:
    """A trigger a quarter of the way through the trace, above its largest single message."""
    total = count_tokens_approximately(messages)
    largest = max(count_tokens_approximately([m]) for m in messages)
    return max(total // 4, largest * 3)


def replay(mode: str, ratio: float | None, seconds: float, pause: float, quick: bool) -> ModeResult:
    summarizer = SleepingSummarizer(seconds=seconds)
    added: list[float] = []
    turns = covered = 0
    with tempfile.TemporaryDirectory(prefix="compaction-precompact-") as tmp:
        store = SummaryStore(f"sqlite:///{Path(tmp) / 'summaries.db'}")
        for name, messages in workloads()[: 2 if quick else None]:
            config = {
                "trigger": {"type": "tokens", "value": trigger_for(messages)},
                "keep": {"type": "messages", "value": 6},
                "precompact_ratio": ratio,
            }
            graph = create_compaction_graph(config, model=summarizer, store=store)
            points = model_call_points(messages)[: 40 if quick else None]
            thread = {"configurable": {"thread_id": f"{mode}-{name}"}}
            for index, end in enumerate(points, 1):
                started = time.perf_counter()
                graph.invoke({"messages": messages[:end]}, thread)
                added.append((time.perf_counter() - started) * 1000)
                turns += 1
                time.sleep(pause)
                print(
                    f"\r  {mode:4s} {name:14s} turn {index:3d}/{len(points)}",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
            time.sleep(seconds + 0.5)  # let a last background job land before the next trace
            records = store.list_summaries(thread["configurable"]["thread_id"])
            covered += records[-1].covered_messages if records else 0
        store.close()
    print(file=sys.stderr)
    return ModeResult(mode, added, summarizer.calls, summarizer.input_tokens, turns, covered)


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="short replay, short sleeps")
    parser.add_argument("--summary-seconds", type=float, default=2.0)
    parser.add_argument("--pause", type=float, default=0.6, help="the agent model's own time")
    parser.add_argument("--ratio", type=float, default=0.7, help="precompact_ratio when on")
    args = parser.parse_args(argv)
    seconds = 0.3 if args.quick else args.summary_seconds
    pause = 0.1 if args.quick else args.pause
    results = [
        replay("off", None, seconds, pause, args.quick),
        replay("on", args.ratio, seconds, pause, args.quick),
    ]
    print(
        f"summarizer {seconds:g} s per call, agent pause {pause:g} s, "
        f"precompact_ratio {args.ratio:g} when on"
    )
    header = (
        f"{'mode':4s}  {'turns':>5s}  {'median ms':>9s}  {'p95 ms':>8s}  {'max ms':>8s}  "
        f"{'sum calls':>9s}  {'sum tokens':>10s}  {'covered':>7s}  {'tokens/msg':>10s}"
    )
    print(header)
    print("-" * len(header))
    for result in results:
        print(
            f"{result.mode:4s}  {result.turns:5d}  {statistics.median(result.added_ms):9.1f}  "
            f"{percentile(result.added_ms, 0.95):8.1f}  {max(result.added_ms):8.1f}  "
            f"{result.summary_calls:9d}  {result.summary_tokens:10d}  {result.covered:7d}  "
            f"{result.summary_tokens / max(result.covered, 1):10.1f}"
        )
    off, on = results
    extra = (on.summary_tokens - off.summary_tokens) / max(off.summary_tokens, 1)
    per_message = (on.summary_tokens / max(on.covered, 1)) / (
        off.summary_tokens / max(off.covered, 1)
    ) - 1
    print(f"extra summarizer tokens with pre-compaction: {extra:+.1%} (aim: at most +10%)")
    print(
        f"extra summarizer tokens per message summarized: {per_message:+.1%} "
        "(pre-compaction summarizes further ahead by the end of a replay)"
    )
    p95_on = percentile(on.added_ms, 0.95)
    print(f"p95 added latency with pre-compaction: {p95_on:.1f} ms (aim: under 50 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
