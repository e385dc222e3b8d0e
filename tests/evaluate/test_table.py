"""The terminal table: within the width at any width, every figure where its header says, the
total row the sum of the records (the peak the largest), probes "-" where none ran.

Rows are read back by splitting on the two-space gap, table after table, so a column dropped,
repeated or moved between the stacked tables shows up as a wrong figure.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata

import pytest
from evaluation_samples import ARABIC_NAME, CHINESE_NAME, RUSSIAN_NAME, sample_evaluation

from langgraph_compaction.evaluate.records import ConversationResult, Evaluation, Place
from langgraph_compaction.evaluate.table import render_table

BILLS = {  # four significant figures below $100, cents above
    CHINESE_NAME: ("$0.8535", "$1.988"),
    ARABIC_NAME: ("$0.004321", "$0.004321"),
    RUSSIAN_NAME: ("$124.96", "$210.00"),
    "empty.jsonl:1": ("$0", "$0"),
    "total": ("$125.81", "$211.99"),
}


def terminal_cells(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def survived(results: list[ConversationResult], kind: str) -> str:
    fates = [f for r in results for f in r.fates if f.kind == kind]
    if not fates:
        return "-"

    def count(*places: Place) -> int:
        return sum(f.place in places for f in fates)

    return f"{count('model input', 'summary')}/{count('recall')}/{count('lost')} of {len(fates)}"


def expected_cells(results: list[ConversationResult], name: str) -> list[str]:
    """The row's figures in the order of the columns, computed from the records alone."""
    calls = [c for r in results for c in r.calls]
    sent = sum(c.tokens_with for c in calls)
    full = sum(c.tokens_without for c in calls)
    probes = [p for r in results for p in r.probes]
    right = (sum(p.right_compacted for p in probes), sum(p.right_full for p in probes))
    return [
        f"{len(calls):,}",
        f"{sent:,}",
        f"{full:,}",
        f"{sent / full:.2f}x" if full else "-",
        f"{max((c.tokens_with for c in calls), default=0):,}",
        f"{max((c.tokens_without for c in calls), default=0):,}",
        f"{sum(c.summary_calls for c in calls):,}",
        f"{sum(c.summary_input_tokens for c in calls):,}",
        f"{sum(c.summary_output_tokens for c in calls):,}",
        *BILLS.get(name, ("?", "?")),
        survived(results, "identifier"),
        survived(results, "artifact"),
        f"{sum(c.pair_violations for c in calls):,}",
        f"{right[0]}/{len(probes)}, {right[1]}/{len(probes)}" if probes else "-",
    ]


def read_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """Each row's name (from the first table) and its cells across all the stacked tables."""
    blocks = text.split("\n\n")[:-1]  # the last block is the note on prices and models
    names: list[str] = []
    cells: list[list[str]] = []
    for number, block in enumerate(blocks):
        rows = [line for line in block.splitlines()[3:] if not set(line) <= {"-"}]
        for i, row in enumerate(rows):
            name, *figures = re.split(r" {2,}", row)
            if number == 0:
                names.append(name)
                cells.append([])
            cells[i].extend(figures)
    return names, cells


@pytest.mark.parametrize("width", [100, 60, 250])
def test_every_row_reads_back_as_the_records_sum(width: int) -> None:
    evaluation = sample_evaluation()
    text = render_table(evaluation, width=width)
    names, cells = read_rows(text)
    results = list(evaluation.results)
    assert names[-1] == "total"
    assert cells[-1] == expected_cells(results, "total")
    for result, name, row in zip(results, names[:-1], cells[:-1], strict=True):
        assert row == expected_cells([result], result.name)
        assert name == result.name or "…" in name
    titles = [block.splitlines()[0] for block in text.split("\n\n")[:-1]]
    assert (
        titles
        == {
            250: ["Tokens / Cost / What survives"],
            100: ["Tokens", "Cost / What survives"],
            60: [
                "Tokens",
                "Tokens (continued)",
                "Cost",
                "What survives",
                "What survives (continued)",
            ],
        }[width]
    )


@pytest.mark.parametrize("width", [100, 60])
def test_lines_fit_the_width_and_long_names_are_cut_in_the_middle(width: int) -> None:
    text = render_table(sample_evaluation(), width=width)
    for line in text.splitlines():
        assert len(line) <= width, line
        assert terminal_cells(line) <= width, line  # Chinese characters take two cells
    names, _ = read_rows(text)
    for name, full in zip(names, (CHINESE_NAME, ARABIC_NAME, RUSSIAN_NAME), strict=False):
        head, tail = name.split("…")
        assert full.startswith(head) and full.endswith(tail)
        assert len(head) > 3 and len(tail) > 3
    assert "empty.jsonl:1" in names  # a short name stays whole
    assert "\x1b" not in text


def test_ratio_and_peaks_of_the_total() -> None:
    text = render_table(sample_evaluation())
    total = next(line for line in text.splitlines() if line.startswith("total"))
    assert "153,400  330,400  0.46x  27,000   61,000" in total  # peak: the largest, not a sum


def test_probes_are_a_dash_where_none_ran() -> None:
    evaluation = sample_evaluation()
    without = Evaluation(
        settings=evaluation.settings,
        results=tuple(dataclasses.replace(r, probes=()) for r in evaluation.results),
    )
    _, cells = read_rows(render_table(without))
    assert [row[-1] for row in cells] == ["-"] * 5
    _, cells = read_rows(render_table(evaluation))
    assert [row[-1] for row in cells] == ["2/4, 4/4", "-", "-", "-", "2/4, 4/4"]


def test_the_note_says_how_it_was_priced_and_which_models_ran() -> None:
    evaluation = sample_evaluation()
    note = render_table(evaluation).split("\n\n")[-1]
    assert note.startswith(f"Priced: {evaluation.settings['prices']}\n")
    assert "Summarizer: local:SmolLM2-135M-Instruct; agent: openai:gpt-4o-mini" in note


def test_control_characters_and_lone_surrogates_in_a_name_stay_on_one_line() -> None:
    evaluation = sample_evaluation()
    odd = dataclasses.replace(evaluation.results[1], name="bad\x00name\nwith\ud800 тест")
    text = render_table(Evaluation(evaluation.settings, (odd,)))
    text.encode("utf-8")  # no lone surrogate left
    names, cells = read_rows(text)
    assert names == ["badname with\ufffd тест", "total"]
    assert cells[0] == cells[1]


def test_no_conversation() -> None:
    text = render_table(Evaluation(sample_evaluation().settings, ()))
    assert text.startswith("No conversations.\n\nPriced: ")
