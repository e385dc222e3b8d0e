"""What ``CompactionMiddleware`` adds to a whole ``create_agent`` turn, side by side.

Run it with ``python benchmarks/agent_turn.py`` (a few minutes), ``--quick`` (a smoke run of a
few turns at 1,000 messages), ``--repeats N``, ``--sizes 1000,5000``, ``--clock cpu`` (process
time, steadier on a busy machine), ``--gc on`` (leave the collector running during the timed
turns) or ``--profile 5000 [--profile-config passthrough]`` (pyinstrument of one agent's turns
instead of the table).

What is timed: one ``agent.invoke({"messages": [HumanMessage(...)]}, config)`` of a real
``langchain.agents.create_agent`` agent with a real ``SqliteSaver`` checkpointer (a SQLite file
in a temporary directory), on a thread that already holds 1,000 or 5,000 messages. Three
agents run on the same checkpointer, each on its own thread pre-filled with the same history:

- ``without``: no middleware, the baseline.
- ``passthrough``: ``CompactionMiddleware`` whose tokens trigger is huge: no trigger fires, the
  model gets every message (the cost of measuring alone).
- ``reuse``: ``CompactionMiddleware`` with a tokens trigger at half the pre-filled history and
  20 kept messages. Its first (untimed) turn summarizes with a deterministic, instant fake
  summarizer into a ``SummaryStore`` on a SQLite file; every timed turn then serves that stored
  summary (no summarizer call; checked after the run: the summarizer's call
  count must not move, and the agent model must have seen the compacted input).

The agent model is a deterministic, instant fake ``BaseChatModel``: after a user message it
calls the real ``run_sql`` tool once, after the tool result it answers. A timed turn therefore
makes two model calls (so the middleware runs twice), one tool call, and adds four messages
to the thread, as a pre-filled turn does.

Method:

- Pre-fill: ``agent.update_state`` writes the history (turns of user question, assistant tool
  call, tool result, assistant answer; a system prompt given to ``create_agent``, outside the
  state) as one checkpoint, then one untimed warm-up turn per agent (for ``reuse`` the turn
  that summarizes) and ``--warmup`` more.
- Interleaved: turn ``k`` runs the three agents one after the other, the order rotating from
  turn to turn, so drift of the machine (other processes, the SQLite file growing) reaches all
  three alike. Each agent's thread grows by four messages per turn.
- Timer: ``time.perf_counter_ns`` around ``invoke`` only. Objects built during setup are moved
  out of the collector's reach (``gc.freeze``); the collector runs between turns and is paused
  during each timed turn (``--gc on`` keeps it running), as ``benchmarks/overhead.py`` does.
- Figures: medians over the timed turns; ``added ms = median with - median without`` and
  ``added % = added ms / median without``; ``p25..p75``: quartiles of the per-turn added %
  against the baseline turn of the same round. ``inner ms``: the time spent inside
  ``CompactionMiddleware.wrap_model_call`` before it hands the request on, summed over the
  turn's two model calls (a subclass reads the calling thread's CPU clock, ``thread_time``, on
  entry and when the handler is called; the checkpointer's background thread, which writes
  the agent's checkpoints meanwhile, is not counted):
  the middleware's own cost measured directly, much steadier than the difference of two
  ~100-300 ms turn medians. Without the middleware the fake model gets every message; with
  ``reuse`` it gets the summary, the kept window and the turns since (``model input``), so
  langchain-core's per-message work in the model call shrinks: that saving is part of what the
  middleware does to a turn, and the turn figures count it (``inner ms`` does not).

Aim (for information, not enforced): the middleware adds under 5% to a turn at 1,000 and 5,000
messages.
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from overhead import ANSWERS, QUESTIONS, tool_result
from pydantic import Field

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fakes import RecordingSummarizer

from langgraph_compaction import CompactionMiddleware, SummaryStore

SIZES = (1_000, 5_000)
QUICK_SIZES = (1_000,)
FULL_REPEATS = 21
QUICK_REPEATS = 3
WARMUP = 2
KEEP_MESSAGES = 20
AIM_PERCENT = 5.0
SYSTEM_PROMPT = "You are a careful database engineer. Answer briefly; use run_sql to look."
CONFIGS = ("passthrough", "reuse")

# --------------------------------------------------------------------------- conversation


@tool
def run_sql(query: str) -> str:
    """Run a read-only SQL query against the orders database and return the rows."""
    return tool_result("run_sql", sum(map(ord, query)))


def history(size: int, prefix: str) -> list[BaseMessage]:
    """``size`` messages (a multiple of 4): turns of question, tool call, result, answer."""
    if size % 4:
        raise SystemExit(f"--sizes: {size} is not a multiple of 4 (whole turns)")
    messages: list[BaseMessage] = []
    for turn in range(size // 4):
        call_id = f"call_{prefix}_{turn}"
        query = f"select * from orders where turn = {turn}"
        messages += [
            HumanMessage(QUESTIONS[turn % len(QUESTIONS)], id=f"{prefix}-u{turn}"),
            AIMessage(
                "",
                id=f"{prefix}-c{turn}",
                tool_calls=[{"name": "run_sql", "args": {"query": query}, "id": call_id}],
            ),
            ToolMessage(
                run_sql.invoke(query), tool_call_id=call_id, name="run_sql", id=f"{prefix}-t{turn}"
            ),
            AIMessage(ANSWERS[turn % len(ANSWERS)], id=f"{prefix}-a{turn}"),
        ]
    return messages


# --------------------------------------------------------------------------- models


class InstantAgentModel(BaseChatModel):
    """The agent's model: calls ``run_sql`` after a user message, answers after its result.

    Deterministic and instant: it looks at the last message only. It records how many
    messages each call received (to check what the middleware handed it).
    """

    input_sizes: list[int] = Field(default_factory=list)
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "instant-agent-model"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        self.input_sizes.append(len(messages))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(ANSWERS[self.calls % len(ANSWERS)])
        else:
            query = f"select * from orders where question = {self.calls}"
            reply = AIMessage(
                "",
                tool_calls=[
                    {"name": "run_sql", "args": {"query": query}, "id": f"live_{self.calls}"}
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


# --------------------------------------------------------------------------- agents


class TimedCompactionMiddleware(CompactionMiddleware):
    """``CompactionMiddleware`` that adds up the time it spends before calling the model."""

    def __init__(self, *args: Any, clock: Callable[[], int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The calling thread's CPU time, whatever the turn's clock: LangGraph writes the
        # agent's checkpoints on a background thread, whose work (and GIL turns, when the
        # middleware stats a file or reads the store) would otherwise be counted here.
        self.clock = time.thread_time_ns
        self.spent_ns = 0

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse:
        start = self.clock()

        def timed(compacted: ModelRequest) -> ModelResponse:
            self.spent_ns += self.clock() - start
            return handler(compacted)

        return super().wrap_model_call(request, timed)


@dataclass
class Contender:
    """One agent on its own pre-filled thread, and its timed turns."""

    name: str
    agent: Any
    model: InstantAgentModel
    config: RunnableConfig
    clock: Callable[[], int]
    middleware: TimedCompactionMiddleware | None = None
    samples_ms: list[float] = field(default_factory=list)
    inside_ms: list[float] = field(default_factory=list)
    """Per timed turn: the time spent in the middleware before its model calls."""
    turn: int = 0

    def run_turn(self, gc_paused: bool) -> float:
        message = HumanMessage(f"{QUESTIONS[self.turn % len(QUESTIONS)]} (live {self.turn})")
        self.turn += 1
        spent_before = self.middleware.spent_ns if self.middleware is not None else 0
        gc.collect()
        if gc_paused:
            gc.disable()
        try:
            start = self.clock()
            result = self.agent.invoke({"messages": [message]}, self.config)
            elapsed = self.clock() - start
        finally:
            gc.enable()
        last = result["messages"][-1]
        if not isinstance(last, AIMessage) or last.tool_calls:
            raise SystemExit(f"{self.name}: the turn did not end with an answer: {last!r}")
        if self.middleware is not None:
            self.inside_ms.append((self.middleware.spent_ns - spent_before) / 1e6)
        return elapsed / 1e6


def build_contender(
    name: str,
    size: int,
    base: Sequence[BaseMessage],
    saver: SqliteSaver,
    store: SummaryStore,
    summarizer: RecordingSummarizer,
    clock: Callable[[], int],
) -> Contender:
    model = InstantAgentModel()
    middleware: TimedCompactionMiddleware | None = None
    if name == "passthrough":
        middleware = TimedCompactionMiddleware(
            {"trigger": {"type": "tokens", "value": 10**12}}, store=store, clock=clock
        )
    elif name == "reuse":
        # Crossed by the pre-filled history; the summary plus the kept window stays below it.
        trigger = count_tokens_approximately(base) // 2
        middleware = TimedCompactionMiddleware(
            {
                "trigger": {"type": "tokens", "value": trigger},
                "keep": {"type": "messages", "value": KEEP_MESSAGES},
            },
            model=summarizer,
            store=store,
            clock=clock,
        )
    stack: list[AgentMiddleware] = [middleware] if middleware is not None else []
    agent = create_agent(
        model,
        [run_sql],
        system_prompt=SYSTEM_PROMPT,
        middleware=stack,
        checkpointer=saver,
    )
    config: RunnableConfig = {"configurable": {"thread_id": f"{name}-{size}"}}
    agent.update_state(config, {"messages": list(base)})
    return Contender(name, agent, model, config, clock, middleware)


# --------------------------------------------------------------------------- measuring


def quantile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank quantile."""
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


@dataclass(frozen=True)
class Row:
    size: int
    config: str
    without_ms: float
    with_ms: float
    added_p25: float
    added_p75: float
    inside_ms: float
    """Median time per turn spent in the middleware before its model calls."""
    model_input: int
    """Median messages the agent model received per call with the middleware."""

    @property
    def added_ms(self) -> float:
        return self.with_ms - self.without_ms

    @property
    def added_percent(self) -> float:
        return 100 * self.added_ms / self.without_ms

    def render(self) -> str:
        spread = f"{self.added_p25:+.1f}..{self.added_p75:+.1f}"
        return (
            f"{self.size:>6}  {self.config:<11}  {self.without_ms:>10.2f}  {self.with_ms:>9.2f}  "
            f"{self.added_ms:>+8.2f}  {self.added_percent:>+6.1f}%  {spread:>16}  "
            f"{self.inside_ms:>8.2f}  {100 * self.inside_ms / self.without_ms:>7.1f}%  "
            f"{self.model_input:>11}"
        )


HEADER = (
    f"{'size':>6}  {'config':<11}  {'without ms':>10}  {'with ms':>9}  {'added ms':>8}  "
    f"{'added %':>7}  {'p25..p75 added %':>16}  {'inner ms':>8}  {'inner %':>8}  "
    f"{'model input':>11}"
)

CLOCKS: dict[str, Callable[[], int]] = {
    "wall": time.perf_counter_ns,
    "cpu": time.process_time_ns,
}


def _progress(text: str) -> None:
    print(f"[agent_turn] {text}", file=sys.stderr, flush=True)


def measure_size(
    size: int,
    tmp: Path,
    repeats: int,
    warmup: int,
    gc_paused: bool,
    clock: Callable[[], int],
) -> tuple[list[Row], int]:
    """Time ``repeats`` interleaved turns of the three agents at ``size`` messages."""
    conn = sqlite3.connect(str(tmp / f"checkpoints-{size}.db"), check_same_thread=False)
    saver = SqliteSaver(conn)
    store = SummaryStore(f"sqlite:///{tmp / f'summaries-{size}.db'}")
    summarizer = RecordingSummarizer()
    try:
        base = history(size, f"h{size}")
        contenders = [
            build_contender(name, size, base, saver, store, summarizer, clock)
            for name in ("without", *CONFIGS)
        ]
        for contender in contenders:
            for _ in range(1 + warmup):
                contender.run_turn(gc_paused)
            contender.inside_ms.clear()
        if summarizer.call_count == 0:
            raise SystemExit(f"{size}: the reuse agent's first turn did not summarize")
        summaries_before = summarizer.call_count
        gc.collect()
        gc.freeze()
        try:
            for k in range(repeats):
                shift = k % len(contenders)
                for contender in contenders[shift:] + contenders[:shift]:
                    contender.samples_ms.append(contender.run_turn(gc_paused))
                if (k + 1) % 5 == 0 or k + 1 == repeats:
                    medians = ", ".join(
                        f"{c.name} {statistics.median(c.samples_ms):.1f}" for c in contenders
                    )
                    _progress(f"{size:>6} messages: {k + 1}/{repeats} turns; medians ms {medians}")
        finally:
            gc.unfreeze()
        resummarized = summarizer.call_count - summaries_before
        without = contenders[0]
        rows = []
        for contender in contenders[1:]:
            added = [
                100 * (w - b) / b
                for w, b in zip(contender.samples_ms, without.samples_ms, strict=True)
            ]
            timed_inputs = contender.model.input_sizes[-2 * repeats :]
            rows.append(
                Row(
                    size=size,
                    config=contender.name,
                    without_ms=statistics.median(without.samples_ms),
                    with_ms=statistics.median(contender.samples_ms),
                    added_p25=quantile(added, 0.25),
                    added_p75=quantile(added, 0.75),
                    inside_ms=statistics.median(contender.inside_ms),
                    model_input=round(statistics.median(timed_inputs)),
                )
            )
        reuse_inputs = contenders[-1].model.input_sizes[-2 * repeats :]
        if max(reuse_inputs) >= size:
            raise SystemExit(f"{size}: the reuse agent's model saw {max(reuse_inputs)} messages")
        return rows, resummarized
    finally:
        store.close()
        conn.close()


def profile(size: int, repeats: int, tmp: Path, config: str) -> None:
    """pyinstrument of ``repeats`` turns of one agent (after the warm-up), printed as text."""
    from pyinstrument import Profiler

    conn = sqlite3.connect(str(tmp / "profile.db"), check_same_thread=False)
    store = SummaryStore(f"sqlite:///{tmp / 'profile-summaries.db'}")
    try:
        base = history(size, f"p{size}")
        summarizer = RecordingSummarizer()
        contender = build_contender(
            config, size, base, SqliteSaver(conn), store, summarizer, time.perf_counter_ns
        )
        for _ in range(1 + WARMUP):
            contender.run_turn(True)
        profiler = Profiler(interval=0.0005)
        profiler.start()
        for _ in range(repeats):
            contender.run_turn(True)
        profiler.stop()
        print(profiler.output_text(unicode=True, color=False, show_all=False))
    finally:
        store.close()
        conn.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="few turns at 1,000 (smoke test)")
    parser.add_argument("--repeats", type=int, default=None, help="timed turns per agent")
    parser.add_argument("--warmup", type=int, default=WARMUP, help="untimed turns per agent")
    parser.add_argument("--sizes", default=None, help="comma-separated history sizes")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: perf_counter (default); cpu: process time, steadier on a busy machine",
    )
    parser.add_argument(
        "--gc",
        choices=("paused", "on"),
        default="paused",
        help="paused (default): no collection inside a timed turn; on: the collector runs",
    )
    parser.add_argument(
        "--profile", type=int, metavar="SIZE", help="pyinstrument of turns at SIZE instead"
    )
    parser.add_argument(
        "--profile-config",
        choices=("without", *CONFIGS),
        default="reuse",
        help="the agent --profile runs (default: reuse)",
    )
    args = parser.parse_args(argv)
    repeats = args.repeats or (QUICK_REPEATS if args.quick else FULL_REPEATS)
    if args.sizes:
        sizes: Sequence[int] = tuple(int(s) for s in args.sizes.split(","))
    else:
        sizes = QUICK_SIZES if args.quick else SIZES
    clock = CLOCKS[args.clock]
    rows: list[Row] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="compaction-agent-turn-") as tmp:
        if args.profile:
            _progress(
                f"profiling {repeats} {args.profile_config} turns at {args.profile} messages ..."
            )
            profile(args.profile, repeats, Path(tmp), args.profile_config)
            return 0
        for size in sizes:
            started = time.perf_counter()
            _progress(f"{size:>6} messages: pre-filling three threads, {repeats} turns each ...")
            size_rows, resummarized = measure_size(
                size, Path(tmp), repeats, args.warmup, args.gc == "paused", clock
            )
            rows += size_rows
            if resummarized:
                notes.append(f"{size}: the summarizer ran {resummarized} times in timed turns")
            _progress(f"{size:>6} messages: done in {time.perf_counter() - started:.1f} s")
    print(HEADER)
    print("-" * len(HEADER))
    for row in rows:
        print(row.render())
    print(
        f"\n{repeats} interleaved turns per agent (2 model calls, 1 tool call each), "
        f"SqliteSaver, {args.clock} clock, gc {args.gc}; medians; added % = added ms / without ms;"
        "\np25..p75: quartiles of the per-turn added % against the same round's baseline turn;"
        "\ninner ms: CPU time per turn of the calling thread inside the middleware before its"
        " model calls (% of without);"
        "\nmodel input: median messages the agent model received per call with the middleware."
        f"\nAim: under {AIM_PERCENT:.0f}% added at 1,000 and 5,000 messages."
    )
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
