"""Artifacts (DESIGN 6.13): each tool and target, its calls, last outcome, and what it changed."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from traces import load_swe_gym, load_tau_bench_airline

from langgraph_compaction.content.artifacts import Artifact, find_artifacts


def _call(
    name: str, args: dict[str, Any], call_id: str = "c1", message_id: str | None = None
) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}], id=message_id)


def _result(text: str, call_id: str = "c1", status: str = "success") -> ToolMessage:
    return ToolMessage(text, tool_call_id=call_id, status=status)


def _artifacts(messages: list[BaseMessage]) -> tuple[Artifact, ...]:
    return find_artifacts(messages, range(len(messages)))


def test_one_entry_per_tool_and_target_in_order_of_first_call() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("go"),
        _call("get_reservation_details", {"reservation_id": "OI5L9G"}, "c1", "a1"),
        _result('{"reservation_id": "OI5L9G"}', "c1"),
        _call("cancel_reservation", {"reservation_id": "OI5L9G"}, "c2", "a2"),
        _result('{"status": "cancelled"}', "c2"),
        _call("get_reservation_details", {"reservation_id": "OI5L9G"}, "c3", "a3"),
        _result('{"reservation_id": "OI5L9G"}', "c3"),
    ]
    assert _artifacts(messages) == (
        Artifact("get_reservation_details", "OI5L9G", 2, "ok", False, "a3", 5),
        Artifact("cancel_reservation", "OI5L9G", 1, "ok", True, "a2", 3),
    )


def test_results_pair_with_the_nearest_call_of_their_id_when_ids_are_reused() -> None:
    messages: list[BaseMessage] = [
        _call("get_reservation_details", {"reservation_id": "AQLBTL"}, "call_1"),
        _result('{"reservation_id": "AQLBTL"}', "call_1"),
        _call("update_reservation_flights", {"reservation_id": "OBUT9V"}, "call_1"),
        _result("Error: gift card balance is not enough", "call_1"),
    ]
    get, update = _artifacts(messages)
    assert (get.outcome, update.outcome) == ("ok", "error")


def test_a_result_of_an_earlier_call_does_not_set_the_last_calls_outcome() -> None:
    parallel = AIMessage(
        "",
        tool_calls=[
            {"name": "read", "args": {"path": "a.py"}, "id": "c1"},
            {"name": "read", "args": {"path": "a.py"}, "id": "c2"},
        ],
    )
    assert _artifacts([parallel, _result("text", "c1")])[0].outcome == "none"
    assert _artifacts([parallel, _result("Error: gone", "c2")])[0].outcome == "error"


def test_a_call_without_a_result_has_outcome_none() -> None:
    messages: list[BaseMessage] = [_call("search", {"query": "flights"}, "c1")]
    assert _artifacts(messages)[0].outcome == "none"
    answered = [*messages, _result("[]", "c1"), _call("search", {"query": "flights"}, "c2")]
    assert _artifacts(answered)[0].outcome == "none"  # the last call's
    assert find_artifacts(answered, [0, 2])[0].outcome == "none"  # the result was not read
    assert find_artifacts(answered, [0, 1])[0].outcome == "ok"


@pytest.mark.parametrize(
    ("result", "outcome"),
    [
        (_result("done", status="error"), "error"),
        (_result("Error: flight HAT030 not available on date 2024-05-13"), "error"),
        (_result("ERROR: permission denied"), "error"),
        (_result("OBSERVATION:\nERROR:\nThe `view_range` parameter is not allowed."), "error"),
        (_result("OBSERVATION:\nHere's the result of running `cat -n` on x.py:\n1\tok"), "ok"),
        (_result('python x.py\r\nTraceback (most recent call last):\r\n  File "x.py"'), "error"),
        (_result("tests passed\n[Command finished with exit code 1]"), "error"),
        (_result("tests passed\n[Command finished with exit code 0]"), "ok"),
        (_result('{"error": "reservation not found"}'), "error"),
        (_result('{"error": null, "status": "ok"}'), "ok"),
        (_result("Errors: none found"), "ok"),
        (_result("The Error class is defined in errors.py"), "ok"),
        (ToolMessage([{"type": "text", "text": "Error: bad request"}], tool_call_id="c1"), "error"),
    ],
)
def test_error_shaped_results(result: ToolMessage, outcome: str) -> None:
    assert _artifacts([_call("tool", {"path": "x"}), result])[0].outcome == outcome


@pytest.mark.parametrize(
    ("args", "target"),
    [
        ({"query": "q", "url": "u", "path": "/a/b.py", "command": "ls"}, "/a/b.py"),
        ({"content": "x", "file_path": "/a/c.py"}, "/a/c.py"),
        ({"filePath": "/a/d.py"}, "/a/d.py"),
        ({"filename": "report.pdf", "url": "https://x.io"}, "report.pdf"),
        ({"q": "weather", "url": "https://x.io/a"}, "https://x.io/a"),
        ({"cmd": "pytest -x", "query": "q"}, "pytest -x"),
        ({"q": "weather in Oslo", "limit": "10"}, "weather in Oslo"),
        ({"cabin": "economy", "reservation_id": "OBUT9V", "payment_id": "gift_1"}, "OBUT9V"),
        ({"name": "x", "id": 42}, 42),
        ({"origin": "DEN", "destination": "IAH"}, "DEN"),
        ({"thought": "a long thought " * 10, "n": 3}, ""),
        ({}, ""),
    ],
)
def test_the_identifying_argument(args: dict[str, Any], target: object) -> None:
    assert _artifacts([_call("tool", args)])[0].target == str(target)


def test_a_long_command_is_cut_with_an_ellipsis() -> None:
    command = "python -c 'print(1)' && " * 20
    (artifact,) = _artifacts([_call("execute_bash", {"command": command})])
    assert len(artifact.target) == 160
    assert artifact.target == command[:159] + "…"


@pytest.mark.parametrize(
    ("name", "args", "changes"),
    [
        ("str_replace_editor", {"command": "create", "path": "/x.py", "file_text": "x"}, True),
        ("str_replace_editor", {"command": "str_replace", "path": "/x.py"}, True),
        ("str_replace_editor", {"command": "undo_edit", "path": "/x.py"}, True),
        ("str_replace_editor", {"command": "view", "path": "/x.py"}, False),
        ("execute_bash", {"command": "rm -rf build"}, True),
        ("execute_bash", {"command": "cd repo && git commit -m 'fix'"}, True),
        ("execute_bash", {"command": "sed -i 's/a/b/' x.py"}, True),
        ("execute_bash", {"command": "echo hi >> notes.txt"}, True),
        ("execute_bash", {"command": "pip install requests"}, True),
        ("execute_bash", {"command": "ls -R /workspace"}, False),
        ("execute_bash", {"command": "python x.py 2>&1 | tail"}, False),
        ("execute_bash", {"command": "grep -n 'a > b' x.py > /dev/null"}, False),
        ("execute_bash", {"command": "python -c 'print(1 > 0)'"}, False),
        ("book_reservation", {"user_id": "mia_li_3668"}, True),
        ("cancel_reservation", {"reservation_id": "OI5L9G"}, True),
        ("update_reservation_baggages", {"reservation_id": "OI5L9G"}, True),
        ("writeFile", {"path": "x"}, True),
        ("get_reservation_details", {"reservation_id": "OI5L9G"}, False),
        ("search_direct_flight", {"origin": "DEN"}, False),
    ],
)
def test_what_changes_something(name: str, args: dict[str, Any], changes: bool) -> None:
    assert _artifacts([_call(name, args)])[0].changes is changes


def test_changes_sticks_once_any_call_changed() -> None:
    messages: list[BaseMessage] = [
        _call("str_replace_editor", {"command": "create", "path": "/x.py"}, "c1"),
        _call("str_replace_editor", {"command": "view", "path": "/x.py"}, "c2"),
    ]
    (artifact,) = _artifacts(messages)
    assert (artifact.calls, artifact.changes) == (2, True)


def test_an_ai_message_without_id_is_named_by_position() -> None:
    assert _artifacts([HumanMessage("x"), _call("t", {"q": "a"})])[0].message_id == "#1"


# The real traces (skipped when the shared data is absent).


def _positional_outcomes(run: list[BaseMessage]) -> dict[tuple[int, str], str]:
    """Each call's outcome by (message index, tool), pairing results by position as the trace's
    order says (a result answers the AI message right before it), never by id alone."""
    outcomes: dict[tuple[int, str], str] = {}
    for i, message in enumerate(run):
        if not isinstance(message, AIMessage):
            continue
        results = {}
        for later in run[i + 1 :]:
            if not isinstance(later, ToolMessage):
                break
            results[later.tool_call_id] = later
        for call in message.tool_calls:
            result = results.get(call["id"] or "")
            if result is None:
                outcomes[(i, call["name"])] = "none"
            else:
                failed = str(result.content).startswith("Error")
                outcomes[(i, call["name"])] = "error" if failed else "ok"
    return outcomes


def test_tau_bench_reused_ids_pair_as_the_positions_say() -> None:
    checked = 0
    for run in load_tau_bench_airline():
        ids = [call["id"] for m in run if isinstance(m, AIMessage) for call in m.tool_calls]
        if len(ids) == len(set(ids)):
            continue
        by_position = _positional_outcomes(run)
        for artifact in find_artifacts(run, range(len(run))):
            assert artifact.outcome == by_position[(artifact.position, artifact.tool)], artifact
            checked += 1
    assert checked > 400  # 49 runs reuse an id, for a later and different call


def test_tau_bench_run_with_failed_updates() -> None:
    run = load_tau_bench_airline()[3]
    found = {(a.tool, a.target): a for a in find_artifacts(run, range(len(run)))}
    update = found[("update_reservation_flights", "OBUT9V")]
    assert (update.calls, update.outcome, update.changes) == (6, "ok", True)  # 5 failed first
    assert found[("get_reservation_details", "AQLBTL")].outcome == "ok"
    assert found[("get_user_details", "sofia_kim_7287")].changes is False
    first_failure = next(i for i, m in enumerate(run) if str(m.content).startswith("Error"))
    early = {(a.tool, a.target): a for a in find_artifacts(run, range(first_failure + 1))}
    assert early[("update_reservation_flights", "OBUT9V")].outcome == "error"


def test_swe_gym_editor_and_shell_artifacts() -> None:
    runs = load_swe_gym()
    first = runs[0]
    error_at = next(
        i for i, m in enumerate(first) if str(m.content).startswith("OBSERVATION:\nERROR:")
    )
    (viewed,) = find_artifacts(first, range(error_at + 1))
    assert (viewed.tool, viewed.outcome, viewed.changes) == ("str_replace_editor", "error", False)
    everything = [a for run in runs for a in find_artifacts(run, range(len(run)))]
    created = [a for a in everything if a.target.endswith("/reproduce_error.py") and a.changes]
    assert created and all(a.tool == "str_replace_editor" for a in created)
    assert any(a.tool == "execute_bash" and a.outcome == "error" for a in everything)
    assert all(a.outcome == "none" for a in everything if a.tool == "finish")
    assert not any(a.changes for a in everything if a.tool == "execute_bash")
