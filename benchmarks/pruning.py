"""Pruning on real agent traces: tokens sent, summary calls avoided, prompt-cache stability.

Run it with ``python benchmarks/pruning.py`` (a few minutes on a busy 2-core machine) or
``--quick`` (a subset). Progress goes to stderr, the table to stdout.

What is replayed: each thread turn by turn, at every point where the agent calls its model
(``model_call_points``: after a user message, after the last result of a tool batch), through
one compaction graph per configuration, exactly as an agent would: ``messages[:i]`` with the
thread id. The same threads run with pruning off and on; everything else is identical.

- ``swe``: the 5 SWE-Gym OpenHands runs (coding; large tool outputs), trigger 8,000 tokens.
- ``tau-runs``: the 200 tau-bench airline runs, one thread each, trigger 3,000 tokens (the
  system prompt alone is about 1,550).
- ``tau-sessions``: the 200 runs as 20 long threads of 10 consecutive runs, trigger 12,000.

Settings: ``keep`` 10 messages, ``headroom_ratio`` 0.75 (default), ``keep_last_assistants`` 3,
``soft_trim_ratio`` 0.3, ``hard_clear_ratio`` 0.5 (LibreChat's defaults). The traces' tool
results are far smaller than LibreChat's ``min_prunable_tool_chars`` of 50,000 (the largest is
30,096 characters), so pruning would never act on them; the benchmark scales it to what counts
as large in each trace, about its 75th percentile: 1,500 characters for SWE-Gym, 800 for
tau-bench, with ``soft_trim`` at 600 characters (head 250, tail 250). The summarizer is a
deterministic instant stand-in whose summaries are about 250 tokens.

Figures (tokens are langchain-core's approximate count, system prompt included):

- ``tokens sent``: the sum over calls of the model input's tokens.
- ``summ. calls``: summarizer model calls (a long eviction takes several).
- ``compact.``: turns where the summary in use changed; ``crossings``: turns where the
  pruned messages changed (a pruning epoch) while the summary did not.
- ``stable``: of the other turns (neither), the share whose model input extends the previous
  turn's byte for byte (every field of every message, serialized), i.e. a provider's prompt
  cache can serve all of the previous input. The first turn of a thread is not counted.
- ``cached``: the share of all input tokens, over turns after the first, that lie in the
  longest common prefix with the previous turn's input (what a prompt cache could serve).
- ``cost proxy``: input tokens as billed with a prompt cache: uncached tokens at 1, cached ones
  (the common prefix above) at ``CACHE_READ_PRICE`` (0.1), plus every summary call's prompt.
  Cache-write premiums and output tokens are left out.

Reference run (about 80 s)::

    workload     prune calls tokens sent summ. calls compact. crossings  stable cached cost proxy
    swe          off      88     387,374          14        8         0  100.0%  80.0%    150,303
    swe          on       88     386,262          13        6         3  100.0%  79.3%    149,192
    tau-runs     off    2654   6,054,319         280      280         0  100.0%  90.4%  1,703,818
    tau-runs     on     2654   6,127,706         224      224       137  100.0%  89.4%  1,738,308
    tau-sessions off    2520  17,151,637          99       33         0  100.0%  97.3%  2,475,122
    tau-sessions on     2520  18,739,939          82       23        54  100.0%  96.2%  2,816,342

Every non-compaction turn extends the previous input (aim: 95%). Pruning avoids 20% of the
summary calls on tau-bench (17% on the sessions), but there tool output is a minority of the
context (28% of its characters; the system prompt is 46%), and a pruned context stays
between ``headroom_ratio`` x the trigger and the trigger where a summary would have reset it
to the keep window: tokens sent rise by 1% (runs) and 9% (sessions). The SWE-Gym runs are
short (a single run crosses the trigger once or twice), so pruning barely acts there.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from pydantic import PrivateAttr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from traces import (
    concatenate_sessions,
    load_swe_gym,
    load_tau_bench_airline,
    model_call_points,
)

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph

CACHE_READ_PRICE = 0.1
"""A cached input token's price relative to an uncached one (Anthropic; recent OpenAI models)."""
SOFT_TRIM = {"max_chars": 600, "head_chars": 250, "tail_chars": 250}
SUMMARY_TEXT = "## Goal\n{goal}\n## Progress\n" + "Work recorded so far, step by step. " * 26


@dataclass(frozen=True)
class Workload:
    name: str
    threads: Callable[[], list[list[BaseMessage]]]
    trigger: int
    min_prunable_tool_chars: int


def _tau_sessions() -> list[list[BaseMessage]]:
    runs = load_tau_bench_airline()
    return [concatenate_sessions(runs[k : k + 10], 10) for k in range(0, len(runs), 10)]


WORKLOADS = (
    Workload("swe", load_swe_gym, 8_000, 1_500),
    Workload("tau-runs", load_tau_bench_airline, 3_000, 800),
    Workload("tau-sessions", _tau_sessions, 12_000, 800),
)


def config_for(workload: Workload, pruning: bool) -> dict[str, Any]:
    return {
        "trigger": {"type": "tokens", "value": workload.trigger},
        "keep": {"type": "messages", "value": 10},
        "pruning": {
            "enabled": pruning,
            "min_prunable_tool_chars": workload.min_prunable_tool_chars,
            "soft_trim": SOFT_TRIM,
        },
    }


class StandInSummarizer(BaseChatModel):
    """Deterministic, instant, about 250 tokens per summary; counts its calls."""

    _calls: int = PrivateAttr(default=0)
    _prompt_tokens: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "stand-in-summarizer"

    @property
    def calls(self) -> int:
        return self._calls

    @property
    def prompt_tokens(self) -> int:
        return self._prompt_tokens

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._calls += 1
        self._prompt_tokens += count_tokens_approximately(messages)
        text = SUMMARY_TEXT.format(goal=f"call {self._calls}")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


@dataclass
class Tally:
    """What one configuration did over a workload."""

    threads: int = 0
    calls: int = 0
    tokens_sent: int = 0
    summary_calls: int = 0
    summary_prompt_tokens: int = 0
    compactions: int = 0
    crossings: int = 0
    stable: int = 0
    other: int = 0
    cached_tokens: int = 0
    later_tokens: int = 0
    seconds: float = 0.0

    @property
    def cost(self) -> float:
        """Input tokens billed, with prompt-cache reads at a tenth, summary prompts included."""
        uncached = self.tokens_sent - self.cached_tokens
        return uncached + CACHE_READ_PRICE * self.cached_tokens + self.summary_prompt_tokens

    @property
    def stable_share(self) -> float:
        total = self.stable + self.other
        return self.stable / total if total else 1.0


def _dump(message: BaseMessage) -> str:
    return json.dumps(message.model_dump(), sort_keys=True, default=str)


class _Sizes:
    """Token count per serialized message, counted once."""

    def __init__(self) -> None:
        self._known: dict[str, int] = {}

    def __call__(self, dumped: str, message: BaseMessage) -> int:
        size = self._known.get(dumped)
        if size is None:
            size = self._known[dumped] = count_tokens_approximately([message])
        return size


def _pruned(output: Sequence[BaseMessage], originals: dict[str | None, Any]) -> dict[str, Any]:
    return {
        m.id or "": m.content for m in output if m.id in originals and m.content != originals[m.id]
    }


def replay_thread(graph: Any, run: Sequence[BaseMessage], thread: str, tally: Tally) -> None:
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    originals = {m.id: m.content for m in run}
    sizes = _Sizes()
    previous: tuple[list[str], str | None, dict[str, Any]] | None = None
    for point in model_call_points(run):
        result = graph.invoke({"messages": cast(list[AnyMessage], list(run[:point]))}, config)
        report: CompactionReport = result["compaction"]
        output: list[BaseMessage] = result["llm_input_messages"]
        dumped = [_dump(m) for m in output]
        pruned = _pruned(output, originals)
        tally.calls += 1
        tally.tokens_sent += report.tokens_after
        if previous is not None:
            before, summary_id, before_pruned = previous
            common = 0
            for old, new in zip(before, dumped, strict=False):
                if old != new:
                    break
                common += 1
            tally.cached_tokens += sum(
                sizes(d, m) for d, m in zip(dumped[:common], output, strict=False)
            )
            tally.later_tokens += sum(sizes(d, m) for d, m in zip(dumped, output, strict=True))
            if report.summary_id != summary_id:
                tally.compactions += 1
            elif pruned != before_pruned:
                tally.crossings += 1
            elif common == len(before):
                tally.stable += 1
            else:
                tally.other += 1
        previous = (dumped, report.summary_id, pruned)


def run_workload(workload: Workload, pruning: bool, limit: int | None, folder: Path) -> Tally:
    threads = workload.threads()[:limit]
    summarizer = StandInSummarizer()
    store = SummaryStore(f"sqlite:///{tempfile.mkdtemp(dir=folder)}/summaries.db")  # fresh
    graph = create_compaction_graph(config_for(workload, pruning), model=summarizer, store=store)
    tally = Tally(threads=len(threads))
    started = time.perf_counter()
    try:
        for k, run in enumerate(threads, 1):
            replay_thread(graph, run, f"{workload.name}-{k}", tally)
            label = "on " if pruning else "off"
            print(
                f"\r{workload.name:<12} pruning {label} thread {k:>3}/{len(threads)}"
                f"  calls {tally.calls:>5}",
                end="",
                file=sys.stderr,
                flush=True,
            )
    finally:
        store.close()
    print(file=sys.stderr)
    tally.summary_calls = summarizer.calls
    tally.summary_prompt_tokens = summarizer.prompt_tokens
    tally.seconds = time.perf_counter() - started
    return tally


HEADER = (
    f"{'workload':<12} {'prune':<5} {'calls':>5} {'tokens sent':>11} {'summ. calls':>11} "
    f"{'compact.':>8} {'crossings':>9} {'stable':>7} {'cached':>6} {'cost proxy':>10}"
)


def row(name: str, pruning: bool, tally: Tally) -> str:
    cached = tally.cached_tokens / tally.later_tokens if tally.later_tokens else 0.0
    return (
        f"{name:<12} {'on' if pruning else 'off':<5} {tally.calls:>5} {tally.tokens_sent:>11,} "
        f"{tally.summary_calls:>11} {tally.compactions:>8} {tally.crossings:>9} "
        f"{tally.stable_share:>7.1%} {cached:>6.1%} {tally.cost:>10,.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a subset of each workload")
    parser.add_argument(
        "--workload", choices=[w.name for w in WORKLOADS], action="append", help="repeatable"
    )
    args = parser.parse_args()
    chosen = [w for w in WORKLOADS if not args.workload or w.name in args.workload]
    limits = {"swe": None, "tau-runs": 40, "tau-sessions": 4} if args.quick else {}
    results: list[tuple[Workload, Tally, Tally]] = []
    with tempfile.TemporaryDirectory() as folder:
        for workload in chosen:
            limit = limits.get(workload.name)
            off = run_workload(workload, False, limit, Path(folder))
            on = run_workload(workload, True, limit, Path(folder))
            results.append((workload, off, on))
    print(HEADER)
    for workload, off, on in results:
        print(row(workload.name, False, off))
        print(row(workload.name, True, on))
    print()
    for workload, off, on in results:
        sent = on.tokens_sent / off.tokens_sent - 1 if off.tokens_sent else 0.0
        cost = on.cost / off.cost - 1 if off.cost else 0.0
        print(
            f"{workload.name} ({on.threads} threads): tokens sent {sent:+.1%}, "
            f"cost proxy {cost:+.1%}, "
            f"{off.summary_calls - on.summary_calls} summary calls avoided "
            f"({off.summary_calls} -> {on.summary_calls}), "
            f"stable {on.stable_share:.1%} of {on.stable + on.other} non-compaction turns "
            f"with pruning (aim: 95%); {off.seconds + on.seconds:.0f} s"
        )


if __name__ == "__main__":
    main()
