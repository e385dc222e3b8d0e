"""Time each compaction call adds to a turn, with background pre-compaction on and off.

Replays real agent traces (tau-bench airline runs joined into one long session, and every
SWE-Gym trajectory as its own thread) at each point where the agent would call its model. The
summarizer sleeps like a real one (``--summary-seconds``, default 2 s) and counts its calls and
input tokens; between two calls the agent's own model "runs" for ``--pause`` seconds. Both
modes replay the same turns with the same settings; only ``precompact_ratio`` differs.

    python benchmarks/precompaction.py            # full replay, a few minutes
    python benchmarks/precompaction.py --before   # and the earlier plannings of issue 11 beside it
    python benchmarks/precompaction.py --quick    # a short smoke run

Aim: p95 added latency under 50 ms with pre-compaction on, at most +15% summarizer tokens per
message summarized. The pooled figure weighs each mode by its mix of workloads (a SWE-Gym
message costs about three tau-bench ones to summarize, and pre-compaction summarizes SWE-Gym
runs whose trigger never fires), so the per-workload table and the cost per covered token
are printed beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conversations import graph_input
from traces import concatenate_sessions, load_swe_gym, load_tau_bench_airline, model_call_points

from langgraph_compaction import SummaryStore, create_compaction_graph, precompaction
from langgraph_compaction.config.triggers import find_keep_start


class SleepingSummarizer(BaseChatModel):
    """Answers after ``seconds``, like a real model; counts calls and input tokens."""

    seconds: float = 2.0
    calls: int = 0
    input_tokens: int = 0
    busy: int = 0
    last_end: float = 0.0

    def wait_idle(self, quiet: float = 0.5, longest: float = 120.0) -> None:
        """Until no call has run for ``quiet`` seconds: a background job's chunks and store
        write are done (the gap between two chunks of a job is milliseconds)."""
        deadline = time.monotonic() + longest
        while time.monotonic() < deadline:
            with _COUNT_LOCK:
                idle = not self.busy and time.monotonic() - self.last_end >= quiet
            if idle:
                return
            time.sleep(0.05)

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
            self.busy += 1
        try:
            time.sleep(self.seconds)
        finally:
            with _COUNT_LOCK:
                self.busy -= 1
                self.last_end = time.monotonic()
        # Words of the transcript itself, so the reply passes the pipeline's not-a-summary
        # check (the prompt's own opening, nested summaries, would fail it after a few updates).
        prompt = str(messages[-1].content)
        transcript = prompt.rsplit("<conversation>", 1)[-1].split("</conversation>", 1)[0]
        text = f"summary {self.calls}: " + " ".join(transcript.split()[:60])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


_COUNT_LOCK = threading.Lock()


@dataclass
class Tally:
    """Summarizer input against what the summaries cover, for one group of threads."""

    tokens: int = 0
    """Summarizer input tokens (every call, background ones included)."""
    covered: int = 0
    """Messages the threads' newest summaries cover, summed: how far summarizing got."""
    covered_tokens: int = 0
    """Tokens of those messages: what summarizing them had to read at least once."""
    unused: int = 0
    """Summaries stored but never served (prepared for a trigger that never fired)."""

    def add(self, other: Tally) -> None:
        self.tokens += other.tokens
        self.covered += other.covered
        self.covered_tokens += other.covered_tokens
        self.unused += other.unused

    @property
    def per_message(self) -> float:
        return self.tokens / max(self.covered, 1)

    @property
    def per_covered_token(self) -> float:
        return self.tokens / max(self.covered_tokens, 1)


@dataclass
class ModeResult:
    mode: str
    added_ms: list[float]
    summary_calls: int
    summary_tokens: int
    turns: int
    covered: int
    """Messages the threads' newest summaries cover, summed: how far summarizing got."""
    groups: dict[str, Tally] = field(default_factory=dict)
    """Per workload (tau-bench, swe-gym): their message sizes differ threefold, so pooling
    them weighs a mode by how much of each it summarized."""


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


def plan_cutoff_now(pipe: Any, measured: Any, in_use: Any) -> int:
    """The cutoff planning before issue 11: the keep window of the call that prepares."""
    settings = pipe.settings
    keep, window = settings.config.keep, settings.window
    return find_keep_start(measured.messages, measured.scan, measured.lead, keep, window)


def every_call(pipe: Any, measured: Any, in_use: Any, headroom: float, plan: Any) -> Any:
    """The planning before the sliver check: the prepared cutoff whatever its last call holds."""
    return plan


def replay(
    mode: str,
    ratio: float | None,
    seconds: float,
    pause: float,
    quick: bool,
    planning: str = "now",
) -> ModeResult:
    """One mode over every trace. ``planning``: ``now`` (today's), ``trigger`` (the cutoff for
    the keep window at the trigger, without the sliver check), ``old`` (before issue 11: the
    keep window of the call that prepares)."""
    summarizer = SleepingSummarizer(seconds=seconds)
    added: list[float] = []
    turns = covered = 0
    groups: dict[str, Tally] = {}
    planner, fewer = precompaction.keep_start_at_trigger, precompaction.in_fewer_calls
    if planning == "old":
        precompaction.keep_start_at_trigger = plan_cutoff_now
    if planning in ("old", "trigger"):
        precompaction.in_fewer_calls = every_call
    try:
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
                thread: RunnableConfig = {"configurable": {"thread_id": f"{mode}-{name}"}}
                tokens_before, served = summarizer.input_tokens, set()
                for index, end in enumerate(points, 1):
                    started = time.perf_counter()
                    out = graph.invoke(graph_input(messages[:end]), thread)
                    added.append((time.perf_counter() - started) * 1000)
                    served.add(out["compaction"].summary_id)
                    turns += 1
                    time.sleep(pause)
                    print(
                        f"\r  {mode:6s} {name:14s} turn {index:3d}/{len(points)}",
                        end="",
                        file=sys.stderr,
                        flush=True,
                    )
                summarizer.wait_idle()  # a last background job lands before the next trace
                records = store.list_summaries(thread["configurable"]["thread_id"])
                reach = records[-1].covered_messages if records else 0
                covered += reach
                tally = Tally(
                    tokens=summarizer.input_tokens - tokens_before,
                    covered=reach,
                    covered_tokens=count_tokens_approximately(messages[:reach]) if reach else 0,
                    unused=sum(1 for r in records if r.id not in served),
                )
                groups.setdefault(name.split()[0], Tally()).add(tally)
            store.close()
    finally:
        precompaction.keep_start_at_trigger, precompaction.in_fewer_calls = planner, fewer
    print(file=sys.stderr)
    calls, tokens = summarizer.calls, summarizer.input_tokens
    return ModeResult(mode, added, calls, tokens, turns, covered, groups)


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="short replay, short sleeps")
    parser.add_argument("--summary-seconds", type=float, default=2.0)
    parser.add_argument("--pause", type=float, default=0.6, help="the agent model's own time")
    parser.add_argument("--ratio", type=float, default=0.7, help="precompact_ratio when on")
    parser.add_argument(
        "--before",
        action="store_true",
        help="also replay 'on-old': prepared summaries cut where the keep window is when they "
        "are prepared (the planning before issue 11), and 'on-trg': cut for the keep window at "
        "the trigger, without the check that spares a call for a sliver of transcript; side by "
        "side with the other modes",
    )
    args = parser.parse_args(argv)
    seconds = args.summary_seconds if not args.quick else min(args.summary_seconds, 0.3)
    pause = args.pause if not args.quick else min(args.pause, 0.1)
    results = [replay("off", None, seconds, pause, args.quick)]
    if args.before:
        results.append(replay("on-old", args.ratio, seconds, pause, args.quick, "old"))
        results.append(replay("on-trg", args.ratio, seconds, pause, args.quick, "trigger"))
    results.append(replay("on", args.ratio, seconds, pause, args.quick))
    print(
        f"summarizer {seconds:g} s per call, agent pause {pause:g} s, "
        f"precompact_ratio {args.ratio:g} when on"
    )
    header = (
        f"{'mode':6s}  {'turns':>5s}  {'median ms':>9s}  {'p95 ms':>8s}  {'max ms':>8s}  "
        f"{'sum calls':>9s}  {'sum tokens':>10s}  {'covered':>7s}  {'tokens/msg':>10s}  "
        f"{'unused':>6s}"
    )
    print(header)
    print("-" * len(header))
    for result in results:
        unused = sum(t.unused for t in result.groups.values())
        print(
            f"{result.mode:6s}  {result.turns:5d}  {statistics.median(result.added_ms):9.1f}  "
            f"{percentile(result.added_ms, 0.95):8.1f}  {max(result.added_ms):8.1f}  "
            f"{result.summary_calls:9d}  {result.summary_tokens:10d}  {result.covered:7d}  "
            f"{result.summary_tokens / max(result.covered, 1):10.1f}  {unused:6d}"
        )
    print()
    print("per workload: summarizer tokens per message covered (and per covered token)")
    names = sorted({name for result in results for name in result.groups})
    print(f"{'mode':6s}  " + "  ".join(f"{name:>22s}" for name in names) + f"  {'pooled':>22s}")
    for result in results:
        pooled = Tally()
        for tally in result.groups.values():
            pooled.add(tally)
        cells = [result.groups.get(name, Tally()) for name in names] + [pooled]
        print(
            f"{result.mode:6s}  "
            + "  ".join(f"{t.per_message:9.1f} /msg ({t.per_covered_token:5.2f})" for t in cells)
        )
    off, on = results[0], results[-1]
    for other in results[1:]:
        extra = other.summary_tokens / max(off.summary_tokens, 1) - 1
        per_message = (other.summary_tokens / max(other.covered, 1)) / (
            off.summary_tokens / max(off.covered, 1)
        ) - 1
        per_token = _pooled(other).per_covered_token / _pooled(off).per_covered_token - 1
        print(
            f"{other.mode}: extra summarizer tokens {extra:+.1%}; per message summarized "
            f"{per_message:+.1%} (aim: at most +15%); per covered token {per_token:+.1%}"
        )
    p95_on = percentile(on.added_ms, 0.95)
    print(f"p95 added latency with pre-compaction: {p95_on:.1f} ms (aim: under 50 ms)")
    return 0


def _pooled(result: ModeResult) -> Tally:
    pooled = Tally()
    for tally in result.groups.values():
        pooled.add(tally)
    return pooled


if __name__ == "__main__":
    raise SystemExit(main())
