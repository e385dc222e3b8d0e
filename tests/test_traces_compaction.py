"""Replay real agent traces through the compaction graph at every point an agent calls its model.

tau-bench airline (single runs and several runs concatenated into one long session) and every
SWE-Gym trajectory are replayed turn by turn: at each of `model_call_points` the graph gets
``messages[:i]`` exactly as an agent would pass it. The triggers are small on purpose (a
quarter of what the trace adds beyond its fixed floor, keep 4 messages or a few tokens), so
the graph summarizes again and again. At every call point the output must:

- obey the tool-pair rule (zero violations, zero repairs needed by the final check),
- hold the latest real user message verbatim and end with the newest message,
- keep every AI message together with all of its tool results,
- be the input's messages in their order (after the system prompt and the summary),
- leave the input list and its messages untouched.

Across a replay, summaries must be reused between compactions: far fewer summarizer calls
than call points. Tests skip (with the reason) when the shared data is absent.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from fakes import RecordingSummarizer, SummarizerCall
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from traces import (
    concatenate_sessions,
    load_swe_gym,
    load_tau_bench_airline,
    model_call_points,
    tool_pair_violations,
)

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph
from langgraph_compaction.content.estimate import estimate_tokens

KEEPS = {
    "keep-messages": {"type": "messages", "value": 4},
    "keep-tokens": None,  # tokens: a twentieth of the trace's movable part, set per trace
}


@dataclass
class ReplayStats:
    """What one replay did, for the aggregate checks."""

    name: str
    points: int = 0
    summarizer_calls: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    summary_ids: list[str] = field(default_factory=list)


def _fixed_floor(run: Sequence[BaseMessage]) -> int:
    """Tokens no compaction can remove: the system prompt and the largest user request.

    The latest user request is never summarized away, so a trigger below this floor would
    fire on every call whatever the compactor does.
    """
    system = estimate_tokens([m for m in run if m.type == "system"])
    users = [estimate_tokens([m]) for m in run if isinstance(m, HumanMessage)]
    return system + max(users, default=0)


def _config_for(run: Sequence[BaseMessage], keep_name: str) -> dict[str, Any]:
    total = estimate_tokens(run)
    floor = _fixed_floor(run)
    movable = max(total - floor, 1)
    keep = KEEPS[keep_name] or {"type": "tokens", "value": max(movable // 20, 1)}
    return {"trigger": {"type": "tokens", "value": floor + movable // 4}, "keep": keep}


def _digest(messages: Sequence[BaseMessage]) -> list[str]:
    """One digest per message over everything it holds (content, calls, ids, metadata)."""
    return [
        hashlib.blake2b(
            json.dumps(m.model_dump(), sort_keys=True, default=str).encode(), digest_size=16
        ).hexdigest()
        for m in messages
    ]


def _is_summary(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and message.name == "summary"


def _check_output(
    messages: Sequence[BaseMessage], output: Sequence[BaseMessage], report: CompactionReport
) -> None:
    """Every invariant one model input must satisfy; ``messages`` is what the agent has."""
    where = f"call at {len(messages)} ({report.action})"
    assert tool_pair_violations(output, allow_trailing_calls=False) == [], where
    assert report.repaired_pairs == 0, where
    if report.action == "passthrough":
        assert list(output) == list(messages), where
        return

    lead = 0
    while lead < len(messages) and messages[lead].type == "system":
        lead += 1
    assert list(output[:lead]) == list(messages[:lead]), where
    summaries = [k for k, m in enumerate(output) if _is_summary(m)]
    if report.summary_id is not None:
        assert summaries == [lead], where
        assert output[lead].id == f"compaction-summary-{report.summary_id}", where
    else:
        assert summaries == [], where

    # The rest is the agent's own messages, in their order, unchanged (no pruning here;
    # only an oversized newest tool result may be shortened, and then the report says so).
    index_of = {m.id: k for k, m in enumerate(messages)}
    body = [m for m in output[lead:] if not _is_summary(m)]
    positions = [index_of[m.id] for m in body]
    assert positions == sorted(set(positions)), where
    assert positions[-1] == len(messages) - 1, f"{where}: the newest message is missing"
    for message, k in zip(body, positions, strict=True):
        if message.content != messages[k].content:
            assert isinstance(message, ToolMessage) and report.shortened_count > 0, where
        assert message.type == messages[k].type, where
        if isinstance(message, AIMessage):
            original = messages[k]
            assert isinstance(original, AIMessage) and message.tool_calls == original.tool_calls, (
                where
            )

    # Everything after the summary's boundary is there; before it, only what was rescued.
    boundary = lead + report.summarized_messages
    rescued = [k for k in positions if k < boundary]
    assert len(rescued) == report.rescued_count, where
    if report.dropped_count == 0:
        assert positions[len(rescued) :] == list(range(boundary, len(messages))), where

    # The latest real user request is present, verbatim.
    latest_user = max(k for k, m in enumerate(messages) if isinstance(m, HumanMessage))
    assert latest_user in positions, f"{where}: latest user message {latest_user} dropped"
    assert body[positions.index(latest_user)].content == messages[latest_user].content

    # No AI message is separated from its tool results: each keeps the exact run of results
    # that follows it in the conversation, right after it.
    for slot, k in enumerate(positions):
        caller = messages[k]
        if not (isinstance(caller, AIMessage) and caller.tool_calls):
            continue
        end = k + 1
        while end < len(messages) and isinstance(messages[end], ToolMessage):
            end += 1
        assert positions[slot : slot + end - k] == list(range(k, end)), (
            f"{where}: {caller.id} separated from its tool results"
        )
    for slot, k in enumerate(positions):
        if isinstance(messages[k], ToolMessage):
            assert slot > 0 and positions[slot - 1] == k - 1, f"{where}: orphan {messages[k].id}"


def _about(call: SummarizerCall) -> str:
    """A summary naming a few of the transcript's words, never quoting a whole line of it (the
    default fake's head could quote a user's "please go ahead", which reads as a request)."""
    words = dict.fromkeys(w.lower() for w in re.findall(r"[A-Za-z]{6,24}", call.transcript))
    return f"SUMMARY#{call.index}: the conversation covered {', '.join(list(words)[:4])}."


def _replay(
    run: Sequence[BaseMessage],
    keep_name: str,
    store_path: Path,
    name: str,
    points: Sequence[int] | None = None,
    *,
    digest_every_call: bool = True,
) -> ReplayStats:
    """Replay ``run`` at its call points (all, unless given) through a fresh graph and store.

    With ``digest_every_call`` every message of the input is digested before and after each
    call (quadratic, but it names the call that mutated); otherwise the whole trace is
    digested once at the end (the slices share their message objects with it).
    """
    summarizer = RecordingSummarizer(reply=_about)
    store = SummaryStore(f"sqlite:///{store_path}")
    graph = create_compaction_graph(_config_for(run, keep_name), model=summarizer, store=store)
    config: RunnableConfig = {"configurable": {"thread_id": name}}
    stats = ReplayStats(name)
    whole_before = _digest(run)
    try:
        for i in points if points is not None else model_call_points(run):
            messages = list(run[:i])
            identities = [id(m) for m in messages]
            before = _digest(messages) if digest_every_call else None
            calls_before = summarizer.call_count
            result = graph.invoke({"messages": cast(list[AnyMessage], messages)}, config)
            report: CompactionReport = result["compaction"]
            calls = summarizer.call_count - calls_before

            assert [id(m) for m in messages] == identities, f"{name}@{i}: input list changed"
            if before is not None:
                assert _digest(messages) == before, f"{name}@{i}: an input message was mutated"
            _check_output(messages, result["llm_input_messages"], report)
            assert calls == report.summary_calls, f"{name}@{i}"
            if report.action == "summarized":
                assert calls >= 1, f"{name}@{i}"
                stats.summary_ids.append(report.summary_id or "")
            else:
                assert calls == 0, f"{name}@{i}: {report.action} called the summarizer"
            stats.points += 1
            stats.actions[report.action] += 1
        stats.summarizer_calls = summarizer.call_count
        records = store.list_summaries(name)
    finally:
        store.close()
    assert _digest(run) == whole_before, f"{name}: the trace was mutated"
    assert [r.id for r in records] == stats.summary_ids, name
    assert [r.version for r in records] == list(range(1, len(records) + 1)), name
    return stats


def _assert_reuse(stats: ReplayStats, *, max_share: float) -> None:
    """Summaries are made rarely and reused in between (the point of stickiness)."""
    assert stats.actions["summarized"] >= 2, f"{stats.name}: the triggers never bit: {stats}"
    assert stats.actions["reused"] >= 1, f"{stats.name}: a summary was never reused: {stats}"
    assert stats.summarizer_calls <= max_share * stats.points, stats
    assert stats.actions["failed"] == 0, stats


def _runs_with_reused_call_ids(runs: Sequence[Sequence[BaseMessage]]) -> list[int]:
    found = []
    for k, run in enumerate(runs):
        ids = [c["id"] for m in run if isinstance(m, AIMessage) for c in m.tool_calls]
        if len(ids) != len(set(ids)):
            found.append(k)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("keep_name", list(KEEPS))
def test_tau_bench_concatenated_session_at_every_call_point(keep_name: str, tmp_path: Path) -> None:
    session = concatenate_sessions(load_tau_bench_airline(), 10)
    stats = _replay(session, keep_name, tmp_path / "summaries.db", f"tau-10-{keep_name}")
    assert stats.points == len(model_call_points(session)) > 100
    _assert_reuse(stats, max_share=0.15)
    assert stats.actions["reused"] >= 10 * stats.actions["summarized"]


def test_tau_bench_long_session_sampled(tmp_path: Path) -> None:
    """Thirty runs as one session; every third call point (more change between calls)."""
    session = concatenate_sessions(load_tau_bench_airline(), 30)
    points = model_call_points(session)[::3]
    stats = _replay(
        session, "keep-tokens", tmp_path / "summaries.db", "tau-30", points, digest_every_call=False
    )
    _assert_reuse(stats, max_share=0.15)


@pytest.mark.slow
@pytest.mark.parametrize("keep_name", list(KEEPS))
def test_tau_bench_single_runs_at_every_call_point(keep_name: str, tmp_path: Path) -> None:
    runs = load_tau_bench_airline()
    ending_in_tool = [k for k, run in enumerate(runs) if isinstance(run[-1], ToolMessage)]
    chosen = sorted(
        {*range(0, len(runs), 20), *_runs_with_reused_call_ids(runs)[:4], *ending_in_tool[:2]}
    )
    all_stats = [
        _replay(runs[k], keep_name, tmp_path / f"run-{k}.db", f"tau-run-{k}") for k in chosen
    ]
    points = sum(s.points for s in all_stats)
    calls = sum(s.summarizer_calls for s in all_stats)
    summarized = sum(s.actions["summarized"] for s in all_stats)
    reused = sum(s.actions["reused"] for s in all_stats)
    assert points > 150
    assert summarized >= len(chosen), "the small trigger should bite in every run"
    assert reused >= summarized, (reused, summarized)
    assert calls <= 0.4 * points, (calls, points)


@pytest.mark.slow
@pytest.mark.parametrize("keep_name", list(KEEPS))
def test_swe_gym_every_trajectory_at_every_call_point(keep_name: str, tmp_path: Path) -> None:
    runs = load_swe_gym()
    all_stats = [
        _replay(run, keep_name, tmp_path / f"run-{k}.db", f"swe-{k}") for k, run in enumerate(runs)
    ]
    assert len(all_stats) == 5
    for stats in all_stats:
        assert stats.actions["summarized"] >= 2, stats
        assert stats.actions["failed"] == 0, stats
    points = sum(s.points for s in all_stats)
    calls = sum(s.summarizer_calls for s in all_stats)
    assert sum(s.actions["reused"] for s in all_stats) >= sum(
        s.actions["summarized"] for s in all_stats
    )
    assert calls <= 0.4 * points, (calls, points)
    longest = max(all_stats, key=lambda s: s.points)
    _assert_reuse(longest, max_share=0.25)


def test_output_checks_reject_broken_inputs(tmp_path: Path) -> None:
    """The invariants above can fail: each hand-broken model input is caught."""
    session = concatenate_sessions(load_tau_bench_airline(), 10)
    # The last point right after a tool result: the kept window then holds a tool unit.
    point = [i for i in model_call_points(session) if isinstance(session[i - 1], ToolMessage)][-1]
    messages = session[:point]
    store = SummaryStore(f"sqlite:///{tmp_path / 'summaries.db'}")
    try:
        graph = create_compaction_graph(
            _config_for(session, "keep-messages"), model=RecordingSummarizer(), store=store
        )
        config: RunnableConfig = {"configurable": {"thread_id": "check"}}
        result = graph.invoke({"messages": cast(list[AnyMessage], messages)}, config)
    finally:
        store.close()
    output: list[BaseMessage] = result["llm_input_messages"]
    report: CompactionReport = result["compaction"]
    assert report.action == "summarized"
    _check_output(messages, output, report)

    user = max(k for k, m in enumerate(output) if isinstance(m, HumanMessage) and m.name is None)
    caller = next(k for k, m in enumerate(output) if isinstance(m, AIMessage) and m.tool_calls)
    edited = output[caller].model_copy(update={"content": "rewritten"})
    broken = {
        "latest user dropped": output[:user] + output[user + 1 :],
        "tool result dropped": output[: caller + 1] + output[caller + 2 :],
        "unit dropped whole": output[:caller] + output[caller + 2 :],
        "order swapped": [*output[:-2], output[-1], output[-2]],
        "content rewritten": [*output[:caller], edited, *output[caller + 1 :]],
        "summary missing": [m for m in output if not _is_summary(m)],
        "newest message missing": output[:-1],
    }
    for what, candidate in broken.items():
        with pytest.raises(AssertionError):
            _check_output(messages, candidate, report)
            pytest.fail(f"not caught: {what}")  # pragma: no cover
