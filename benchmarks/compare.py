"""This package beside LangChain's SummarizationMiddleware and LangMem, on the same real traces.

    python benchmarks/compare.py          # full run: benchmarks/results/compare-<UTC time>.*
    python benchmarks/compare.py --quick  # a smoke run of a few turns (under 30 s)

Needs the benchmark-only dependencies: ``pip install -r benchmarks/requirements.txt``.

Workloads (from ``../shared/data``, loaded by ``tests/traces.py``):

- ``tau``: the first 40 tau-bench airline runs joined into one long session by
  ``concatenate_sessions`` (the first run's system prompt kept, the later copies dropped; run
  after run, as one customer after another in a single thread).
- ``swe``: each of the 5 SWE-Gym OpenHands coding runs as its own thread.
- ``locomo``: each of the 10 LoCoMo dialogues as its own thread (speaker A the user, B the
  assistant).

At every point where the agent would call its model (``model_call_points``), each system
prepares the model input from the true history up to there:

- ``compaction``: this package, ``create_compaction_graph(...).invoke`` with a thread id and a
  SQLite store in a temporary folder; the model input is ``llm_input_messages``.
- ``langchain``: ``SummarizationMiddleware`` driven as ``create_agent`` drives it: its own
  running state (the system prompt kept outside it, as ``create_agent(system_prompt=...)``
  does), each new real message appended with ``add_messages``, ``before_model`` called on the
  state and its update (``RemoveMessage(REMOVE_ALL_MESSAGES)``, summary, kept messages)
  applied with ``add_messages``. The model input is the system prompt plus that state.
- ``langmem``: ``langmem.short_term.summarize_messages`` on the true history with its
  ``RunningSummary`` carried from call to call; the model input is ``result.messages``.

Equal settings per workload: the tokens trigger, the kept window (20 messages; 6 on SWE-Gym,
whose tool results are large), ``trim_tokens_to_summarize`` 4,000, a 512-token summary cap,
one token counter (``count_tokens_approximately``, wrapped so no system swaps in its own), and
one deterministic, instant summarizer (``CountingSummarizer``) that counts calls and input
tokens with that counter. LangMem has neither a keep window nor a trim setting: it gets
``max_tokens`` = ``max_tokens_before_summary`` = the trigger (so it fires at the same size)
and ``max_summary_tokens`` = the cap; it keeps what follows the summarized chunk.

Figures per system and workload: per-call time (median, p95) of the replay; summarizer calls
and input tokens per 100 turns; peak and mean model-input tokens; compaction turns (the
system summarized or rewrote its state; "canned": it did so without a summarizer call); the
share of the other turns whose input extends the previous input byte for byte (each message as
OpenAI receives it, ``convert_to_openai_messages`` as sorted JSON); turns whose input breaks
OpenAI's tool-pair rule (``tool_pair_violations``); whether the full history survives (the
history the system keeps, by message id, equals the true one).

Growth: each workload's turns are repeated (every message and tool-call id gets a ``~<k>``
suffix per copy, so ids stay unique) to histories of 100, 1,000 and 10,000 messages. Each
system is warmed on the thread by up to 200 calls spread over the call points below the size
(LangMem then called again until it stops summarizing: it summarizes one chunk per call), then
timed on the next calls, each one turn longer. Timed histories are fresh objects
(round-tripped through langgraph's ``JsonPlusSerializer``, untimed), as a checkpointer hands
them back; the anchors get the same objects. ``floor`` is a bare one-node LangGraph graph
invoked on the same history: what LangGraph alone costs per call (this package is a graph;
the anchors are timed as plain calls).

Billing (``billing.py``): billed input under prompt caching with a breakpoint at the end of
every call (the common prefix with the thread's previous call is read from the cache), and under
Anthropic's explicit breakpoints only: this package replayed once more with ``cache_breakpoint``
on, whose marked summary makes the prefix up to it a cache read on every turn that reuses it;
without a breakpoint nothing is cached.

Token estimates: ``tokens.py``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph, add_messages
from typing_extensions import TypedDict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))
from billing import PRICES, Bill, BreakpointCache, common_prefix  # noqa: E402
from tokens import estimate_errors, exact_counter  # noqa: E402
from traces import (  # noqa: E402
    concatenate_sessions,
    load_locomo,
    load_swe_gym,
    load_tau_bench_airline,
    model_call_points,
    tool_pair_violations,
)

from langgraph_compaction import SummaryStore, create_compaction_graph  # noqa: E402

T = TypeVar("T")
SYSTEMS = ("compaction", "langchain", "langmem")
SIZES = (100, 1_000, 10_000)
TRIM_TOKENS = 4_000
SUMMARY_CAP = 512
WARM_CALLS = 200


def count_tokens(messages: Sequence[BaseMessage]) -> int:
    """The one token counter every system gets (a wrapper, so none swaps in its own)."""
    return count_tokens_approximately(messages)


@dataclass(frozen=True)
class Workload:
    name: str
    threads: list[list[BaseMessage]]
    trigger: int
    keep: int


def load_workloads(quick: bool) -> list[Workload]:
    tau = concatenate_sessions(load_tau_bench_airline(), 5 if quick else 40)
    swe = load_swe_gym()
    locomo = load_locomo()
    return [
        Workload("tau", [tau], trigger=12_000, keep=20),
        Workload("swe", swe[:2] if quick else swe, trigger=6_000, keep=6),
        Workload("locomo", [locomo[0][:160]] if quick else locomo, trigger=8_000, keep=20),
    ]


# --------------------------------------------------------------------------- the systems


class CountingSummarizer(BaseChatModel):
    """Deterministic and instant; counts calls and input tokens with ``count_tokens``."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def _llm_type(self) -> str:
        return "counting-summarizer"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        self.input_tokens += count_tokens(messages)
        text = (
            f"## Goal\nSummary number {self.calls} of this conversation.\n## Progress\n"
            + "The user and the assistant went through the requests listed earlier. " * 7
            + "\n## Critical Context\n"
            + " ".join(_named_words(str(messages[-1].content)))
        )
        self.output_tokens += count_tokens([AIMessage(text)])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


def _named_words(prompt: str, count: int = 12) -> list[str]:
    """Words of the transcript a summary would name, so this package's not-a-summary check
    (a reply that names nothing of the conversation is a failure) passes, as a real summary
    would; the same few words for every system."""
    transcript = prompt.rsplit("<conversation>", 1)[-1].split("</conversation>", 1)[0]
    words = [w for w in transcript.split() if w.isalpha() and len(w) >= 6]
    return words[-count:] or ["nothing"]


class Compaction:
    """This package, as a node before the model."""

    def __init__(
        self,
        workload: Workload,
        store: SummaryStore,
        thread: str,
        headroom: float | None = None,
        cache_breakpoint: bool = False,
    ) -> None:
        self.summarizer = CountingSummarizer()
        settings: dict[str, Any] = {
            "trigger": {"type": "tokens", "value": workload.trigger},
            "keep": {"type": "messages", "value": workload.keep},
            "trim_tokens_to_summarize": TRIM_TOKENS,
            "max_summary_tokens": SUMMARY_CAP,
        }
        if headroom is not None:
            settings["headroom_ratio"] = headroom
        if cache_breakpoint:
            settings["cache_breakpoint"] = True
        self.graph = create_compaction_graph(
            settings,
            model=self.summarizer,
            store=store,
            token_counter=count_tokens,
        )
        self.config = {"configurable": {"thread_id": thread}}
        self.kept: list[BaseMessage] = []
        self.compacted = False

    def prepare(self, history: list[BaseMessage]) -> list[AnyMessage]:
        output = self.graph.invoke({"messages": history}, self.config)
        self.kept = history  # it never writes `messages`: the caller's history is the state
        self.compacted = output["compaction"].action not in ("passthrough", "reused")
        result: list[AnyMessage] = output["llm_input_messages"]
        return result


class LangChainMiddleware:
    """``SummarizationMiddleware.before_model`` on its own running state, as create_agent does."""

    def __init__(self, workload: Workload, store: SummaryStore, thread: str) -> None:
        from langchain.agents.middleware.summarization import SummarizationMiddleware

        self.summarizer = CountingSummarizer()
        self.middleware = SummarizationMiddleware(
            model=self.summarizer,
            trigger=("tokens", workload.trigger),
            keep=("messages", workload.keep),
            token_counter=count_tokens,
            trim_tokens_to_summarize=TRIM_TOKENS,
        )
        self.state: list[AnyMessage] = []
        self.system: list[AnyMessage] = []
        self.seen = 0
        self.kept = self.state
        self.compacted = False

    def append(self, history: list[BaseMessage]) -> None:
        """What the agent's reducer does between calls: the new real messages join the state."""
        new = history[self.seen :]
        self.seen = len(history)
        if not self.state and not self.system and new and isinstance(new[0], SystemMessage):
            self.system, new = [new[0]], new[1:]  # create_agent(system_prompt=...)
        self.state = add_messages(self.state, new)  # type: ignore[arg-type]

    def prepare(self, history: list[BaseMessage]) -> list[AnyMessage]:
        update = self.middleware.before_model({"messages": self.state}, None)  # type: ignore[arg-type]
        self.compacted = bool(update)
        if update:
            self.state = add_messages(self.state, update["messages"])
        self.kept = self.state
        return [*self.system, *self.state]


class LangMem:
    """``summarize_messages`` on the true history, its running summary carried along."""

    def __init__(self, workload: Workload, store: SummaryStore, thread: str) -> None:
        self.summarizer = CountingSummarizer()
        self.trigger = workload.trigger
        self.running: Any = None
        self.kept: list[BaseMessage] = []
        self.compacted = False

    def prepare(self, history: list[BaseMessage]) -> list[AnyMessage]:
        from langmem.short_term import summarize_messages

        result = summarize_messages(
            history,  # type: ignore[arg-type]
            running_summary=self.running,
            model=self.summarizer,
            max_tokens=self.trigger,
            max_tokens_before_summary=self.trigger,
            max_summary_tokens=SUMMARY_CAP,
            token_counter=count_tokens,
        )
        self.compacted = result.running_summary is not self.running
        self.running = result.running_summary
        self.kept = history  # it returns a new list; the caller keeps its history
        return result.messages


FACTORIES: dict[str, Callable[[Workload, SummaryStore, str], Any]] = {
    "compaction": Compaction,
    "langchain": LangChainMiddleware,
    "langmem": LangMem,
}


# --------------------------------------------------------------------------- replay


@dataclass
class Replay:
    """Figures of one system over one workload (all its threads)."""

    times_ms: list[float] = field(default_factory=list)
    input_tokens: list[int] = field(default_factory=list)
    turns: int = 0
    summary_calls: int = 0
    summary_input_tokens: int = 0
    compaction_turns: int = 0
    canned_summaries: int = 0
    plain_turns: int = 0
    stable_turns: int = 0
    violation_turns: int = 0
    history_kept: bool = True
    bill: Bill = field(default_factory=Bill)
    explicit: Bill = field(default_factory=Bill)
    """Billed under Anthropic's explicit breakpoints only (none at the end of a call)."""
    inputs: list[list[list[AnyMessage]]] = field(default_factory=list)


class PerMessage(Generic[T]):
    """``read`` of each message alone, cached per message object (a history is re-read on every
    call of its replay)."""

    def __init__(self, read: Callable[[BaseMessage], T]) -> None:
        self.read = read
        self.cache: dict[int, tuple[BaseMessage, T]] = {}

    def __call__(self, messages: Sequence[BaseMessage]) -> list[T]:
        out = []
        for message in messages:
            hit = self.cache.get(id(message))
            if hit is None or hit[0] is not message:
                hit = self.cache[id(message)] = (message, self.read(message))
            out.append(hit[1])
        return out


def Serializer() -> PerMessage[str]:
    """Each message as OpenAI receives it (sorted JSON), cached per message object."""
    return PerMessage(lambda m: json.dumps(convert_to_openai_messages(m), sort_keys=True))


def replay(
    system: str,
    workload: Workload,
    store: SummaryStore,
    tag: str,
    factory: Callable[[Workload, SummaryStore, str], Any] | None = None,
) -> Replay:
    result = Replay()
    serialize = Serializer()
    make = factory or FACTORIES[system]
    for t, history in enumerate(workload.threads):
        runner = make(workload, store, f"{tag}-{system}-{workload.name}-{t}")
        previous: list[str] | None = None
        breakpoints = BreakpointCache()
        thread_inputs: list[list[AnyMessage]] = []
        for end in model_call_points(history):
            before = runner.summarizer.calls
            prefix = history[:end]
            if isinstance(runner, LangChainMiddleware):
                runner.append(prefix)
            gc.disable()
            started = time.perf_counter_ns()
            model_input = runner.prepare(prefix)
            elapsed = time.perf_counter_ns() - started
            gc.enable()
            result.times_ms.append(elapsed / 1e6)
            result.turns += 1
            tokens = count_tokens(model_input)
            result.input_tokens.append(tokens)
            if tool_pair_violations(model_input):
                result.violation_turns += 1
            rendered = serialize(model_input)
            shared = common_prefix(previous, rendered)
            cached = count_tokens(model_input[:shared]) if shared else 0
            result.bill.cache_read += cached
            result.bill.cache_write += tokens - cached
            breakpoints.bill(result.explicit, model_input, rendered, count_tokens)
            result.compaction_turns += runner.compacted
            # A compaction without a summarizer call: LangChain's middleware writes
            # "Previous conversation was too long to summarize." when its trim leaves nothing.
            result.canned_summaries += runner.compacted and runner.summarizer.calls == before
            if not runner.compacted and runner.summarizer.calls == before and previous:
                result.plain_turns += 1
                result.stable_turns += rendered[: len(previous)] == previous
            previous = rendered
            thread_inputs.append(model_input)
        result.summary_calls += runner.summarizer.calls
        result.summary_input_tokens += runner.summarizer.input_tokens
        result.bill.summarizer_input += runner.summarizer.input_tokens
        result.bill.summarizer_output += runner.summarizer.output_tokens
        result.explicit.summarizer_input += runner.summarizer.input_tokens
        result.explicit.summarizer_output += runner.summarizer.output_tokens
        last = model_call_points(history)[-1]
        result.history_kept &= [m.id for m in runner.kept] == [m.id for m in history[:last]]
        result.inputs.append(thread_inputs)
    return result


# --------------------------------------------------------------------------- growth

_SERDE = JsonPlusSerializer()


def fresh(messages: Sequence[BaseMessage]) -> list[AnyMessage]:
    loaded: list[AnyMessage] = _SERDE.loads_typed(_SERDE.dumps_typed(list(messages)))
    return loaded


def grown(thread: Sequence[BaseMessage], size: int) -> list[BaseMessage]:
    """``thread``'s turns repeated to at least ``size`` messages, ids suffixed per copy."""
    head = [m for m in thread[:1] if isinstance(m, SystemMessage)]
    body = [m for m in thread if not isinstance(m, SystemMessage)]
    out: list[BaseMessage] = list(head)
    copy = 0
    while len(out) < size:
        for message in body:
            update: dict[str, Any] = {"id": f"{message.id}~{copy}"}
            if isinstance(message, AIMessage) and message.tool_calls:
                update["tool_calls"] = [
                    {**call, "id": f"{call['id']}~{copy}"} for call in message.tool_calls
                ]
            if isinstance(message, ToolMessage):
                update["tool_call_id"] = f"{message.tool_call_id}~{copy}"
            out.append(message.model_copy(update=update))
        copy += 1
    return out


class FloorState(TypedDict):
    messages: list[AnyMessage]


def floor_graph() -> Any:
    builder = StateGraph(FloorState)
    builder.add_node("nothing", lambda state: {})
    builder.add_edge(START, "nothing")
    return builder.compile(checkpointer=False)


def growth(
    workload: Workload,
    store: SummaryStore,
    sizes: Sequence[int],
    timed: int,
    tag: str,
    warm_calls: int = WARM_CALLS,
) -> dict[int, dict[str, list[float]]]:
    """Per size, per system (and ``floor``): per-call times in ms on warm threads."""
    longest = max(workload.threads, key=len)
    floor = floor_graph()
    out: dict[int, dict[str, list[float]]] = {}
    for size in sizes:
        history = grown(longest, size + 40 * timed)
        points = model_call_points(history)
        below = [p for p in points if p <= size]
        after = [p for p in points if p > size][:timed]
        step = max(1, len(below) // warm_calls)
        warm = below[::step] if below[::step][-1:] == below[-1:] else [*below[::step], below[-1]]
        copies = [fresh(history[:end]) for end in after]
        samples: dict[str, list[float]] = {name: [] for name in ("floor", *SYSTEMS)}
        for system in SYSTEMS:
            _progress(f"  growth {workload.name} {size:>6} messages: {system} ...")
            runner = FACTORIES[system](
                workload, store, f"{tag}-grow-{system}-{workload.name}-{size}"
            )
            for end in warm:
                if isinstance(runner, LangChainMiddleware):
                    runner.append(history[:end])
                runner.prepare(history[:end])
            if isinstance(runner, LangMem):  # catch up: one chunk per call
                for _ in range(200):
                    calls = runner.summarizer.calls
                    runner.prepare(history[: warm[-1]])
                    if runner.summarizer.calls == calls:
                        break
            gc.collect()
            for copy in copies:
                if isinstance(runner, LangChainMiddleware):
                    runner.append(copy)
                gc.disable()
                started = time.perf_counter_ns()
                runner.prepare(copy)
                samples[system].append((time.perf_counter_ns() - started) / 1e6)
                gc.enable()
        for copy in copies:
            gc.disable()
            started = time.perf_counter_ns()
            floor.invoke({"messages": copy})
            samples["floor"].append((time.perf_counter_ns() - started) / 1e6)
            gc.enable()
        out[size] = samples
    return out


# --------------------------------------------------------------------------- report


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(1, -(-95 * len(ordered) // 100)) - 1]


def _bill_figures(bill: Bill, per100: float) -> dict[str, Any]:
    return {
        "cache_read_tokens_per_100_turns": bill.cache_read * per100,
        "cache_write_tokens_per_100_turns": bill.cache_write * per100,
        "uncached_tokens_per_100_turns": bill.uncached * per100,
        "summarizer_input_tokens_per_100_turns": bill.summarizer_input * per100,
        "summarizer_output_tokens_per_100_turns": bill.summarizer_output * per100,
        "cached_share": bill.cached_share,
        "billed_per_100_turns": bill.total * per100,
    }


def summarize_replay(r: Replay) -> dict[str, Any]:
    per100 = 100 / max(r.turns, 1)
    return {
        "turns": r.turns,
        "median_ms": statistics.median(r.times_ms),
        "p95_ms": p95(r.times_ms),
        "compaction_turns": r.compaction_turns,
        "compactions_without_summarizer": r.canned_summaries,
        "summary_calls_per_100_turns": r.summary_calls * per100,
        "summary_input_tokens_per_100_turns": r.summary_input_tokens * per100,
        "peak_input_tokens": max(r.input_tokens),
        "mean_input_tokens": statistics.fmean(r.input_tokens),
        "plain_turns": r.plain_turns,
        "stable_share": r.stable_turns / max(r.plain_turns, 1),
        "violation_turns": r.violation_turns,
        "history_kept": r.history_kept,
        "billing": _bill_figures(r.bill, per100),
        "explicit_breakpoints": _bill_figures(r.explicit, per100),
    }


def token_errors(replays: dict[str, Replay]) -> dict[str, Any]:
    """Estimate error on this package's model inputs, per workload, raw and calibrated."""
    exact = exact_counter()
    out: dict[str, Any] = {}
    for name, r in replays.items():
        samples = [s for thread in r.inputs for s in estimate_errors(thread, exact, count_tokens)]
        row: dict[str, Any] = {"calls": len(samples)}
        for kind in ("raw", "calibrated"):
            errors = [getattr(s, f"{kind}_error") for s in samples]
            row[kind] = {
                "median": statistics.median(errors),
                "p95": p95(errors),
                "max": max(errors),
            }
        out[name] = row
    return out


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Run {report['started']}, {'quick' if report['quick'] else 'full'} mode, "
        f"langchain {report['versions']['langchain']}, langmem {report['versions']['langmem']}.",
        "",
        "| workload | system | turns | median ms | p95 ms | compactions (canned) "
        "| sum calls /100 turns | sum input tok /100 turns | peak input tok | mean input tok "
        "| stable turns | pair-violation turns | full history kept |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for workload, systems in report["replay"].items():
        for system, s in systems.items():
            lines.append(
                f"| {workload} | {system} | {s['turns']} | {s['median_ms']:.2f} | "
                f"{s['p95_ms']:.2f} | {s['compaction_turns']} "
                f"({s['compactions_without_summarizer']}) | "
                f"{s['summary_calls_per_100_turns']:.1f} | "
                f"{s['summary_input_tokens_per_100_turns']:,.0f} | {s['peak_input_tokens']:,} | "
                f"{s['mean_input_tokens']:,.0f} | {s['stable_share']:.1%} of "
                f"{s['plain_turns']} | {s['violation_turns']} | "
                f"{'yes' if s['history_kept'] else 'no'} |"
            )
    lines += ["", *render_billing(report)]
    if not report["growth"]:
        return "\n".join(lines) + "\n"
    lines += [
        "",
        "Per-call time (ms, median / p95) on warm threads grown to N messages; `floor` is a "
        "bare one-node LangGraph graph on the same history.",
        "",
        "| workload | N | " + " | ".join(("floor", *SYSTEMS)) + " |",
        "|---|---:|" + "---:|" * (len(SYSTEMS) + 1),
    ]
    for workload, sizes in report["growth"].items():
        for size, systems in sizes.items():
            cells = [f"{v['median_ms']:.2f} / {v['p95_ms']:.2f}" for v in systems.values()]
            lines.append(f"| {workload} | {int(size):,} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Token estimate (`count_tokens_approximately`) against exact `o200k_base` counts "
        "on this package's model inputs: relative error median / p95 / worst.",
        "",
        "| workload | calls | raw | calibrated |",
        "|---|---:|---|---|",
    ]
    for workload, row in report["tokens"].items():
        cells = [
            f"{row[k]['median']:.1%} / {row[k]['p95']:.1%} / {row[k]['max']:.1%}"
            for k in ("raw", "calibrated")
        ]
        lines.append(f"| {workload} | {row['calls']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _billing_rows(systems: dict[str, Any], anchor: float | None) -> list[str]:
    rows = []
    for system, s in systems.items():
        b = s["billing"]
        ratio = f"{b['billed_per_100_turns'] / anchor:.2f}x" if anchor else "-"
        rows.append(
            f"{system} | {b['cached_share']:.1%} | {b['cache_read_tokens_per_100_turns']:,.0f} | "
            f"{b['cache_write_tokens_per_100_turns']:,.0f} | "
            f"{b['summarizer_input_tokens_per_100_turns']:,.0f} | "
            f"{b['summarizer_output_tokens_per_100_turns']:,.0f} | "
            f"{b['billed_per_100_turns']:,.0f} | {ratio} |"
        )
    return rows


def render_billing(report: dict[str, Any]) -> list[str]:
    """The billed-input table (and the headroom sweep, when run), prices stated above it."""
    prices = ", ".join(f"{k.replace('_', ' ')} {v:g}x" for k, v in PRICES.items())
    head = (
        "| cached share | cache read /100 turns | cache write /100 turns | sum input /100 turns "
        "| sum output /100 turns | billed /100 turns | vs langchain |"
    )
    lines = [
        f"Billed input under prompt caching, in base-input-price tokens per 100 turns ({prices}; "
        "cached: the common prefix with the thread's previous call).",
        "",
        "| workload | system " + head,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for workload, systems in report["replay"].items():
        anchor = systems.get("langchain", {}).get("billing", {}).get("billed_per_100_turns")
        lines += [f"| {workload} | {row}" for row in _billing_rows(systems, anchor)]
    if report.get("headroom"):
        lines += [
            "",
            "This package with other `headroom_ratio` values (replay only, same settings).",
            "",
            "| workload | headroom_ratio " + head,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for workload, variants in report["headroom"].items():
            anchor = report["replay"][workload]["langchain"]["billing"]["billed_per_100_turns"]
            lines += [f"| {workload} | {row}" for row in _billing_rows(variants, anchor)]
    if report.get("cache_breakpoint"):
        lines += ["", *render_breakpoints(report)]
    return lines


def render_breakpoints(report: dict[str, Any]) -> list[str]:
    """Billed input under Anthropic's explicit breakpoints only, with and without the summary's."""
    lines = [
        "Billed input under Anthropic's explicit breakpoints only (none at the end of a call), "
        "per 100 turns: with `cache_breakpoint` the prefix up to the summary is a cache read on "
        "every turn that reuses it (written once, 1.25x); without a breakpoint all input is "
        "uncached (1x).",
        "",
        "| workload | system | cached share | cache read | cache write | uncached "
        "| billed /100 turns | vs without |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for workload, marked in report["cache_breakpoint"].items():
        rows = {
            "compaction": report["replay"][workload]["compaction"]["explicit_breakpoints"],
            "compaction, cache_breakpoint": marked["explicit_breakpoints"],
        }
        anchor = rows["compaction"]["billed_per_100_turns"]
        for system, b in rows.items():
            lines.append(
                f"| {workload} | {system} | {b['cached_share']:.1%} | "
                f"{b['cache_read_tokens_per_100_turns']:,.0f} | "
                f"{b['cache_write_tokens_per_100_turns']:,.0f} | "
                f"{b['uncached_tokens_per_100_turns']:,.0f} | "
                f"{b['billed_per_100_turns']:,.0f} | {b['billed_per_100_turns'] / anchor:.2f}x |"
            )
    return lines


def plot(report: dict[str, Any], replays: dict[str, dict[str, Replay]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _progress("matplotlib is not installed: no plot (pip install matplotlib)")
        return False
    workloads = list(report["growth"])
    fig, axes = plt.subplots(1, len(workloads) + 1, figsize=(5 * (len(workloads) + 1), 4))
    for ax, workload in zip(axes, workloads, strict=False):
        sizes = report["growth"][workload]
        for system in ("floor", *SYSTEMS):
            xs = [int(n) for n in sizes]
            ax.plot(xs, [sizes[n][system]["median_ms"] for n in sizes], marker="o", label=system)
        ax.set(xscale="log", yscale="log", xlabel="messages", ylabel="median ms per call")
        ax.set_title(f"{workload}: per-call time")
        ax.legend()
    ax = axes[-1]
    for system in SYSTEMS:
        ax.plot(replays["tau"][system].input_tokens, label=system, linewidth=0.8)
    ax.set(xlabel="turn", ylabel="model-input tokens", title="tau: model input per turn")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _progress(text: str) -> None:
    print(f"[compare] {text}", file=sys.stderr, flush=True)


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("langchain", "langchain-core", "langgraph", "langmem")}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: few turns, tau grown to 1,000"
    )
    parser.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    parser.add_argument("--timed", type=int, default=None, help="timed calls per growth size")
    parser.add_argument("--no-growth", action="store_true", help="replays only (billing, tokens)")
    parser.add_argument(
        "--headroom",
        type=lambda text: [float(v) for v in text.split(",")],
        default=[],
        help="also replay this package with these headroom_ratio values, e.g. 0.5,0.6,0.75",
    )
    parser.add_argument("--trigger", type=int, default=None, help="one tokens trigger for all")
    parser.add_argument("--keep", type=int, default=None, help="one keep (messages) for all")
    args = parser.parse_args(argv)
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H%M%SZ")
    sizes = (100, 1_000) if args.quick else SIZES
    timed = args.timed or (3 if args.quick else 30)
    workloads = [
        Workload(
            w.name,
            w.threads,
            trigger=args.trigger or w.trigger,
            keep=args.keep or w.keep,
        )
        for w in load_workloads(args.quick)
    ]
    replays: dict[str, dict[str, Replay]] = {}
    variants: dict[str, dict[str, Replay]] = {}
    marked: dict[str, Replay] = {}
    grow: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="compaction-compare-") as tmp:
        store = SummaryStore(f"sqlite:///{Path(tmp) / 'summaries.db'}")
        try:
            for workload in workloads:
                replays[workload.name] = {}
                for system in SYSTEMS:
                    _progress(f"replay {workload.name}: {system} ...")
                    begun = time.perf_counter()
                    r = replay(system, workload, store, started)
                    replays[workload.name][system] = r
                    _progress(
                        f"replay {workload.name}: {system}: {r.turns} turns, "
                        f"{r.summary_calls} summary calls in {time.perf_counter() - begun:.1f} s"
                    )
                _progress(f"replay {workload.name}: compaction with cache_breakpoint ...")
                marked[workload.name] = replay(
                    "compaction+breakpoint",
                    workload,
                    store,
                    started,
                    functools.partial(Compaction, cache_breakpoint=True),
                )
                variants[workload.name] = {}
                for headroom in args.headroom:
                    _progress(f"replay {workload.name}: compaction headroom {headroom:g} ...")
                    variants[workload.name][f"{headroom:g}"] = replay(
                        f"compaction@{headroom:g}",
                        workload,
                        store,
                        started,
                        functools.partial(Compaction, headroom=headroom),
                    )
                if args.no_growth or (args.quick and workload is not workloads[0]):
                    continue  # the smoke run grows the first workload only
                warm_calls = 20 if args.quick else WARM_CALLS
                samples = growth(workload, store, sizes, timed, started, warm_calls)
                grow[workload.name] = {
                    str(size): {
                        name: {"median_ms": statistics.median(v), "p95_ms": p95(v)}
                        for name, v in per.items()
                    }
                    for size, per in samples.items()
                }
        finally:
            store.close()
    _progress("token estimates against o200k_base ...")
    report: dict[str, Any] = {
        "started": started,
        "quick": args.quick,
        "versions": _versions(),
        "settings": {
            "workloads": {
                w.name: {"threads": len(w.threads), "trigger_tokens": w.trigger, "keep": w.keep}
                for w in workloads
            },
            "trim_tokens_to_summarize": TRIM_TOKENS,
            "summary_cap": SUMMARY_CAP,
            "growth_sizes": list(sizes),
            "timed_calls_per_size": timed,
        },
        "replay": {
            w: {s: summarize_replay(r) for s, r in per.items()} for w, per in replays.items()
        },
        "headroom": {
            w: {h: summarize_replay(r) for h, r in per.items()}
            for w, per in variants.items()
            if per
        },
        "cache_breakpoint": {w: summarize_replay(r) for w, r in marked.items()},
        "growth": grow,
        "tokens": token_errors({w: per["compaction"] for w, per in replays.items()}),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"compare-{started}"
    markdown = render_markdown(report)
    stem.with_suffix(".md").write_text(markdown, encoding="utf-8")
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if grow and plot(report, replays, stem.with_suffix(".png")):
        _progress(f"plot: {stem.with_suffix('.png')}")
    _progress(f"results: {stem}.md and .json")
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
