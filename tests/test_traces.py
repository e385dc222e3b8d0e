"""The trace loaders reproduce the shared data faithfully (counts from each SOURCE.md)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from traces import (
    DATA_ENV,
    concatenate_sessions,
    load_locomo,
    load_swe_gym,
    load_tau_bench_airline,
    model_call_points,
    require_data,
    shared_data_dir,
    tool_pair_violations,
)


def _roles(runs: Sequence[Sequence[BaseMessage]]) -> Counter[str]:
    return Counter(m.type for run in runs for m in run)


def _tool_calls_per_message(runs: Sequence[Sequence[BaseMessage]]) -> Counter[int]:
    return Counter(
        len(m.tool_calls) for run in runs for m in run if isinstance(m, AIMessage) and m.tool_calls
    )


def _assert_results_follow_their_call(run: Sequence[BaseMessage]) -> None:
    """Each tool message sits in the tool run right after an AI message that made its call."""
    caller: AIMessage | None = None
    for message in run:
        if isinstance(message, AIMessage):
            caller = message
        elif isinstance(message, ToolMessage):
            assert caller is not None, f"{message.id} precedes every AI message"
            assert message.tool_call_id in {c["id"] for c in caller.tool_calls}, message.id
        else:
            caller = None


def _assert_ids_unique(runs: Sequence[Sequence[BaseMessage]]) -> None:
    ids = [m.id for run in runs for m in run]
    assert None not in ids
    assert len(set(ids)) == len(ids)


def _assert_call_points_outside_batches(run: Sequence[BaseMessage]) -> None:
    for i in model_call_points(run):
        assert tool_pair_violations(run[:i], allow_trailing_calls=False) == [], i
        assert isinstance(run[i - 1], HumanMessage | ToolMessage)


def test_tau_bench_matches_source_counts() -> None:
    runs = load_tau_bench_airline()
    assert len(runs) == 200
    assert sum(map(len, runs)) == 5308
    assert (min(map(len, runs)), statistics.median(map(len, runs)), max(map(len, runs))) == (
        6,
        24,
        62,
    )
    assert _roles(runs) == {"system": 200, "human": 1490, "ai": 2454, "tool": 1164}
    assert _tool_calls_per_message(runs) == {1: 1164}  # never parallel
    assert sum(1 for run in runs if isinstance(run[-1], ToolMessage)) == 51
    empty_thinks = [
        m for run in runs for m in run if isinstance(m, ToolMessage) and m.name == "think"
    ]
    assert len(empty_thinks) == 92
    assert all(m.content == "" for m in empty_thinks)


def test_tau_bench_keeps_reused_tool_call_ids() -> None:
    runs = load_tau_bench_airline()
    reused = 0
    runs_reusing = 0
    for run in runs:
        ids = Counter(c["id"] for m in run if isinstance(m, AIMessage) for c in m.tool_calls)
        repeats = sum(1 for count in ids.values() if count > 1)
        reused += repeats
        runs_reusing += repeats > 0
    assert (reused, runs_reusing) == (71, 49)


def test_tau_bench_messages_pair_by_position() -> None:
    runs = load_tau_bench_airline()
    _assert_ids_unique(runs)
    # File order is trial-major; ids name (task, trial), all 50 x 4 of them.
    heads = {run[0].id for run in runs}
    assert heads == {f"tau-{task}-{trial}-0" for task in range(50) for trial in range(4)}
    assert runs[3][5].id == "tau-3-0-5"
    for run in runs:
        assert isinstance(run[0], SystemMessage)
        _assert_results_follow_their_call(run)
        assert tool_pair_violations(run, allow_trailing_calls=False) == []
        _assert_call_points_outside_batches(run)


def test_swe_gym_matches_source_counts() -> None:
    runs = load_swe_gym()
    assert len(runs) == 5
    assert sorted(map(len, runs)) == [23, 26, 37, 41, 61]
    assert _roles(runs) == {"system": 5, "human": 13, "ai": 88, "tool": 82}
    assert _tool_calls_per_message(runs) == {1: 75, 2: 4, 4: 1}
    names = Counter(
        c["name"] for run in runs for m in run if isinstance(m, AIMessage) for c in m.tool_calls
    )
    assert names == {"str_replace_editor": 61, "execute_bash": 22, "finish": 4}
    big = [m for run in runs for m in run if isinstance(m, ToolMessage) and len(m.text) >= 16_000]
    assert len(big) == 4


def test_swe_gym_pairs_and_trailing_calls() -> None:
    runs = load_swe_gym()
    _assert_ids_unique(runs)
    for run in runs:
        _assert_results_follow_their_call(run)
        assert tool_pair_violations(run) == []
        # Every run ends on a call that never got its result (SOURCE.md); keep it as is.
        last = run[-1]
        assert isinstance(last, AIMessage) and last.tool_calls
        assert len(tool_pair_violations(run, allow_trailing_calls=False)) == 1
        _assert_call_points_outside_batches(run)


def test_swe_gym_call_points_skip_parallel_batches() -> None:
    for run in load_swe_gym():
        points = set(model_call_points(run))
        for i, message in enumerate(run):
            if isinstance(message, AIMessage) and len(message.tool_calls) > 1:
                batch = range(i + 1, i + 1 + len(message.tool_calls))
                assert all(isinstance(run[j], ToolMessage) for j in batch)
                assert points.isdisjoint(range(i + 1, batch[-1] + 1))
                assert batch[-1] + 1 in points


def test_locomo_matches_source_counts() -> None:
    conversations = load_locomo()
    assert len(conversations) == 10
    lengths = list(map(len, conversations))
    assert (sum(lengths), min(lengths), statistics.median(lengths), max(lengths)) == (
        5882,
        369,
        646,
        689,
    )
    assert _roles(conversations).keys() == {"human", "ai"}
    _assert_ids_unique(conversations)
    photos = sum("[shared a photo: " in m.text for c in conversations for m in c)
    assert photos == 1226
    first = conversations[0][0]
    assert first.text.startswith("[1:56 pm on 8 May, 2023] ")
    assert first.response_metadata["dia_id"] == "D1:1"
    # Speaker B opens conv-30, so a conversation may start with the "assistant".
    assert isinstance(conversations[1][0], AIMessage)
    undated = load_locomo(session_dates=False)[0][0]
    assert not undated.text.startswith("[")


def test_locomo_call_points_follow_user_turns() -> None:
    for conversation in load_locomo():
        for i in model_call_points(conversation):
            assert isinstance(conversation[i - 1], HumanMessage)
            assert i == len(conversation) or not isinstance(conversation[i], HumanMessage)


def test_loaders_are_deterministic_and_fresh() -> None:
    first, second = load_swe_gym(), load_swe_gym()
    assert [m.id for m in first[0]] == [m.id for m in second[0]]
    assert first[0] == second[0]
    assert first[0][0] is not second[0][0]


def test_concatenate_sessions_keeps_one_system_message() -> None:
    runs = load_tau_bench_airline()
    session = concatenate_sessions(runs, 10)
    assert len(session) == sum(len(run) for run in runs[:10]) - 9
    assert [i for i, m in enumerate(session) if isinstance(m, SystemMessage)] == [0]
    _assert_ids_unique([session])
    assert tool_pair_violations(session) == []
    _assert_call_points_outside_batches(session)
    with pytest.raises(ValueError, match="between 1 and 200"):
        concatenate_sessions(runs, 0)


def test_model_call_points_on_a_parallel_batch() -> None:
    messages: list[BaseMessage] = [
        SystemMessage("policy", id="s"),
        HumanMessage("hi", id="h1"),
        HumanMessage("are you there?", id="h2"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[
                {"name": "t", "args": {}, "id": "c1", "type": "tool_call"},
                {"name": "t", "args": {}, "id": "c2", "type": "tool_call"},
            ],
        ),
        ToolMessage("one", tool_call_id="c1", id="t1"),
        ToolMessage("two", tool_call_id="c2", id="t2"),
        AIMessage("done", id="a2"),
        HumanMessage("thanks", id="h3"),
    ]
    assert model_call_points(messages) == [3, 6, 8]
    assert tool_pair_violations(messages) == []


def test_tool_pair_violations_by_position() -> None:
    call = {"name": "t", "args": {}, "id": "c1", "type": "tool_call"}
    orphan = [HumanMessage("hi", id="h"), ToolMessage("x", tool_call_id="c1", id="t")]
    assert tool_pair_violations(orphan) == ["t: tool result c1 follows no call"]
    unanswered: list[BaseMessage] = [AIMessage("", id="a", tool_calls=[call]), HumanMessage("?")]
    assert tool_pair_violations(unanswered) == ["a: calls ['c1'] have no result"]
    reused: list[BaseMessage] = [
        AIMessage("", id="a1", tool_calls=[call]),
        ToolMessage("x", tool_call_id="c1", id="t1"),
        AIMessage("", id="a2", tool_calls=[call]),
        ToolMessage("y", tool_call_id="c1", id="t2"),
    ]
    assert tool_pair_violations(reused) == []


def test_require_data_skips_when_absent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    assert shared_data_dir() == tmp_path.resolve()
    with pytest.raises(pytest.skip.Exception, match="is absent"):
        require_data("tau-bench-airline")
    (tmp_path / "locomo").mkdir()
    assert require_data("locomo") == tmp_path.resolve() / "locomo"
