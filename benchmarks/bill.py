"""The bill in dollars: every system on the three shared workloads, for a few real model pairs.

    python benchmarks/bill.py          # full run: benchmarks/results/bill-<UTC time>.txt/.json
    python benchmarks/bill.py --quick  # a smoke run of a few turns

Needs the benchmark-only dependencies (``pip install -r benchmarks/requirements.txt``) and
``genai-prices`` (the ``evaluate`` extra), which ships its price table: no network.

Workloads, settings and the deterministic summarizer (``CountingSummarizer``, its usage
counted with the one token counter) are ``compare.py``'s. Each system is replayed once per
workload; each replay is then billed for every pair of (agent model, summarizer model):

- agent calls: ``evaluate.prices.cached_prefix`` under the agent's provider rules (Anthropic:
  a breakpoint at the end of each call, the prefix shared with the thread's previous call read
  from the cache, the rest written, nothing under 1,024 tokens; OpenAI: the shared prefix read
  in 128-token steps from 1,024, no write charge), priced by ``Price.cost`` (genai-prices).
  Only the agent's input is billed: its output is the same for every system.
- summary calls: the summarizer's input and output at the summarizer's prices, uncached (the
  transcript is a new prompt). A ``summary_context: "conversation"`` system (when
  ``CompactionConfig`` has the key) is billed at the agent's prices, its input reading the
  prefix each summary call shares with the thread's previous agent call from the cache (the
  rest at the base input price: the summary call writes nothing the next call reads).

Systems:

- ``none``: no compaction, the whole history every call.
- ``compaction``: this package with its defaults (``summary_context`` "transcript") and
  compare.py's equal settings; ``compaction-conversation`` the same with
  ``summary_context: "conversation"``, skipped (and said so) while the key does not exist.
- ``langchain``: ``SummarizationMiddleware`` as compare.py drives it.
- ``masking-K``: old tool results hard cleared (the package's placeholder), no summaries. The
  package cannot prune without summarizing (a pruning epoch that cannot get under the trigger
  hands over to a summary, and a huge ``keep`` still summarizes), so this is replayed here with
  the package's epoch rule (``Masking``): at a crossing every tool result older than the last
  K assistant turns is cleared, and the treatments stay frozen until the next crossing, so the
  cached prefix survives between crossings. ``masking-rolling-K`` masks on every call from the
  first (JetBrains' observation masking), each call moving the mask one turn on.
- ``compaction+masking-K``: this package with ``pruning`` on: every tool result of any size
  older than the last K assistant turns hard cleared at a crossing, a summary only when that
  is not enough.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))
from compare import (  # noqa: E402
    SUMMARY_CAP,
    TRIM_TOKENS,
    Compaction,
    CountingSummarizer,
    LangChainMiddleware,
    PerMessage,
    Serializer,
    Workload,
    count_tokens,
    load_workloads,
)
from traces import model_call_points  # noqa: E402

from langgraph_compaction import CompactionConfig, SummaryStore, create_compaction_graph  # noqa: E402
from langgraph_compaction.config.parts import HardClearConfig  # noqa: E402
from langgraph_compaction.evaluate.prices import (  # noqa: E402
    Price,
    PriceBook,
    cached_prefix,
    price_book,
)

PAIRS = {
    "sonnet-4.5+haiku-4.5": ("anthropic:claude-sonnet-4-5", "anthropic:claude-haiku-4-5"),
    "gpt-4.1+4.1-mini": ("openai:gpt-4.1", "openai:gpt-4.1-mini"),
    "4.1-mini+4.1-nano": ("openai:gpt-4.1-mini", "openai:gpt-4.1-nano"),
}
TOOL_HEAVY = ("tau", "swe")
HAS_CONVERSATION_MODE = "summary_context" in CompactionConfig.model_fields


# --------------------------------------------------------------------------- systems


class NoCompaction:
    """The whole history on every call."""

    def __init__(self, workload: Workload, store: SummaryStore, thread: str) -> None:
        self.summarizer = CountingSummarizer()

    def prepare(self, history: list[BaseMessage]) -> list[BaseMessage]:
        return history


class AgentStandIn(CountingSummarizer):
    """The summarizer as the agent's own model, for ``summary_context: "conversation"``.

    It accepts the agent's tools (a real chat model binds them; the stand-in never calls one)
    and names words of the whole conversation it was sent, not of a ``<conversation>`` block:
    that mode sends the agent's input, then the instruction.
    """

    sent: list[list[BaseMessage]] = Field(default_factory=list)
    """Every summary call's messages, to bill the prefix it shares with the agent's call."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        self.input_tokens += count_tokens(messages)
        self.sent.append(list(messages))
        seen = " ".join(str(m.content) for m in messages[:-1])
        named = [w for w in seen.split() if w.isalpha() and len(w) >= 6][-12:] or ["nothing"]
        text = (
            f"## Goal\nSummary number {self.calls} of this conversation.\n## Progress\n"
            + "The user and the assistant went through the requests listed earlier. " * 7
            + "\n## Critical Context\n"
            + " ".join(named)
        )
        self.output_tokens += count_tokens([AIMessage(text)])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


class Package(Compaction):
    """compare.py's ``Compaction`` with extra settings (pruning, summary_context).

    In the conversation mode the summarizer is the agent's own model (``fallback_model``):
    that mode refuses a separate ``model=``.
    """

    def __init__(
        self, workload: Workload, store: SummaryStore, thread: str, extra: dict[str, Any]
    ) -> None:
        conversation = extra.get("summary_context") == "conversation"
        self.summarizer = AgentStandIn() if conversation else CountingSummarizer()
        settings: dict[str, Any] = {
            "trigger": {"type": "tokens", "value": workload.trigger},
            "keep": {"type": "messages", "value": workload.keep},
            "trim_tokens_to_summarize": TRIM_TOKENS,
            "max_summary_tokens": SUMMARY_CAP,
            **extra,
        }
        self.graph = create_compaction_graph(
            settings,
            model=None if conversation else self.summarizer,
            fallback_model=self.summarizer if conversation else None,
            store=store,
            token_counter=count_tokens,
        )
        self.config = {"configurable": {"thread_id": thread}}
        self.kept = []
        self.compacted = False


def masking_settings(turns: int) -> dict[str, Any]:
    """Pruning that hard clears every tool result older than the last ``turns`` assistant turns."""
    return {
        "pruning": {
            "enabled": True,
            "keep_last_assistants": turns,
            "soft_trim_ratio": 0.0,
            "hard_clear_ratio": 0.0,
            "min_prunable_tool_chars": 0,
        }
    }


class Masking:
    """Old tool results cleared in batches, never a summary (the package's epoch rule).

    When the masked input reaches the next crossing, every tool result older than the last
    ``turns`` assistant turns is cleared; the treatments then stay frozen until the masked
    input reaches the next crossing: the trigger, or, when masking cannot get under 0.75 of
    it (``headroom_ratio``), a quarter of the trigger above the size masking left. With
    ``rolling`` the mask is applied on every call instead (JetBrains' observation masking).
    """

    HEADROOM = 0.75

    def __init__(
        self,
        workload: Workload,
        store: SummaryStore,
        thread: str,
        turns: int,
        rolling: bool = False,
    ) -> None:
        self.summarizer = CountingSummarizer()
        self.trigger = workload.trigger
        self.crossing = float(workload.trigger)
        self.turns = turns
        self.rolling = rolling
        self.placeholder = HardClearConfig().placeholder
        self.copies: dict[str, ToolMessage] = {}

    def _masked(self, history: list[BaseMessage]) -> list[BaseMessage]:
        return [self.copies.get(m.id or "", m) for m in history]

    def prepare(self, history: list[BaseMessage]) -> list[BaseMessage]:
        masked = self._masked(history)
        if not self.rolling and count_tokens(masked) < self.crossing:
            return masked
        first_user = next((i for i, m in enumerate(history) if isinstance(m, HumanMessage)), None)
        assistants = [i for i, m in enumerate(history) if isinstance(m, AIMessage)]
        if first_user is None or len(assistants) < self.turns:
            return masked
        protected = assistants[-self.turns] if self.turns else len(history)
        for message in history[first_user + 1 : protected]:
            if isinstance(message, ToolMessage) and message.id and message.id not in self.copies:
                self.copies[message.id] = message.model_copy(update={"content": self.placeholder})
        masked = self._masked(history)
        if not self.rolling:
            left = count_tokens(masked)
            self.crossing = max(self.trigger, left + (1 - self.HEADROOM) * self.trigger)
        return masked


def systems(mask_turns: Sequence[int]) -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {
        "none": NoCompaction,
        "compaction": functools.partial(Package, extra={}),
    }
    if HAS_CONVERSATION_MODE:
        out["compaction-conversation"] = functools.partial(
            Package, extra={"summary_context": "conversation"}
        )
    out["langchain"] = LangChainMiddleware
    for k in mask_turns:
        out[f"masking-{k}"] = functools.partial(Masking, turns=k)
        out[f"masking-rolling-{k}"] = functools.partial(Masking, turns=k, rolling=True)
        out[f"compaction+masking-{k}"] = functools.partial(Package, extra=masking_settings(k))
    return out


# --------------------------------------------------------------------------- replay


@dataclass(frozen=True)
class Call:
    """One agent call as sent (messages rendered, tokens per message) and its summary usage."""

    rendered: list[str]
    tokens: list[int]
    summary_calls: int
    summary_input: int
    summary_output: int
    prompts: tuple[tuple[list[str], list[int]], ...] = ()
    """Conversation mode: each summary call's messages as sent and their tokens."""


@dataclass
class Recorded:
    threads: list[list[Call]] = field(default_factory=list)
    seconds: float = 0.0


def replay(make: Callable[..., Any], workload: Workload, store: SummaryStore, tag: str) -> Recorded:
    recorded = Recorded()
    begun = time.perf_counter()
    serialize, tokens = Serializer(), PerMessage(lambda m: count_tokens([m]))
    for t, history in enumerate(workload.threads):
        runner = make(workload, store, f"{tag}-{workload.name}-{t}")
        calls: list[Call] = []
        for end in model_call_points(history):
            counter = runner.summarizer
            before = (counter.calls, counter.input_tokens, counter.output_tokens)
            prefix = history[:end]
            if isinstance(runner, LangChainMiddleware):
                runner.append(prefix)
            model_input: list[AnyMessage] = runner.prepare(prefix)
            calls.append(
                Call(
                    serialize(model_input),
                    tokens(model_input),
                    counter.calls - before[0],
                    counter.input_tokens - before[1],
                    counter.output_tokens - before[2],
                    tuple(
                        (serialize(sent), tokens(sent))
                        for sent in getattr(counter, "sent", [])[before[0] :]
                    ),
                )
            )
        recorded.threads.append(calls)
    recorded.seconds = time.perf_counter() - begun
    return recorded


# --------------------------------------------------------------------------- billing


@dataclass
class Dollars:
    agent: float = 0.0
    summarizer: float = 0.0
    agent_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    summary_calls: int = 0
    summary_input: int = 0
    summary_output: int = 0

    @property
    def total(self) -> float:
        return self.agent + self.summarizer


def bill(recorded: Recorded, book: PriceBook, conversation: bool) -> Dollars:
    """Dollars of one replay under one pair's prices and cache rules."""
    out = Dollars()
    agent: Price = book.agent
    for calls in recorded.threads:
        previous: Call | None = None
        for call in calls:
            if call.summary_input or call.summary_output:
                out.summary_calls += call.summary_calls
                out.summary_input += call.summary_input
                out.summary_output += call.summary_output
                if conversation:  # the agent's model; its prefix is in the agent's cache
                    for rendered, sizes in call.prompts:
                        read = 0
                        if previous is not None:
                            read, _ = cached_prefix(agent.cache, previous.rendered, rendered, sizes)
                        out.summarizer += agent.cost(sum(sizes), read=read)
                    out.summarizer += agent.cost(0, output=call.summary_output)
                else:
                    out.summarizer += book.summarizer.cost(
                        call.summary_input, output=call.summary_output
                    )
            read, written = cached_prefix(
                agent.cache, previous.rendered if previous else None, call.rendered, call.tokens
            )
            size = sum(call.tokens)
            out.agent += agent.cost(size, read=read, written=written)
            out.agent_tokens += size
            out.cache_read += read
            out.cache_write += written
            previous = call
    return out


def rows(recorded: dict[str, dict[str, Recorded]]) -> list[dict[str, Any]]:
    out = []
    for pair, (agent_spec, summarizer_spec) in PAIRS.items():
        book = price_book(agent_spec, None, summarizer_spec)
        for workload, per_system in recorded.items():
            bills = {
                s: bill(r, book, s == "compaction-conversation") for s, r in per_system.items()
            }
            for system, d in bills.items():
                out.append(
                    {
                        "workload": workload,
                        "pair": pair,
                        "agent_model": book.agent.label,
                        "summarizer_model": book.summarizer.label,
                        "system": system,
                        "agent_input_usd": d.agent,
                        "summarizer_usd": d.summarizer,
                        "total_usd": d.total,
                        "compaction_share": d.summarizer / d.total if d.total else 0.0,
                        "vs_langchain": d.total / bills["langchain"].total,
                        "vs_none": d.total / bills["none"].total,
                        "agent_input_tokens": d.agent_tokens,
                        "cache_read_tokens": d.cache_read,
                        "cache_write_tokens": d.cache_write,
                        "summary_calls": d.summary_calls,
                        "summary_input_tokens": d.summary_input,
                        "summary_output_tokens": d.summary_output,
                    }
                )
    return out


def tool_heavy_verdict(table: list[dict[str, Any]]) -> dict[str, bool]:
    """Per masking system: cheaper than ``compaction`` on every tool-heavy workload and pair."""
    total = {(r["workload"], r["pair"], r["system"]): r["total_usd"] for r in table}
    masking = sorted({r["system"] for r in table if "masking" in r["system"]})
    return {
        system: all(
            total[(w, p, system)] < total[(w, p, "compaction")] for w in TOOL_HEAVY for p in PAIRS
        )
        for system in masking
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"Run {report['started']}, {'quick' if report['quick'] else 'full'} mode; prices: "
        f"genai-prices {report['versions']['genai-prices']}. Agent input and summarizer in USD "
        "per workload (all its threads); share = summarizer / total.",
        report["conversation_note"],
        "",
        f"{'workload':<8} {'pair':<21} {'system':<24} {'agent $':>10} {'summ $':>9} "
        f"{'total $':>10} {'share':>6} {'vs lc':>6} {'vs none':>7} {'sum calls':>9}",
    ]
    for r in report["rows"]:
        lines.append(
            f"{r['workload']:<8} {r['pair']:<21} {r['system']:<24} {r['agent_input_usd']:>10.4f} "
            f"{r['summarizer_usd']:>9.4f} {r['total_usd']:>10.4f} {r['compaction_share']:>6.1%} "
            f"{r['vs_langchain']:>5.2f}x {r['vs_none']:>6.2f}x {r['summary_calls']:>9}"
        )
    lines += ["", "Masking cheaper than the default on every tool-heavy workload and pair:"]
    for system, wins in report["tool_heavy_verdict"].items():
        lines.append(f"  {system}: {'yes' if wins else 'no'}")
    return "\n".join(lines) + "\n"


def _progress(text: str) -> None:
    print(f"[bill] {text}", file=sys.stderr, flush=True)


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    names = ("genai-prices", "langchain", "langchain-core", "langgraph")
    return {name: version(name) for name in names}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smoke run: a few turns")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    parser.add_argument(
        "--mask-turns",
        type=lambda text: [int(v) for v in text.split(",")],
        default=[3],
        help="assistant turns whose tool results stay unmasked, e.g. 3,10",
    )
    parser.add_argument(
        "--workloads", default="tau,swe,locomo", help="comma-separated subset of tau,swe,locomo"
    )
    args = parser.parse_args(argv)
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H%M%SZ")
    wanted = args.workloads.split(",")
    workloads = [w for w in load_workloads(args.quick) if w.name in wanted]
    factories = systems(args.mask_turns)
    note = (
        "summary_context 'conversation' billed (compaction-conversation rows)."
        if HAS_CONVERSATION_MODE
        else "compaction-conversation rows skipped: CompactionConfig has no summary_context key "
        "in this tree."
    )
    _progress(note)
    recorded: dict[str, dict[str, Recorded]] = {}
    with tempfile.TemporaryDirectory(prefix="compaction-bill-") as tmp:
        store = SummaryStore(f"sqlite:///{Path(tmp) / 'summaries.db'}")
        try:
            for workload in workloads:
                recorded[workload.name] = {}
                for system, make in factories.items():
                    try:
                        r = replay(make, workload, store, f"{started}-{system}")
                    except Exception as error:  # the conversation mode is another's work
                        if system != "compaction-conversation":
                            raise
                        note = f"compaction-conversation rows skipped: {error!r:.200}"
                        _progress(note)
                        continue
                    recorded[workload.name][system] = r
                    calls = sum(len(c) for c in r.threads)
                    _progress(f"replay {workload.name}: {system}: {calls} calls, {r.seconds:.1f} s")
        finally:
            store.close()
    table = rows(recorded)
    report: dict[str, Any] = {
        "started": started,
        "quick": args.quick,
        "command": "python benchmarks/bill.py " + " ".join(argv or sys.argv[1:]),
        "versions": _versions(),
        "conversation_note": note,
        "pairs": {p: {"agent": a, "summarizer": s} for p, (a, s) in PAIRS.items()},
        "settings": {
            w.name: {"threads": len(w.threads), "trigger_tokens": w.trigger, "keep": w.keep}
            for w in workloads
        },
        "mask_turns": args.mask_turns,
        "rows": table,
        "tool_heavy_verdict": tool_heavy_verdict(table) if set(TOOL_HEAVY) <= set(wanted) else {},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"bill-{started}"
    text = render(report)
    stem.with_suffix(".txt").write_text(text, encoding="utf-8")
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    _progress(f"results: {stem}.txt and .json")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
