"""An agent with a real tool loop, compacted before every model call, on a real model if any.

Run it with ``python examples/agent_loop.py`` (``scripts/demo`` starts the local model first).
It replays the 36-turn conversation shipped with the package (a user and an assistant chasing
a failing nightly export, with file reads, log searches, SQL queries and test runs) through a
parent ``StateGraph``:

    START -> compaction -> agent -> (tools -> compaction -> agent)* -> END

- ``messages`` persist in a SQLite checkpoint (``SqliteSaver``); the compacted model input
  (``llm_input_messages``) and the report (``compaction``) are ``UntrackedValue`` keys, never
  checkpointed;
- summaries live in a ``SummaryStore`` SQLite file beside it, so a second process reuses them:
  ``python examples/agent_loop.py --data-dir DIR --say "..."`` continues the thread in ``DIR``;
- events stream with ``subgraphs=True`` and are printed as they happen: one line per model call
  and the ``context_compacting`` / ``context_compacted`` events of the summary calls.

The summarizer is, in order: the local OpenAI-compatible server at
``$COMPACTION_LOCAL_MODEL_URL`` (llama-cpp-python serving SmolLM2-135M-Instruct, see the
README); ``ChatOpenAI`` when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set (model
``$OPENAI_MODEL``, default ``gpt-4.1-mini``); else an offline stand-in. The agent's replies and
tool calls are the conversation's own (a replay), so every run sees the same history and only
the summaries differ; the tools run for real in a ``ToolNode``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
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
from typing_extensions import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _events import describe_event
from quickstart import TranscriptDigestSummarizer

from langgraph_compaction import (
    CompactionConfig,
    CompactionReport,
    SummaryStore,
    create_compaction_graph,
)
from langgraph_compaction._demo_data import (
    DEMO_THREAD_ID,
    DEMO_TOOLS,
    DEMO_TURNS,
    DemoTurn,
)

LOCAL_MODEL_ENV = "COMPACTION_LOCAL_MODEL_URL"
MAX_SUMMARY_TOKENS = 96


def demo_config(extra_parameters: dict[str, Any] | None = None) -> CompactionConfig:
    """Small numbers so the 36 turns compact a few times and fit a 4,096-token local model."""
    return CompactionConfig(
        trigger={"type": "tokens", "value": 2800},
        keep={"type": "messages", "value": 20},
        headroom_ratio=0.75,  # land well below the trigger, so summaries are few and reused
        trim_tokens_to_summarize=2000,  # one call stays well inside the local model's 4,096 tokens
        max_summary_tokens=MAX_SUMMARY_TOKENS,
        parameters=extra_parameters or {},
    )


# -- the models --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summarizer:
    """The chosen summarizer, a label for it, and parameters its summary calls need."""

    model: BaseChatModel
    label: str
    parameters: dict[str, Any]


def pick_summarizer() -> Summarizer:
    """The local model if it runs, else OpenAI (or a compatible server) if set, else a stand-in."""
    from langchain_openai import ChatOpenAI

    local_url = os.environ.get(LOCAL_MODEL_ENV)
    if local_url:
        model = ChatOpenAI(
            base_url=local_url, api_key="local", model="smollm2", temperature=0, timeout=120
        )
        # llama-cpp-python's server ignores max_completion_tokens, which ChatOpenAI sends for
        # max_tokens: the cap must travel in the body as max_tokens.
        parameters = {"extra_body": {"max_tokens": MAX_SUMMARY_TOKENS}}
        return Summarizer(model, "local SmolLM2-135M-Instruct (llama-cpp-python)", parameters)
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
        name = os.environ.get("OPENAI_MODEL", "gpt-4.1-mini")
        return Summarizer(ChatOpenAI(model=name, temperature=0), f"OpenAI-compatible {name}", {})
    return Summarizer(TranscriptDigestSummarizer(), "offline stand-in (no model)", {})


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
    compaction = create_compaction_graph(
        demo_config(summarizer.parameters), model=summarizer.model, store=store, tools=DEMO_TOOLS
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
    graph: Agent, number: int, text: str, show: Callable[[str], None] = print
) -> list[CallRow]:
    """Send one user message; show each event as it streams; return one row per model call."""
    config: RunnableConfig = {"configurable": {"thread_id": DEMO_THREAD_ID}}
    rows: list[CallRow] = []
    for part in graph.stream(
        {"messages": [HumanMessage(text, id=f"user-{number}")]},
        config,
        stream_mode=["custom", "updates"],
        subgraphs=True,  # custom events of a subgraph reach the caller only with this
        version="v2",
    ):
        if part["type"] == "custom":
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
    store = SummaryStore(store_url or f"sqlite:///{data_dir / 'summaries.db'}")
    saver_cm = SqliteSaver.from_conn_string(str(data_dir / "checkpoints.db"))
    checkpointer = saver_cm.__enter__()
    graph = build_agent(agent_model, summarizer, store, checkpointer)

    def close() -> None:
        saver_cm.__exit__(None, None, None)
        store.close()

    return graph, store, close


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="where the two SQLite files go")
    parser.add_argument("--turns", type=int, default=len(DEMO_TURNS), help="turns to replay")
    parser.add_argument("--say", help="continue the thread in --data-dir with this message")
    parser.add_argument("--store-url", help="a SQLAlchemy URL for the summaries, e.g. PostgreSQL")
    args = parser.parse_args(argv)
    if args.say and args.data_dir is None:
        parser.error("--say needs the --data-dir of an earlier run")
    with tempfile.TemporaryDirectory(prefix="compaction-agent-loop-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        data_dir.mkdir(parents=True, exist_ok=True)
        summarizer = pick_summarizer()
        print(f"summarizer: {summarizer.label}")
        if os.environ.get(LOCAL_MODEL_ENV):
            print(f"local model server: {os.environ[LOCAL_MODEL_ENV]}")
        print(f"summary store: {args.store_url or data_dir / 'summaries.db'}")
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
        print(
            f"\n{len(rows)} model calls, {made} summary calls; {len(summaries)} summaries "
            f"in the store; the checkpoint holds {len(messages)} messages."
        )
        if summaries:
            print("\nLatest summary:\n  " + summaries[-1].summary.replace("\n", "\n  "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
