"""Pruning (DESIGN 6.2): LibreChat's treatments, sticky epochs, request-only, real traces.

The pure rule (`plan_pruning` below, built from `_pruning`'s functions) is checked on
hand-built model inputs; the epochs through the graph, replayed turn by turn over synthetic
agent runs and the real traces. A replayed turn is a *compaction turn* when the summary in use
or the set of treated messages changed; every other turn must extend the previous model input
byte for byte.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, cast

import pytest
from fakes import RecordingSummarizer, message_text
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph, add_messages
from traces import (
    concatenate_sessions,
    load_swe_gym,
    load_tau_bench_airline,
    model_call_points,
    tool_pair_violations,
)
from typing_extensions import TypedDict

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph
from langgraph_compaction.config.parts import PruningConfig
from langgraph_compaction.content.messages import trim_middle as soft_trim_text
from langgraph_compaction.pruning.rules import (
    age_levels,
    first_user_index,
    is_candidate,
    protected_from,
    prunable_chars,
    pruned_copy,
    tool_allowed,
)

PLACEHOLDER = "[Old tool result content cleared]"
PRUNING = {
    "enabled": True,
    "min_prunable_tool_chars": 2000,
    "soft_trim": {"max_chars": 1000, "head_chars": 300, "tail_chars": 300},
}
CONFIG: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 12000},
    "keep": {"type": "messages", "value": 6},
    "pruning": PRUNING,
}
TESTS = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- helpers
def tool_turn(tag: str, size: int, *, calls: int = 1, name: str = "read") -> list[BaseMessage]:
    """An assistant message with ``calls`` parallel calls and their results of ``size`` chars."""
    ids = [f"{tag}-c{k}" for k in range(calls)]
    ai = AIMessage(
        "",
        id=f"{tag}-ai",
        tool_calls=[
            {"name": name, "args": {"k": k}, "id": ids[k], "type": "tool_call"}
            for k in range(calls)
        ],
    )
    results: list[BaseMessage] = [
        ToolMessage(
            f"{tag} result {k}: " + "x" * size + " END",
            tool_call_id=ids[k],
            name=name,
            id=f"{tag}-r{k}",
        )
        for k in range(calls)
    ]
    return [ai, *results]


def agent_run(turns: int, *, big: int = 5000, small: int = 300) -> list[BaseMessage]:
    """A coding-agent-like run: every third result is large, a user nudge every 25 turns."""
    messages: list[BaseMessage] = [
        SystemMessage("You are a coding agent.", id="sys"),
        *tool_turn("boot", 4000),  # before the first user message: protected
        HumanMessage("Fix the failing test.", id="u0"),
    ]
    for t in range(turns):
        if t and t % 25 == 0:
            messages.append(AIMessage(f"progress {t}", id=f"say{t}"))
            messages.append(HumanMessage(f"continue {t}", id=f"u{t}"))
        calls = 2 if t % 10 == 5 else 1
        messages.extend(tool_turn(f"t{t}", big if t % 3 == 0 else small, calls=calls))
    return messages


def dump(message: BaseMessage) -> str:
    """The bytes of a message as a provider request would carry them (every field)."""
    return json.dumps(message.model_dump(), sort_keys=True, default=str)


@dataclass
class Turn:
    point: int
    output: list[BaseMessage]
    report: CompactionReport
    treated: dict[str, str] = field(default_factory=dict)
    """Message id -> content, for output messages whose content differs from the original."""


def treated_of(
    output: Sequence[BaseMessage], originals: dict[str | None, BaseMessage]
) -> dict[str, str]:
    return {
        m.id or "": message_text(m)
        for m in output
        if m.id in originals and m.content != originals[m.id].content
    }


def replay(
    graph: Any, run: Sequence[BaseMessage], thread: str, points: Sequence[int] | None = None
) -> list[Turn]:
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    originals = {m.id: m for m in run}
    turns = []
    for point in points if points is not None else model_call_points(run):
        result = graph.invoke({"messages": cast(list[AnyMessage], list(run[:point]))}, config)
        output = result["llm_input_messages"]
        turns.append(Turn(point, output, result["compaction"], treated_of(output, originals)))
    return turns


@dataclass
class Stability:
    compactions: int = 0
    crossings: int = 0
    stable: int = 0
    unstable: list[int] = field(default_factory=list)

    @property
    def share(self) -> float:
        total = self.stable + len(self.unstable)
        return self.stable / total if total else 1.0


def stability(turns: Sequence[Turn]) -> Stability:
    """Count turns whose input extends the previous one (compaction turns set apart)."""
    found = Stability()
    for before, after in itertools.pairwise(turns):
        if after.report.summary_id != before.report.summary_id:
            found.compactions += 1
        elif after.treated != before.treated:
            found.crossings += 1
        elif [dump(m) for m in after.output[: len(before.output)]] == [
            dump(m) for m in before.output
        ]:
            found.stable += 1
        else:
            found.unstable.append(after.point)
    return found


GraphFactory = Callable[..., Any]


@pytest.fixture
def make_graph(tmp_path: Path) -> Iterator[GraphFactory]:
    """``make_graph(config=None, *, folder="db", **factory_kwargs)``: a graph on a store in
    ``tmp_path/folder`` (graphs made with the same folder share it, as workers would)."""
    stores: list[SummaryStore] = []

    def make(config: dict[str, Any] | None = None, *, folder: str = "db", **kwargs: Any) -> Any:
        (tmp_path / folder).mkdir(exist_ok=True)
        stores.append(SummaryStore(f"sqlite:///{tmp_path / folder / 'summaries.db'}"))
        return create_compaction_graph(config or CONFIG, store=stores[-1], **kwargs)

    yield make
    for store in stores:
        store.close()


def plan_pruning(messages: Sequence[BaseMessage], pruning: PruningConfig) -> dict[int, BaseMessage]:
    """LibreChat's rule evaluated once over a model input at its own length, by index: the
    pure functions the epochs apply at each crossing, without epochs or escalation."""
    if not pruning.enabled or not messages:
        return {}
    first_user = first_user_index(messages, 0)
    if first_user is None:
        return {}
    end = protected_from(messages, 0, len(messages), pruning.keep_last_assistants)
    eligible = [i for i in range(first_user + 1, end) if is_candidate(messages, i, pruning)]
    chars = {i: prunable_chars(messages[i]) for i in eligible}
    levels = age_levels(eligible, len(messages), 0, chars, pruning)
    return {i: pruned_copy(messages[i], level, pruning) for i, level in levels.items()}


def check_turn(run: Sequence[BaseMessage], turn: Turn, pruning: PruningConfig) -> None:
    """Every treated message was eligible at this point; everything else is the original."""
    messages = run[: turn.point]
    where = f"call at {turn.point} ({turn.report.action})"
    assert tool_pair_violations(turn.output, allow_trailing_calls=False) == [], where
    assert turn.report.repaired_pairs == 0, where
    index = {m.id: k for k, m in enumerate(messages)}
    users = [k for k, m in enumerate(messages) if isinstance(m, HumanMessage)]
    first_user = users[0] if users else len(messages)
    assistants = [k for k, m in enumerate(messages) if isinstance(m, AIMessage)]
    keep = pruning.keep_last_assistants
    protected = assistants[-keep] if len(assistants) >= keep else 0
    pruned = 0
    for message in turn.output:
        original = messages[index[message.id]] if message.id in index else None
        if original is None or message.content == original.content:
            continue
        k = index[message.id]
        assert isinstance(original, ToolMessage), f"{where}: {message.id} is not a tool result"
        assert dump(message.model_copy(update={"content": original.content})) == dump(original)
        text = message_text(message)
        if k >= protected and "characters cut" in text:  # the newest unit alone over (6.3)
            assert turn.report.shortened_count > 0, where
            continue
        pruned += 1
        assert first_user < k < protected, f"{where}: protected {message.id} was pruned"
        assert len(message_text(original)) >= pruning.min_prunable_tool_chars, where
        assert text == pruning.hard_clear.placeholder or "characters cut" in text, where
    assert turn.report.pruned_count == pruned, where


# --------------------------------------------------------------------------- the rule
def test_soft_trim_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    text = "H" * 10 + "m" * 80 + "T" * 10
    trimmed = soft_trim_text(text, 10, 10)
    assert trimmed.startswith("H" * 10) and trimmed.endswith("T" * 10)
    assert "[... 80 of 100 characters cut ...]" in trimmed
    assert soft_trim_text("short", 10, 10) == "short"


def test_plan_pruning_follows_librechat_ages_and_protection() -> None:
    pruning = PruningConfig.model_validate(PRUNING)
    # 20 messages: a big result before the first user message (protected), then results at
    # known positions; the last three assistant messages and what follows are protected.
    messages: list[BaseMessage] = [SystemMessage("s", id="sys")]
    messages.append(ToolMessage("b" * 5000, tool_call_id="boot", id="boot"))
    messages.append(HumanMessage("go", id="u"))
    for t in range(8):
        messages.extend(tool_turn(f"t{t}", 5000 if t != 2 else 100))
    messages.append(HumanMessage("and now?", id="u2"))
    assert len(messages) == 20
    plan = plan_pruning(messages, pruning)
    ages = {i: (20 - i) / 20 for i in plan}
    assert 1 not in plan, "before the first user message is protected"
    assert all(isinstance(messages[i], ToolMessage) for i in plan)
    for i, replacement in plan.items():
        text = message_text(replacement)
        if ages[i] >= 0.5:
            assert text == PLACEHOLDER, i
        else:
            assert ages[i] >= 0.3 and "characters cut" in text, i
    assert 8 not in plan, "a small result is never eligible"
    last_three = [i for i, m in enumerate(messages) if isinstance(m, AIMessage)][-3]
    assert max(plan) < last_three
    assert sorted(plan) == [4, 6, 10, 12], plan  # 14 and later: too young or protected
    none = PruningConfig.model_validate({**PRUNING, "keep_last_assistants": 20})
    assert plan_pruning(messages, none) == {}, "fewer assistants than keep: nothing to prune"
    everything = PruningConfig.model_validate({**PRUNING, "keep_last_assistants": 0})
    assert max(plan_pruning(messages, everything)) > last_three


def test_tools_allow_and_deny_deny_wins_case_insensitive() -> None:
    pruning = PruningConfig.model_validate(
        {"enabled": True, "tools": {"allow": ["Read*", "exec"], "deny": ["read_secret*"]}}
    )
    assert tool_allowed("read_file", pruning)
    assert tool_allowed("EXEC", pruning)
    assert not tool_allowed("read_secrets", pruning)
    assert not tool_allowed("search", pruning)
    assert tool_allowed("anything", PruningConfig(enabled=True))
    messages: list[BaseMessage] = [HumanMessage("go", id="u")]
    for t, name in enumerate(["read_file", "exec", "read_secret", "search", "x", "x", "x"]):
        messages.extend(tool_turn(f"t{t}", 5000, name=name))
    plan = plan_pruning(messages, pruning.model_copy(update={"min_prunable_tool_chars": 10}))
    assert {messages[i].name for i in plan} == {"read_file", "exec"}


def test_images_in_tool_results_become_a_short_placeholder() -> None:
    pruning = PruningConfig.model_validate({**PRUNING, "hard_clear_ratio": 0.9})
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 9000}}
    messages: list[BaseMessage] = [HumanMessage("look", id="u")]
    for t in range(6):
        ai, result = tool_turn(f"t{t}", 10)
        content: list[str | dict[str, Any]] = [
            {"type": "text", "text": "shot " + "y" * 3000},
            image,
        ]
        messages.extend([ai, result.model_copy(update={"content": content})])
    plan = plan_pruning(messages, pruning)
    assert plan, "a result with an image is prunable"
    for i, replacement in plan.items():
        text = message_text(replacement)
        assert "[image omitted]" in text and "base64" not in str(replacement.content)
        assert len(text) < 1000
        assert messages[i].content[1] == image  # the original keeps its image
    cleared = plan_pruning(messages, pruning.model_copy(update={"hard_clear_ratio": 0.3}))
    assert {message_text(m) for m in cleared.values()} == {PLACEHOLDER}


def test_without_hard_clear_old_results_are_only_soft_trimmed() -> None:
    pruning = PruningConfig.model_validate({**PRUNING, "hard_clear": {"enabled": False}})
    messages: list[BaseMessage] = [HumanMessage("go", id="u")]
    for t in range(10):
        messages.extend(tool_turn(f"t{t}", 5000))
    plan = plan_pruning(messages, pruning)
    assert plan and all("characters cut" in message_text(m) for m in plan.values())
    assert max((21 - i) / 21 for i in plan) >= 0.5, "old enough to be cleared otherwise"


# --------------------------------------------------------------------------- the pipeline
def test_pruning_alone_serves_the_call_without_a_summary(make_graph: GraphFactory) -> None:
    run = agent_run(60)
    summarizer = RecordingSummarizer()
    turns = replay(make_graph(model=summarizer), run, "t")
    actions = [t.report.action for t in turns]
    first = actions.index("pruned")
    assert set(actions[:first]) == {"passthrough"} and set(actions[first:]) == {"pruned"}
    assert summarizer.call_count == 0
    pruned = turns[first]
    assert pruned.report.tokens_before >= 12000 > pruned.report.tokens_after
    assert pruned.report.tokens_after < 0.75 * 12000, "a crossing lands below the headroom"
    pruning = PruningConfig.model_validate(PRUNING)
    for turn in turns:
        check_turn(run, turn, pruning)


@pytest.mark.slow
def test_between_crossings_the_input_only_grows_by_appending(make_graph: GraphFactory) -> None:
    """Sticky epochs over a long run, through a summary; a second graph sends the same bytes."""
    run = agent_run(190)
    turns = replay(make_graph(model=RecordingSummarizer()), run, "t")
    found = stability(turns)
    assert found.unstable == [], found
    assert found.compactions >= 1 and found.crossings >= 3, found
    assert found.crossings + found.compactions <= 0.25 * len(turns), found
    pruning = PruningConfig.model_validate(PRUNING)
    for turn in turns:
        check_turn(run, turn, pruning)
    # Once a summary is in use its kept messages are pruned in turn.
    assert any(t.report.action == "reused" and t.report.pruned_count for t in turns)

    # Another graph on the same store (a second worker): a warm cache, extended call by call,
    # and a cold one, derived from scratch at sampled points, give the same bytes.
    points = [t.point for t in turns]
    again = replay(make_graph(model=RecordingSummarizer()), run, "t", points[::2])
    cold = [
        replay(make_graph(model=RecordingSummarizer()), run, "t", [p])[0] for p in points[5::29]
    ]
    by_point = {t.point: t for t in turns}
    for other in again + cold:
        expected = by_point[other.point].output
        assert [dump(m) for m in other.output] == [dump(m) for m in expected], other.point


def test_the_summarizer_gets_the_original_tool_results(make_graph: GraphFactory) -> None:
    run = agent_run(150)
    summarizer = RecordingSummarizer()
    config = {**CONFIG, "trim_tokens_to_summarize": None}  # one call, nothing shortened
    turns = replay(make_graph(config, model=summarizer), run, "t")
    assert any(t.report.action == "summarized" for t in turns)
    assert any(t.report.action == "pruned" for t in turns)
    transcripts = "\n".join(call.transcript for call in summarizer.calls)
    assert PLACEHOLDER not in transcripts and "characters cut" not in transcripts
    assert "t0 result 0: " + "x" * 5000 in transcripts


def test_a_messages_trigger_is_not_served_by_pruning(make_graph: GraphFactory) -> None:
    config = {**CONFIG, "trigger": [{"type": "messages", "value": 40}]}
    summarizer = RecordingSummarizer()
    turns = replay(make_graph(config, model=summarizer), agent_run(30), "t")
    assert "pruned" not in {t.report.action for t in turns}
    assert summarizer.call_count > 0


def test_inputs_state_and_checkpoint_keep_the_originals(make_graph: GraphFactory) -> None:
    run = agent_run(60)
    seen: list[list[AnyMessage]] = []

    class State(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]
        llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
        compaction: Annotated[CompactionReport | None, UntrackedValue]

    def agent(state: State) -> dict[str, Any]:
        seen.append(state.get("llm_input_messages") or state["messages"])
        return {}

    builder = StateGraph(State)
    builder.add_node("compaction", make_graph(model=RecordingSummarizer()))
    builder.add_node("agent", agent)
    builder.add_edge(START, "compaction")
    builder.add_edge("compaction", "agent")
    saver = InMemorySaver()
    parent = builder.compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "p"}}
    before = [dump(m) for m in run]
    parent.invoke(cast(State, {"messages": run}), config)
    assert [dump(m) for m in run] == before, "an input message was mutated"
    assert any(message_text(m) == PLACEHOLDER for m in seen[-1]), "nothing was pruned"
    state = parent.get_state(config).values
    assert [dump(m) for m in state["messages"]] == before
    assert "llm_input_messages" not in state
    checkpoint = saver.get_tuple(config)
    assert checkpoint is not None
    assert PLACEHOLDER not in repr(checkpoint.checkpoint["channel_values"])


async def test_the_async_path_sends_the_same_bytes(make_graph: GraphFactory) -> None:
    run = agent_run(70)
    points = model_call_points(run)
    sync_graph = await asyncio.to_thread(make_graph, folder="sync", model=RecordingSummarizer())
    turns = await asyncio.to_thread(replay, sync_graph, run, "s")  # the sync path, off the loop
    graph = await asyncio.to_thread(make_graph, folder="async", model=RecordingSummarizer())
    config: RunnableConfig = {"configurable": {"thread_id": "s"}}
    for point, turn in zip(points, turns, strict=True):
        result = await graph.ainvoke({"messages": cast(list[AnyMessage], run[:point])}, config)
        assert [dump(m) for m in result["llm_input_messages"]] == [dump(m) for m in turn.output]
    assert any(t.report.action == "pruned" for t in turns)


_WORKER = """
import hashlib, json, sys
sys.path[:0] = [{tests!r}, {tests!r} + "/pruning"]
from test_prune import CONFIG, agent_run, dump
from langgraph_compaction import SummaryStore, create_compaction_graph
from traces import model_call_points
run = agent_run(60)
graph = create_compaction_graph(CONFIG, store=SummaryStore({url!r}))
digest = hashlib.sha256()
for point in model_call_points(run):
    result = graph.invoke({{"messages": run[:point]}}, {{"configurable": {{"thread_id": "x"}}}})
    digest.update(json.dumps([dump(m) for m in result["llm_input_messages"]]).encode())
print(digest.hexdigest())
"""


@pytest.mark.slow
def test_another_process_sends_the_same_bytes(tmp_path: Path, make_graph: GraphFactory) -> None:
    run = agent_run(60)
    turns = replay(make_graph(), run, "x")
    assert {t.report.action for t in turns} == {"passthrough", "pruned"}
    digest = hashlib.sha256()
    for turn in turns:
        digest.update(json.dumps([dump(m) for m in turn.output]).encode())
    script = _WORKER.format(tests=str(TESTS), url=f"sqlite:///{tmp_path / 'other.db'}")
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert result.stdout.strip() == digest.hexdigest()


# --------------------------------------------------------------------------- real traces
def _trace_config(run: Sequence[BaseMessage], min_chars: int) -> dict[str, Any]:
    total = count_tokens_approximately(list(run))
    return {
        "trigger": {"type": "tokens", "value": max(total // 3, 2500)},
        "keep": {"type": "messages", "value": 8},
        "pruning": {
            **PRUNING,
            "min_prunable_tool_chars": min_chars,
            "soft_trim": {"max_chars": 800, "head_chars": 300, "tail_chars": 300},
        },
    }


def _replay_trace(
    make_graph: GraphFactory, run: Sequence[BaseMessage], name: str, min_chars: int
) -> tuple[list[Turn], Stability]:
    config = _trace_config(run, min_chars)
    before = [dump(m) for m in run]
    graph = make_graph(config, folder=name, model=RecordingSummarizer())
    turns = replay(graph, run, name, model_call_points(run))
    assert [dump(m) for m in run] == before, f"{name}: the trace was mutated"
    pruning = PruningConfig.model_validate(config["pruning"])
    for turn in turns:
        check_turn(run, turn, pruning)
    return turns, stability(turns)


@pytest.mark.slow
def test_swe_gym_trajectories_pruned_at_every_call_point(make_graph: GraphFactory) -> None:
    totals = Stability()
    pruned = 0
    for k, run in enumerate(load_swe_gym()):
        turns, found = _replay_trace(make_graph, run, f"swe{k}", min_chars=2000)
        pruned += sum(1 for t in turns if t.report.pruned_count)
        totals.stable += found.stable
        totals.unstable += found.unstable
        totals.crossings += found.crossings
    assert pruned > 0
    assert totals.share >= 0.95, totals


@pytest.mark.slow
def test_tau_bench_session_pruned_at_every_call_point(make_graph: GraphFactory) -> None:
    session = concatenate_sessions(load_tau_bench_airline(), 8)
    turns, found = _replay_trace(make_graph, session, "tau", min_chars=1000)
    assert any(t.report.pruned_count for t in turns)
    assert found.share >= 0.95, found
