"""The identifier check and the ledger as pure functions (DESIGN 6.13): what is kept, what goes
to the ledger and in which order within its budget, how an update merges the previous trail,
and the items stored with the row."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_compaction.content.artifacts import Artifact
from langgraph_compaction.content.identifiers import Identifier
from langgraph_compaction.summary.integrity import (
    MAX_IDENTIFIER_ITEMS,
    Trail,
    check_summary,
    dump_items,
    load_items,
    merge_trails,
    summary_trail,
    trail_of,
    user_kept_share,
)
from langgraph_compaction.summary.ledger import (
    LEDGER_HEADING,
    artifact_line,
    build_ledger,
    holds,
    identifier_line,
    join_ledger,
    split_ledger,
)


def words(text: str) -> int:
    """A counter that is easy to reason about: one token per whitespace-separated word."""
    return len(text.split())


def ident(text: str, source: str = "assistant", mentions: int = 1, position: int = 0) -> Identifier:
    return Identifier(text, "code", source, f"m{position}", position, mentions)  # type: ignore[arg-type]


def art(
    tool: str,
    target: str,
    *,
    outcome: str = "ok",
    changes: bool = False,
    calls: int = 1,
    position: int = 0,
) -> Artifact:
    return Artifact(tool, target, calls, outcome, changes, f"m{position}", position)  # type: ignore[arg-type]


CONVERSATION = [
    SystemMessage("You are the ops agent. Runbook: https://wiki.example.com/runbook", id="s0"),
    HumanMessage(
        "The nightly job ETL-212 fails at 02:15 UTC; the config is deploy/cron.yaml.", id="h1"
    ),
    AIMessage(
        "",
        id="a2",
        tool_calls=[
            {"name": "edit_file", "args": {"path": "deploy/cron.yaml", "text": "x"}, "id": "c1"}
        ],
    ),
    ToolMessage("Error: permission denied", tool_call_id="c1", status="error", id="t3"),
    AIMessage("I could not edit deploy/cron.yaml; the table holds 68,112 rows.", id="a4"),
]


def test_holds_is_verbatim_and_word_bounded() -> None:
    assert holds("see ETL-212 now", "ETL-212")
    assert not holds("see ETL-2120 now", "ETL-212")
    assert not holds("xETL-212", "ETL-212")
    assert holds("请检查ETL-212的状态", "ETL-212")  # glued to Chinese text
    assert holds("(ETL-212)", "ETL-212")
    assert not holds("etl-212", "ETL-212")  # verbatim: the case counts
    assert not holds("anything", "")


def test_split_and_join_round_trip() -> None:
    text = join_ledger("## Goal\nFix it.", "- ETL-212 (user)")
    assert text == f"## Goal\nFix it.\n\n{LEDGER_HEADING}\n- ETL-212 (user)"
    assert split_ledger(text) == ("## Goal\nFix it.", "- ETL-212 (user)")
    assert split_ledger("no ledger") == ("no ledger", "")
    assert join_ledger("prose", "") == "prose"


def test_the_check_keeps_what_the_prose_holds_and_ledgers_the_rest() -> None:
    trail = trail_of(CONVERSATION, range(1, 5))
    texts = {i.text for i in trail.identifiers}
    assert {"ETL-212", "deploy/cron.yaml"} <= texts
    assert "https://wiki.example.com/runbook" not in texts  # system messages are not read
    checked = check_summary("The job ETL-212 fails nightly.", trail, 400, words)
    report = checked.report
    assert report.identifiers == len(trail.identifiers)
    assert report.kept == 1
    assert report.dropped == 0
    assert report.artifacts == 1
    prose, ledger = split_ledger(checked.text)
    assert prose == "The job ETL-212 fails nightly."
    for identifier in trail.identifiers:
        assert holds(checked.text, identifier.text), identifier
    assert "- edit_file deploy/cron.yaml: error, changed" in ledger
    # the user's path is the failed edit's target: one line, first, as the user's words go
    assert ledger.splitlines()[0] == "- edit_file deploy/cron.yaml: error, changed"
    assert ledger.count("deploy/cron.yaml") == 1


def test_an_identifier_an_artifact_line_states_gets_no_line_of_its_own() -> None:
    ledger = build_ledger(
        [ident("deploy/cron.yaml", "tool_call")],
        [art("edit_file", "deploy/cron.yaml", changes=True)],
        400,
        words,
    )
    assert ledger.text == "- edit_file deploy/cron.yaml: ok, changed"
    assert (ledger.appended, ledger.dropped) == (1, 0)


def test_a_ledger_in_the_reply_is_rebuilt_not_kept() -> None:
    trail = Trail((ident("ETL-212", "user"),))
    echoed = f"Summary.\n\n{LEDGER_HEADING}\n- stale line\n- ETL-212 (user)"
    checked = check_summary(echoed, trail, 400, words)
    assert "stale line" not in checked.text
    assert checked.report.kept == 0  # the echoed ledger is not prose
    assert checked.text.endswith("- ETL-212 (user)")


def test_priority_user_then_changed_or_failed_then_mentions_newest_first() -> None:
    missing = [
        ident("often_used", mentions=9, position=1),
        ident("rare_old", position=2),
        ident("rare_new", position=8),
        ident("USER-1", "user", position=3),
    ]
    artifacts = [
        art("read_file", "a.py", position=4),
        art("bash", "make", outcome="error", position=5),
    ]
    ledger = build_ledger(missing, artifacts, 1000, words)
    lines = ledger.text.splitlines()
    assert lines == [
        identifier_line(missing[3]),
        artifact_line(artifacts[1]),
        identifier_line(missing[0]),
        identifier_line(missing[2]),
        artifact_line(artifacts[0]),  # newer than rare_old, as often mentioned
        identifier_line(missing[1]),
    ]
    assert (ledger.appended, ledger.dropped) == (6, 0)


def test_over_budget_the_rest_is_dropped_and_counted() -> None:
    missing = [ident(f"name_{n}", position=n) for n in range(50)]
    heading = words(LEDGER_HEADING)
    ledger = build_ledger(missing, [], heading + 3 * 10, words)  # 3 words a line: 10 lines
    assert ledger.appended == 10
    assert ledger.dropped == 40
    assert words(LEDGER_HEADING) + sum(map(words, ledger.text.splitlines())) <= heading + 30
    nothing = build_ledger(missing, [art("bash", "ls")], 0, words)
    assert (nothing.text, nothing.appended, nothing.dropped) == ("", 0, 51)


def test_ledger_tokens_zero_keeps_the_check() -> None:
    trail = Trail((ident("ETL-212", "user"), ident("kept_name")))
    checked = check_summary("about kept_name", trail, 0, words)
    assert checked.text == "about kept_name"
    assert (checked.report.kept, checked.report.appended, checked.report.dropped) == (1, 0, 1)
    assert [i.text for i in checked.missing_user] == ["ETL-212"]
    assert user_kept_share(checked, trail) == 0.0


def test_an_update_counts_the_previous_trail_again() -> None:
    """The previous summary's identifiers are checked like new ones: an update that drops
    one gets it in its ledger, so nothing fades over updates."""
    first = Trail(
        (ident("ETL-212", "user", position=1),), (art("edit_file", "a.py", changes=True),)
    )
    newer = Trail(
        (ident("ETL-212", "assistant", position=9), ident("new_name", position=9)),
        (art("edit_file", "a.py", outcome="error", position=9),),
    )
    merged = merge_trails(first, newer)
    (etl, new), (artifact,) = merged.identifiers, merged.artifacts
    assert (etl.text, etl.source, etl.mentions, etl.position) == ("ETL-212", "user", 2, 9)
    assert new.text == "new_name"
    assert (artifact.calls, artifact.outcome, artifact.changes) == (2, "error", True)
    text = "an update that mentions neither"
    for _ in range(3):  # three updates in a row, each dropping everything
        checked = check_summary(text, merged, 400, words)
        merged = merge_trails(load_items(checked.items), Trail())
        text = split_ledger(checked.text)[0] + " again"
        assert holds(checked.text, "ETL-212") and holds(checked.text, "new_name")


def test_items_round_trip_and_unreadable_items_are_skipped() -> None:
    trail = trail_of(CONVERSATION, range(1, 5))
    items = dump_items(trail)
    assert json.loads(items)["v"] == 1
    assert load_items(items) == trail
    assert load_items("not json") == Trail()
    assert load_items('{"v": 99}') == Trail()
    broken = json.dumps(
        {
            "v": 1,
            "identifiers": [
                {"t": 5},
                {"t": "ok_name", "k": "code", "s": "user", "m": "h1", "p": 1, "n": 1},
            ],
            "artifacts": "nope",
        }
    )
    assert [i.text for i in load_items(broken).identifiers] == ["ok_name"]


def test_items_are_bounded_keeping_the_users() -> None:
    many = tuple(ident(f"name_{n}", position=n) for n in range(MAX_IDENTIFIER_ITEMS + 50))
    trail = Trail((*many, ident("USER-7", "user", position=0)))
    kept = load_items(dump_items(trail)).identifiers
    assert len(kept) == MAX_IDENTIFIER_ITEMS
    assert any(i.text == "USER-7" for i in kept)


def test_a_summary_without_items_is_read_from_its_text() -> None:
    trail = summary_trail(f"Fix ETL-212.\n\n{LEDGER_HEADING}\n- deploy/cron.yaml (user)")
    assert {i.text for i in trail.identifiers} >= {"ETL-212", "deploy/cron.yaml"}
    assert all(i.source == "summary" for i in trail.identifiers)


@pytest.mark.parametrize(
    ("prose", "kept"),
    [
        ("任务 ETL-212 在 02:15 UTC 失败。", True),
        ("Задача ETL-212 падает.", True),
        ("المهمة ETL-212 تفشل.", True),
        ("The job fails.", False),
    ],
)
def test_the_check_reads_every_script(prose: str, kept: bool) -> None:
    trail = Trail((ident("ETL-212", "user"),))
    assert (check_summary(prose, trail, 400, words).report.kept == 1) is kept


def test_an_identifier_with_a_run_of_spaces_is_written_as_it_is() -> None:
    quoted = Identifier("git  status --short", "quoted", "user", "m3", 3, 1)
    ledger = build_ledger([quoted], [], 400, words)
    assert ledger.text == "- git  status --short (user)"
    assert (ledger.appended, ledger.dropped) == (1, 0)
