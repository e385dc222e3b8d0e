"""The ``--html`` page: well-formed, self-contained (no network), one inline SVG plot per
conversation with calls and one marker per compaction, user text escaped and in any script,
a NUL byte and a lone surrogate harmless, and a caller's pyplot left alone.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest
from evaluation_samples import (
    ARABIC_NAME,
    CHINESE_NAME,
    HOSTILE,
    RUSSIAN_NAME,
    build_calls,
    sample_evaluation,
)

from langgraph_compaction.evaluate.page import render_page
from langgraph_compaction.evaluate.records import Bill, ConversationResult, Evaluation

VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "col", "area", "base", "source"}


class Reader(HTMLParser):
    """Every tag must close the innermost open one; text remembers if it sits in ``dir=auto``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, dict[str, str | None]]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.problems: list[str] = []
        self.texts: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.open.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1][0] != tag:
            self.problems.append(f"</{tag}> closes {self.open[-1:] or 'nothing'}")
        else:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.texts.append((data, any(a.get("dir") == "auto" for _, a in self.open)))


def read(page: str) -> Reader:
    reader = Reader()
    reader.feed(page)
    reader.close()
    assert reader.problems == []
    assert [tag for tag, _ in reader.open] == []
    return reader


@pytest.fixture(scope="module")
def page() -> str:
    return render_page(sample_evaluation())


def sections(page: str) -> list[str]:
    return page.split("<section>")[1:]


def test_the_page_is_well_formed_utf8_with_one_plot_per_conversation_with_calls(page: str) -> None:
    reader = read(page)
    assert page.startswith("<!DOCTYPE html>")
    assert ("meta", {"charset": "utf-8"}) in reader.tags
    page.encode("utf-8")
    with_calls = [r for r in sample_evaluation().results if r.calls]
    assert len(with_calls) == 3
    assert page.count("<svg") == 3
    assert [part.count("<svg") for part in sections(page)] == [1, 1, 1, 0]
    ids = [a["id"] for _, a in reader.tags if a.get("id")]
    assert len(ids) == len(set(ids)) > 100  # every plot's ids are its own


def test_nothing_is_fetched_from_the_network(page: str) -> None:
    reader = read(page)
    assert not {"script", "link", "img", "iframe", "object", "embed"} & {t for t, _ in reader.tags}
    for tag, attrs in reader.tags:
        for name, value in attrs.items():
            if value and re.search(r"(?i)^\s*(https?:|//)", value):
                assert name.startswith("xmlns"), (tag, name, value)
            if name in ("href", "xlink:href", "src"):
                assert value and value.startswith("#"), (tag, name, value)
    assert "@import" not in page and "url(http" not in page


def test_user_text_is_escaped_and_kept_in_any_script(page: str) -> None:
    assert "<script" not in page.lower()
    assert page.count("&lt;script&gt;") == 3  # a lost identifier (listed twice) and a question
    texts = read(page).texts
    for wanted in (CHINESE_NAME, ARABIC_NAME, RUSSIAN_NAME, "счёт-фактура №4471", HOSTILE):
        assert (wanted, True) in texts or any(wanted in t and auto for t, auto in texts), wanted


def test_nul_and_lone_surrogate_become_harmless(page: str) -> None:
    assert "\x00" not in page
    assert not re.search("[\ud800-\udfff]", page)
    assert "badanswer \ufffd here" in page
    assert "answer garbled \ufffd" in page


def test_each_compaction_is_marked_on_its_plot_and_in_its_integrity_table(page: str) -> None:
    per_section = [
        (part.count('class="compaction-marker"'), part.count('class="compaction-row"'))
        for part in sections(page)
    ]
    assert per_section == [(2, 2), (0, 0), (1, 1), (0, 0)]
    first = sections(page)[0]
    rows = re.findall(r'<tr class="compaction-row">(.*?)</tr>', first)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    # call, version, evicted span, identifiers, kept, appended, dropped, artifacts
    assert cells == [
        ["4", "1", "1\u20137", "14", "9", "4", "0", "3"],
        ["8", "2", "7\u201315", "14", "9", "4", "1", "3"],
    ]


def test_a_summary_without_integrity_shows_dashes() -> None:
    calls = tuple(
        dataclasses.replace(
            c, integrity_identifiers=None, integrity_kept=None, integrity_dropped=None
        )
        for c in build_calls([1_000, 5_000, 9_000], {1: 2_000})
    )
    result = ConversationResult("нет проверки", calls, (), (), Bill(0.01, 0.0), Bill(0.02, 0.0))
    page = render_page(Evaluation(sample_evaluation().settings, (result,)))
    read(page)
    row = re.findall(r'<tr class="compaction-row">(.*?)</tr>', page)
    assert [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in row] == [
        ["1", "1", "-", "-", "-", "4", "-", "3"]
    ]
    assert page.count('class="compaction-marker"') == 1  # from the action alone
    assert "<h3>Probes</h3>" not in page


def test_settings_totals_bills_and_probes_are_on_the_page(page: str) -> None:
    evaluation = sample_evaluation()
    config = json.dumps(evaluation.settings["config"], indent=2, ensure_ascii=False)
    assert config.replace('"', "&quot;") in page
    assert evaluation.settings["prices"] in page
    total = re.search(r"<tr><td dir=\"auto\">total</td>(.*?)</tr>", page)
    assert total is not None
    assert re.findall(r">([^<]*)</td>", total[1])[:4] == ["17", "153,400", "330,400", "0.46x"]
    first = sections(page)[0]
    assert '<td class="n">$0.8123</td><td class="n">$1.988</td>' in first  # agent
    assert '<td class="n">$0.04120</td><td class="n">$0</td>' in first  # summarizer
    assert first.count('<span class="wrong">wrong</span>') == 2
    assert "<h3>Probes</h3>" not in "".join(sections(page)[1:])


@pytest.mark.slow
def test_a_callers_pyplot_is_left_alone(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from evaluation_samples import sample_evaluation
        from langgraph_compaction.evaluate.page import render_page

        render_page(sample_evaluation())
        assert "matplotlib.pyplot" not in sys.modules
        import matplotlib
        import matplotlib.pyplot as plt

        plt.switch_backend("svg")
        plt.plot([1, 2], [3, 4])
        params = dict(matplotlib.rcParams)
        render_page(sample_evaluation())
        assert plt.get_fignums() == [1] and matplotlib.get_backend() == "svg"
        assert dict(matplotlib.rcParams) == params
        print("untouched")
        """
    )
    tests = Path(__file__).parents[1]
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        cwd=tests.parent,
        env={"PYTHONPATH": f"{tests.parent}:{tests}", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.stdout.strip() == "untouched", done.stderr


def test_the_same_evaluation_gives_the_same_page(page: str) -> None:
    """No date and no random ids in the plots: two runs' pages can be diffed."""
    assert render_page(sample_evaluation()) == page


def test_compactions_the_judge_could_not_probe_are_named() -> None:
    calls = build_calls([1_000, 5_000, 9_000], {1: 2_000})
    why = "call 1: LengthFinishReasonError: <cut> at 700 tokens"
    result = ConversationResult(
        "c", calls, (), (), Bill(0.01, 0.0), Bill(0.02, 0.0), unprobed=(why,)
    )
    page = render_page(Evaluation(sample_evaluation().settings, (result,)))
    read(page)
    assert "<h3>Probes</h3>" in page and "Not probed (the judge failed)" in page
    assert "call 1: LengthFinishReasonError: &lt;cut&gt; at 700 tokens" in page
