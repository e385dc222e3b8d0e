"""Quickstart: a LangGraph agent whose context is compacted before every model call.

Run it with ``python examples/quickstart.py``. It works offline on a fresh machine: the agent
model and the summarizer are small deterministic stand-ins, so no API key is needed.

What it shows:

- a parent ``StateGraph`` that keeps ``messages`` (with ``add_messages``) in a SQLite
  checkpoint, and declares ``llm_input_messages`` and ``compaction`` with ``UntrackedValue``
  so the compacted model input is never checkpointed;
- the compaction subgraph as the node right before the agent node (``compaction -> agent
  -> tools -> compaction -> agent ...``), with its summaries in a ``SummaryStore`` file;
- one line per model call: the turn, what compaction did, the tokens before and after, and
  the summary version in use; the ``context_compacting`` / ``context_compacted`` events as
  they stream (``stream_mode=["custom", "updates"]`` with ``subgraphs=True``);
- at the end, the summary rows in the store, and a check that the checkpoint still holds
  every message of the conversation.

To use real models, replace ``ScriptedTravelAgent`` with e.g.
``init_chat_model("openai:gpt-4.1-mini").bind_tools(TOOLS)`` and pass
``model="openai:gpt-4.1-mini"`` (or any chat model) to ``create_compaction_graph``.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

from _events import describe_event
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
from travel_chat import TOOLS, TURNS, Turn
from typing_extensions import TypedDict

from langgraph_compaction import (
    CompactionConfig,
    CompactionReport,
    SummaryStore,
    create_compaction_graph,
)

THREAD_ID = "trip-to-japan"
TRIGGER_TOKENS = 1200
KEEP_MESSAGES = 8

CONFIG = CompactionConfig(
    # Small numbers so a 30-turn chat compacts several times; a real agent would use e.g.
    # {"type": "fraction", "value": 0.8} with its model's context window.
    trigger={"type": "tokens", "value": TRIGGER_TOKENS},
    keep={"type": "messages", "value": KEEP_MESSAGES},
    max_summary_tokens=400,
)


# -- the stand-in models -----------------------------------------------------------------------


class TranscriptDigestSummarizer(BaseChatModel):
    """A STAND-IN summarizer for offline demos: no model, just the transcript's lines.

    It reads the prompt the compaction pipeline sends (the previous summary, if any, and the
    newly evicted messages) and writes the checkpoint sections from them: the first request
    as the goal, one bullet per user request and tool result, the last request as next step.
    A real summarizer writes far better summaries; the plumbing around it is the same.
    """

    max_bullets: int = 8

    @property
    def _llm_type(self) -> str:
        return "transcript-digest-summarizer"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = "\n".join(m.text for m in messages)
        previous = _between(prompt, "<summary>", "</summary>")
        transcript = _between(prompt, "<conversation>", "</conversation>")
        goal = _section(previous, "Goal")
        bullets = [b for b in _section(previous, "Progress").splitlines() if b.startswith("- ")]
        last_request = ""
        for role, text in re.findall(r"^(user|tool [\w]+): (.*)$", transcript, re.MULTILINE):
            line = _clip(text, 90)
            if role == "user":
                goal = goal or line
                last_request = line
                bullets.append(f"- asked: {line}")
            else:
                bullets.append(f"- {role.removeprefix('tool ')}: {line}")
        next_step = last_request or _section(previous, "Next Steps")
        summary = (
            f"## Goal\n{goal}\n\n## Progress\n" + "\n".join(bullets[-self.max_bullets :])
        ) + f"\n\n## Next Steps\n{next_step}"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(summary))])


class ScriptedTravelAgent(BaseChatModel):
    """A STAND-IN agent model: it replays the scripted replies of ``travel_chat.TURNS``.

    Before each reply it records how many messages it was sent, to show what compaction
    gave it.
    """

    _replies: list[AIMessage] = PrivateAttr(default_factory=list)
    _input_sizes: list[int] = PrivateAttr(default_factory=list)

    def __init__(self, turns: tuple[Turn, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for number, turn in enumerate(turns, start=1):
            if turn.tool is not None:
                call = {"name": turn.tool, "args": turn.args, "id": f"call_{number}"}
                self._replies.append(AIMessage("", tool_calls=[call]))
            self._replies.append(AIMessage(turn.answer))

    @property
    def _llm_type(self) -> str:
        return "scripted-travel-agent"

    @property
    def input_sizes(self) -> list[int]:
        """How many messages each call received."""
        return list(self._input_sizes)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._input_sizes.append(len(messages))
        return ChatResult(generations=[ChatGeneration(message=self._replies.pop(0))])


def _between(text: str, start: str, end: str) -> str:
    _, found, rest = text.partition(start)
    return rest.partition(end)[0].strip() if found else ""


def _section(summary: str, title: str) -> str:
    match = re.search(rf"^## {title}\n(.*?)(?=^## |\Z)", summary, re.MULTILINE | re.DOTALL)
    return match.group(1).strip() if match else ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    agent_model: BaseChatModel, store: SummaryStore, checkpointer: SqliteSaver
) -> Agent:
    """``START -> compaction -> agent -> (tools -> compaction -> agent)* -> END``."""
    compaction = create_compaction_graph(CONFIG, model=TranscriptDigestSummarizer(), store=store)

    def agent(state: State) -> dict[str, list[AnyMessage]]:
        # The model reads the compacted input; the key is absent after an interrupt/resume.
        reply = agent_model.invoke(state.get("llm_input_messages") or state["messages"])
        return {"messages": [reply]}

    builder = StateGraph(State, input_schema=Input)
    builder.add_node("compaction", compaction)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_edge(START, "compaction")
    builder.add_edge("compaction", "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "compaction")
    return builder.compile(checkpointer=checkpointer)


# -- running it --------------------------------------------------------------------------------


def describe(turn: int, call: int, report: CompactionReport) -> str:
    """One line per model call: turn, action, tokens before -> after, summary version."""
    version = f"summary v{report.summary_version}" if report.summary_version else "no summary"
    return (
        f"turn {turn:>2}.{call}  {report.action:<11} "
        f"{report.tokens_before:>6,} -> {report.tokens_after:>5,} tokens  {version}"
    )


def run_turn(graph: Agent, number: int, turn: Turn) -> None:
    """Send one user message and print what happens before each model call."""
    config: RunnableConfig = {"configurable": {"thread_id": THREAD_ID}}
    calls = 0
    for part in graph.stream(
        {"messages": [HumanMessage(turn.user)]},
        config,
        stream_mode=["custom", "updates"],
        subgraphs=True,  # custom events of a subgraph reach the caller only with this
        version="v2",
    ):
        if part["type"] == "custom":
            print(describe_event(part["data"]))
        elif part["type"] == "updates" and not part["ns"] and "compaction" in part["data"]:
            calls += 1  # the parent's update from the compaction node
            print(describe(number, calls, part["data"]["compaction"]["compaction"]))


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="compaction-quickstart-") as tmp:
        store = SummaryStore(f"sqlite:///{Path(tmp) / 'summaries.db'}")
        agent_model = ScriptedTravelAgent(TURNS)
        with SqliteSaver.from_conn_string(str(Path(tmp) / "checkpoints.db")) as checkpointer:
            graph = build_agent(agent_model, store, checkpointer)
            print(f"Planning a trip in {len(TURNS)} turns; compaction runs before each model call.")
            print(f"trigger: {TRIGGER_TOKENS:,} tokens, keep: last {KEEP_MESSAGES} messages")
            print("One line per model call: turn N.1, and N.2 after a tool result.\n")
            for number, turn in enumerate(TURNS, start=1):
                run_turn(graph, number, turn)
            state = graph.get_state({"configurable": {"thread_id": THREAD_ID}})
        expected = sum(4 if turn.tool else 2 for turn in TURNS)
        kept = len(state.values["messages"])
        summaries = store.list_summaries(THREAD_ID)
        store.close()

        print(f"\nSummary store ({len(summaries)} rows, oldest first):")
        for record in summaries:
            print(
                f"  v{record.version} {record.kind:<7} covers {record.covered_messages:>3} "
                f"messages, {record.summary_tokens:>3} tokens from {record.source_tokens:,} "
                f"(model {record.model})"
            )
        if summaries:
            print("\nLatest summary:\n  " + summaries[-1].summary.replace("\n", "\n  "))
        print(
            f"\nCheckpoint: {kept} messages kept (expected {expected}); the model's last input "
            f"had {agent_model.input_sizes[-1]}. "
            f"llm_input_messages checkpointed: {'llm_input_messages' in state.values}."
        )
        if kept != expected or "llm_input_messages" in state.values:
            print("error: the checkpoint does not hold the whole conversation", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
