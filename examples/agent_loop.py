"""An agent with a real tool loop, compacted before every model call, on a real model if any.

Run it with ``python examples/agent_loop.py`` (``scripts/demo`` starts the local model first).
It replays the 36-turn conversation shipped with the package (a user and an assistant chasing
a failing nightly export, with file reads, log searches, SQL queries and test runs) through a
parent ``StateGraph``:

    START -> compaction -> agent -> (tools -> compaction -> agent)* -> END

- ``messages`` persist in a SQLite checkpoint (``SqliteSaver``); the compacted model input
  (``llm_input_messages``) and the report (``compaction``) are ``UntrackedValue`` keys, never
  checkpointed;
- summaries live in a ``SummaryStore`` SQLite file beside it, ``demo-data/compaction.db`` in the
  checkout unless ``--data-dir`` says otherwise; the files stay after the run, to be read with
  ``python -m langgraph_compaction.store inspect`` or any SQLite browser, and a second process
  reuses them: ``python examples/agent_loop.py --say "..."`` continues the thread;
- events stream with ``subgraphs=True`` and are printed as they happen: one line per model call
  and the ``context_compacting`` / ``context_compacted`` events of the summary calls, with a
  line every 10 s while a summary call runs (a small local model can take a minute).

Its options are parsed by ``_demo_cli``, which ``scripts/demo`` runs first to check them.

The summarizer is, in order: the local OpenAI-compatible server at
``$COMPACTION_LOCAL_MODEL_URL`` (llama.cpp's server serving SmolLM2-135M-Instruct, see the
README: a 135M model shows the plumbing, not the quality of summaries); ``ChatOpenAI`` when
``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set (model ``$OPENAI_MODEL``, default
``gpt-4.1-mini``; any OpenAI-compatible server); else an offline stand-in. The agent's replies
and tool calls are the conversation's own (a replay), so every run sees the same history and
only the summaries differ; the tools run for real in a ``ToolNode``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph, add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import PrivateAttr
from sqlalchemy import make_url
from typing_extensions import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _demo_cli import CHECKPOINT_FILE, STORE_FILE, parse_agent_args
from _events import TICK_SECONDS, SummaryTicker, describe_event
from _small_model import SMALL_MODEL_SUMMARY_PROMPT, SMALL_MODEL_UPDATE_PROMPT
from demo_data import DEMO_THREAD_ID, DEMO_TOOLS, DEMO_TURNS, DemoTurn
from quickstart import TranscriptDigestSummarizer

from langgraph_compaction import (
    CompactionConfig,
    CompactionReport,
    SummaryStore,
    create_compaction_graph,
)

LOCAL_MODEL_ENV = "COMPACTION_LOCAL_MODEL_URL"
MAX_SUMMARY_TOKENS = 128
"""The local model's cap: at 96 every reply stopped mid-sentence, at 128 half of them
(benchmarks/local_summaries.py); more only lets a 135M model ramble."""
REAL_MODEL_SUMMARY_TOKENS = 300
PLUMBING_NOT_QUALITY = (
    "note: a 135M model shows the plumbing, not the quality: its summaries are poor, and a\n"
    "      reply that is plainly not a summary is rejected (a failed compaction: nothing is\n"
    "      stored, the agent call goes ahead). For real summaries run the same demo against a\n"
    "      model over an OpenAI-compatible API: OPENAI_API_KEY=... scripts/demo, or\n"
    "      OPENAI_BASE_URL=http://host:port/v1 OPENAI_MODEL=name scripts/demo (see the README)."
)


# -- the models --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summarizer:
    """The chosen summarizer, a label for it, and what its summary calls need."""

    model: BaseChatModel
    label: str
    parameters: dict[str, Any]
    max_summary_tokens: int = MAX_SUMMARY_TOKENS
    is_local: bool = False
    """The 135M local model: it gets the short prompts of ``_small_model``."""


def demo_config(summarizer: Summarizer) -> CompactionConfig:
    """Small numbers so the 36 turns compact a few times and fit a 4,096-token local model."""
    prompts: dict[str, Any] = {}
    if summarizer.is_local:
        prompts = {
            "summary_prompt": SMALL_MODEL_SUMMARY_PROMPT,
            "update_prompt": SMALL_MODEL_UPDATE_PROMPT,
        }
    return CompactionConfig(
        trigger={"type": "tokens", "value": 2800},
        keep={"type": "messages", "value": 20},
        headroom_ratio=0.75,  # land well below the trigger, so summaries are few and reused
        trim_tokens_to_summarize=2000,  # one call stays well inside the local model's 4,096 tokens
        max_summary_tokens=summarizer.max_summary_tokens,
        parameters=summarizer.parameters,
        **prompts,
    )


def pick_summarizer() -> Summarizer:
    """The local model if it runs, else OpenAI (or a compatible server) if set, else a stand-in."""
    from langchain_openai import ChatOpenAI

    local_url = os.environ.get(LOCAL_MODEL_ENV)
    if local_url:
        model = ChatOpenAI(
            base_url=local_url, api_key="local", model="smollm2", temperature=0, timeout=120
        )
        # Some OpenAI-compatible servers ignore max_completion_tokens, which ChatOpenAI sends for
        # max_tokens: the cap also travels in the body as max_tokens.
        parameters = {"extra_body": {"max_tokens": MAX_SUMMARY_TOKENS}}
        label = "local SmolLM2-135M-Instruct (llama.cpp server)"
        return Summarizer(model, label, parameters, is_local=True)
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
        name = os.environ.get("OPENAI_MODEL", "gpt-4.1-mini")
        model = ChatOpenAI(
            model=name,
            temperature=0,
            base_url=os.environ.get("OPENAI_BASE_URL"),
            # A local server (vLLM, Ollama, llama.cpp) takes any key; the client wants one.
            api_key=os.environ.get("OPENAI_API_KEY") or "unused",  # type: ignore[arg-type]
        )
        label = f"OpenAI-compatible {name} at {os.environ.get('OPENAI_BASE_URL') or 'OpenAI'}"
        return Summarizer(model, label, {}, REAL_MODEL_SUMMARY_TOKENS)
    return Summarizer(TranscriptDigestSummarizer(), "offline stand-in (no model)", {}, 400)


class ReplayAgent(BaseChatModel):
    """A STAND-IN agent model: it replays the conversation's tool calls and answers in order."""

    _replies: list[AIMessage] = PrivateAttr(default_factory=list)

    def __init__(self, turns: Sequence[DemoTurn], first_turn: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for number, turn in enumerate(turns, start=first_turn):
            if turn.tool is not None:
                call = {"name": turn.tool, "args": turn.args, "id": f"call-{number}"}
                self._replies.append(AIMessage("", tool_calls=[call], id=f"ai-{number}-call"))
            self._replies.append(AIMessage(turn.answer, id=f"ai-{number}"))

    @property
    def _llm_type(self) -> str:
        return "replay-agent"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ReplayAgent:  # type: ignore[override]
        """The replies are scripted: the tools are the graph's, not the model's, business."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._replies.pop(0) if self._replies else AIMessage("Noted.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


# -- the parent graph --------------------------------------------------------------------------


class Input(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class State(Input):
    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    """The compacted model input: written by compaction, never checkpointed."""
    compaction: Annotated[CompactionReport | None, UntrackedValue]
    """What the last compaction call did."""


Agent = CompiledStateGraph[State, None, Input, State]


def build_agent(
    agent_model: BaseChatModel,
    summarizer: Summarizer,
    store: SummaryStore,
    checkpointer: SqliteSaver,
) -> Agent:
    """``START -> compaction -> agent -> (tools -> compaction -> agent)* -> END``."""
    config = demo_config(summarizer)
    compaction = create_compaction_graph(
        config, model=summarizer.model, store=store, tools=DEMO_TOOLS
    )
    bound = agent_model.bind_tools(DEMO_TOOLS)

    def agent(state: State) -> dict[str, list[AnyMessage]]:
        # The model reads the compacted input; the key is absent after an interrupt/resume.
        reply = bound.invoke(state.get("llm_input_messages") or state["messages"])
        return {"messages": [reply]}

    builder = StateGraph(State, input_schema=Input)
    builder.add_node("compaction", compaction)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(DEMO_TOOLS))
    builder.add_edge(START, "compaction")
    builder.add_edge("compaction", "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "compaction")
    return builder.compile(checkpointer=checkpointer)


# -- running it --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallRow:
    """One model call: which turn, and what compaction did before it."""

    turn: int
    call: int
    report: CompactionReport


def describe(row: CallRow) -> str:
    """One line per model call: turn, action, tokens before -> after, summary version."""
    report = row.report
    version = f"summary v{report.summary_version}" if report.summary_version else "no summary"
    calls = f", {report.summary_calls} summary call(s)" if report.summary_calls else ""
    return (
        f"turn {row.turn:>2}.{row.call}  {report.action:<11} "
        f"{report.tokens_before:>6,} -> {report.tokens_after:>5,} tokens  {version}{calls}"
    )


def run_turn(
    graph: Agent,
    number: int,
    text: str,
    show: Callable[[str], None] = print,
    tick_seconds: float = TICK_SECONDS,
) -> list[CallRow]:
    """Send one user message; show each event as it streams, and a line every
    ``tick_seconds`` while a summary call runs; return one row per model call."""
    config: RunnableConfig = {"configurable": {"thread_id": DEMO_THREAD_ID}}
    rows: list[CallRow] = []
    stream = graph.stream(
        {"messages": [HumanMessage(text, id=f"user-{number}")]},
        config,
        stream_mode=["custom", "updates"],
        subgraphs=True,  # custom events of a subgraph reach the caller only with this
        version="v2",
    )
    with SummaryTicker(show, tick_seconds) as ticker:
        for part in stream:
            if part["type"] == "custom":
                ticker.observe(part["data"])
                show(describe_event(part["data"]))
            elif part["type"] == "updates" and not part["ns"] and "compaction" in part["data"]:
                report = part["data"]["compaction"]["compaction"]
                rows.append(CallRow(number, len(rows) + 1, report))
                show(describe(rows[-1]))
    return rows


def open_demo(
    data_dir: Path,
    summarizer: Summarizer,
    agent_model: BaseChatModel,
    store_url: str | None = None,
) -> Any:
    """Open the store (an SQLite file in ``data_dir`` unless ``store_url`` is given) and the
    checkpointer in ``data_dir``, and build the agent over them. Returns (graph, store, close).
    """
    store = SummaryStore(store_url or f"sqlite:///{data_dir / STORE_FILE}")
    saver_cm = SqliteSaver.from_conn_string(str(data_dir / CHECKPOINT_FILE))
    checkpointer = saver_cm.__enter__()
    graph = build_agent(agent_model, summarizer, store, checkpointer)

    def close() -> None:
        saver_cm.__exit__(None, None, None)
        store.close()

    return graph, store, close


def remove_demo_files(data_dir: Path) -> list[Path]:
    """Delete an earlier run's two SQLite files (and their WAL files) so a replay starts afresh."""
    removed = [
        path
        for name in (STORE_FILE, CHECKPOINT_FILE)
        for path in sorted(data_dir.glob(f"{name}*"))
        if path.name in {name, f"{name}-wal", f"{name}-shm", f"{name}-journal"}
    ]
    for path in removed:
        path.unlink()
    return removed


def shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it is inside it: shorter to copy."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def how_to_look(data_dir: Path, store_url: str | None) -> str:
    """The two ways to read the store this run leaves behind, as lines to copy."""
    python = shown_path(Path(sys.executable))
    url = f"sqlite:///{shown_path(data_dir / STORE_FILE)}"
    if store_url:
        url = make_url(store_url).render_as_string(hide_password=True)
    command = (
        f"     {python} -m langgraph_compaction.store inspect \\\n"
        f"         --url '{url}' --thread {DEMO_THREAD_ID} --full"
    )
    if store_url:
        return f"Look at the summaries (every version, whole):\n{command}"
    path = shown_path(data_dir / STORE_FILE)
    return (
        f"The summaries stay in {path}, the conversation in "
        f"{shown_path(data_dir / CHECKPOINT_FILE)}.\n"
        "Two ways to look at them:\n"
        "  1. the inspect command (every version, whole):\n"
        f"{command}\n"
        f"  2. open {path} in any SQLite browser (DB Browser for SQLite, or the sqlite3\n"
        "     shell): the table compaction_summaries has a row per summary version."
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_agent_args(argv)  # the parser scripts/demo checks its options with
    data_dir: Path = args.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    if not args.say and (removed := remove_demo_files(data_dir)):
        print(f"(removed the previous run's {', '.join(p.name for p in removed)} in {data_dir})")
    summarizer = pick_summarizer()
    print(f"summarizer: {summarizer.label}")
    if os.environ.get(LOCAL_MODEL_ENV):
        print(f"local model server: {os.environ[LOCAL_MODEL_ENV]}")
    if summarizer.is_local:
        print(PLUMBING_NOT_QUALITY)
    print(f"summary store: {args.store_url or shown_path(data_dir / STORE_FILE)}")
    turns = () if args.say else DEMO_TURNS[: args.turns]
    agent_model = ReplayAgent(turns)
    graph, store, close = open_demo(data_dir, summarizer, agent_model, args.store_url)
    try:
        config: RunnableConfig = {"configurable": {"thread_id": DEMO_THREAD_ID}}
        if args.say:
            history = graph.get_state(config).values.get("messages", [])
            number = 1 + sum(isinstance(m, HumanMessage) for m in history)
            rows = run_turn(graph, number, args.say)
        else:
            rows = [r for n, t in enumerate(turns, 1) for r in run_turn(graph, n, t.user)]
        messages = graph.get_state(config).values["messages"]
        summaries = store.list_summaries(DEMO_THREAD_ID)
    finally:
        close()
    made = sum(r.report.summary_calls for r in rows)
    failed = sum(r.report.action == "failed" for r in rows)
    print(
        f"\n{len(rows)} model calls, {made} summary calls, {failed} failed compactions; "
        f"{len(summaries)} summaries in the store; the checkpoint holds {len(messages)} messages."
    )
    if summaries:
        latest = summaries[-1]
        print(f"\nLatest summary (v{latest.version}, {latest.summary_tokens} tokens):")
        print("  " + latest.summary.replace("\n", "\n  "))
    if summarizer.is_local:
        print("\n(written by a 135M model: the plumbing, not the quality; see the note above)")
    print("\n" + how_to_look(data_dir, args.store_url))
    return 0


if __name__ == "__main__":
    sys.exit(main())
