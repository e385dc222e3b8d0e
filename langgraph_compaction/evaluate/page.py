"""The ``--html`` page of ``python -m langgraph_compaction.evaluate``: one static file a team can
attach to a review or open offline, so it carries its own CSS and its plots as inline SVG and
references nothing on the network.

The plots are drawn on a ``matplotlib.figure.Figure`` made directly, never through pyplot, so a
caller's pyplot figures and backend stay as they were.
"""

from __future__ import annotations

import html
import io
import json
import re
from collections.abc import Iterable, Sequence
from typing import Literal

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, StrMethodFormatter

from langgraph_compaction.evaluate.formatting import dollars, ratio
from langgraph_compaction.evaluate.records import (
    PROBE_KINDS,
    CallFigures,
    ConversationResult,
    Evaluation,
    Place,
)

__all__ = ["render_page"]

PLACES: tuple[Place, ...] = ("model input", "summary", "recall", "lost")
MARKER = "compaction-marker"
"""Class (and id prefix) of each compaction's vertical line in a plot."""
COMPACTION_ROW = "compaction-row"
"""Class of each row of an integrity table: one per call that stored a new summary."""
_INVALID = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_SVG_ID = re.compile(r'(\bid="|xlink:href="#|href="#|url\(#)([^")]+)')
CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1rem}
th,td{border:1px solid #ccc;padding:.2rem .5rem;vertical-align:top;text-align:start}
td.n{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f6f6f6;padding:.5rem;overflow:auto}
section{border-top:2px solid #888;margin-top:2rem}
svg{max-width:100%;height:auto}
.right{color:#060}.wrong{color:#a00}
"""


def clean(text: object) -> str:
    """Text a browser and UTF-8 take: NUL dropped, lone surrogates and other control characters
    (bar tab and newlines) as U+FFFD, then HTML-escaped."""
    plain = str(text).replace("\0", "")
    return html.escape(_INVALID.sub("\ufffd", plain))


def number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def table(
    head: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    text: frozenset[int] = frozenset({0}),
    row_class: str = "",
) -> str:
    """Cells come escaped. Columns in ``text`` hold words in any script (``dir="auto"``), the
    others figures (right-aligned)."""

    def cell(column: int, value: str) -> str:
        kind = ' dir="auto"' if column in text else ' class="n"'
        return f"<td{kind}>{value}</td>"

    tr = f'<tr class="{row_class}">' if row_class else "<tr>"
    header = "".join(f"<th>{h}</th>" for h in head)
    body = "".join(tr + "".join(cell(*c) for c in enumerate(row)) + "</tr>\n" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>\n{body}</tbody></table>\n"


def compaction_calls(result: ConversationResult) -> list[int]:
    """Indexes of the calls that stored a new summary, by their figures or their records."""
    marked = {c.index for c in result.calls if c.action == "summarized"}
    for compaction in result.compactions:
        inside = 0 <= compaction.call < len(result.calls)
        marked.add(result.calls[compaction.call].index if inside else compaction.call)
    return sorted(marked)


def plot_svg(number_: int, result: ConversationResult) -> str:
    """Tokens per call with and without compaction, a dashed line at each compaction; ids are
    prefixed per plot, since several SVGs share one HTML document."""
    figure = Figure(figsize=(9, 3.2), layout="constrained")
    axes = figure.add_subplot()
    x = [c.index for c in result.calls]
    axes.plot(x, [c.tokens_without for c in result.calls], label="without compaction", marker=".")
    axes.plot(x, [c.tokens_with for c in result.calls], label="with compaction", marker=".")
    for n, call in enumerate(compaction_calls(result)):
        line = axes.axvline(call, color="0.45", linestyle="--", linewidth=1)
        line.set_gid(f"{MARKER}-{call}")
        line.set_label("compaction" if n == 0 else "_nolegend_")
    axes.set_xlabel("call")
    axes.set_ylabel("input tokens")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    axes.set_ylim(bottom=0)
    axes.legend(loc="upper left")
    buffer = io.StringIO()
    # text as <text> (no per-glyph ids that would repeat in every plot), no dated metadata
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"plot-{number_}"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    figure.clear()
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.DOTALL)
    svg = svg.replace(f'id="{MARKER}-', f'class="{MARKER}" id="{MARKER}-')
    return _SVG_ID.sub(lambda m: f"{m[1]}c{number_}-{m[2]}", svg)


def settings_section(evaluation: Evaluation) -> str:
    settings = evaluation.settings
    labels = (
        ("model", "Summarizer"),
        ("agent_model", "Agent model (probes)"),
        ("judge", "Judge"),
        ("prices", "Priced"),
    )
    rows = [(label, clean(settings[key])) for key, label in labels if settings.get(key)]
    config = json.dumps(settings.get("config", {}), indent=2, ensure_ascii=False, default=str)
    return (
        "<h2>Settings</h2>\n"
        + table(("setting", "value"), rows, text=frozenset({0, 1}))
        + f'<h3>Configuration</h3>\n<pre dir="auto">{clean(config)}</pre>\n'
    )


def overview(results: Sequence[ConversationResult]) -> list[str]:
    """One row of figures: for one conversation, or summed over all (the peak is the largest)."""
    tokens_with = sum(r.tokens_with for r in results)
    tokens_without = sum(r.tokens_without for r in results)
    probes = sum(len(r.probes) for r in results)
    right_with = sum(p.right_compacted for r in results for p in r.probes)
    right_without = sum(p.right_full for r in results for p in r.probes)

    def survived(kind: Literal["identifier", "artifact"]) -> str:
        counts = {p: sum(r.places(kind)[p] for r in results) for p in PLACES}
        if not sum(counts.values()):
            return "-"
        kept = counts["model input"] + counts["summary"]
        return f"{kept}/{counts['recall']}/{counts['lost']} of {sum(counts.values())}"

    return [
        number(sum(len(r.calls) for r in results)),
        number(tokens_with),
        number(tokens_without),
        ratio(tokens_with, tokens_without),
        number(max((r.peak_with for r in results), default=0)),
        number(max((r.peak_without for r in results), default=0)),
        number(sum(r.summary_calls for r in results)),
        dollars(sum(r.bill_with.total for r in results)),
        dollars(sum(r.bill_without.total for r in results)),
        survived("identifier"),
        survived("artifact"),
        number(sum(r.pair_violations for r in results)),
        f"{right_with}/{probes}, {right_without}/{probes}" if probes else "-",
    ]


OVERVIEW_HEAD = (
    "conversation", "calls", "tokens with", "tokens without", "ratio", "peak with",
    "peak without", "summary calls", "bill with", "bill without",
    "identifiers kept/recall/lost", "artifacts kept/recall/lost", "pair violations",
    "probes right with, without",
)  # fmt: skip


def integrity_rows(result: ConversationResult) -> list[list[str]]:
    by_call = {c.call: c for c in result.compactions}
    rows = []
    for position, call in enumerate(result.calls):
        record = by_call.get(position)
        if call.action != "summarized" and record is None:
            continue
        version = call.summary_version if record is None else record.version
        evicted = "-" if record is None else f"{record.start}\u2013{record.end}"
        rows.append(
            [
                number(call.index),
                number(version),
                evicted,
                *(number(v) for v in integrity_of(call)),
            ]
        )
    return rows


def integrity_of(call: CallFigures) -> tuple[int | None, ...]:
    return (
        call.integrity_identifiers,
        call.integrity_kept,
        call.integrity_appended,
        call.integrity_dropped,
        call.integrity_artifacts,
    )


def items_section(result: ConversationResult) -> str:
    ids, arts = result.places("identifier"), result.places("artifact")
    counts = table(
        ("place", "identifiers", "artifacts"),
        [(p, number(ids[p]), number(arts[p])) for p in PLACES],
    )
    lost = [f for f in result.fates if f.place == "lost"]
    listed = "".join(
        f'<li>{clean(f.kind)}: <code dir="auto">{clean(f.text)}</code></li>\n' for f in lost
    )
    every = table(
        ("kind", "item", "place"),
        [(clean(f.kind), clean(f.text), clean(f.place)) for f in result.fates],
        text=frozenset({0, 1, 2}),
    )
    return (
        "<h3>Where the items are</h3>\n"
        + counts
        + (f"<p>Lost:</p>\n<ul>\n{listed}</ul>\n" if lost else "<p>Nothing lost.</p>\n")
        + (f"<details><summary>Every item</summary>\n{every}</details>\n" if result.fates else "")
    )


def probes_section(result: ConversationResult) -> str:
    unprobed = "".join(f'<li dir="auto">{clean(why)}</li>\n' for why in result.unprobed)
    note = f"<p>Not probed (the judge failed):</p>\n<ul>\n{unprobed}</ul>\n" if unprobed else ""
    if not result.probes:
        return f"<h3>Probes</h3>\n{note}" if note else ""
    order = {k: i for i, k in enumerate(PROBE_KINDS)}
    grade = {True: '<span class="right">right</span>', False: '<span class="wrong">wrong</span>'}
    rows = [
        (
            number(p.call),
            clean(p.kind),
            clean(p.question),
            clean(p.expected),
            clean(p.answer_compacted),
            grade[p.right_compacted],
            clean(p.comment_compacted),
            clean(p.answer_full),
            grade[p.right_full],
            clean(p.comment_full),
        )
        for p in sorted(result.probes, key=lambda p: (p.call, order.get(p.kind, 9)))
    ]
    head = (
        "call", "kind", "question", "expected", "answer with compaction", "grade", "comment",
        "answer without", "grade", "comment",
    )  # fmt: skip
    return "<h3>Probes</h3>\n" + note + table(head, rows, text=frozenset(range(1, 10)))


def conversation_section(number_: int, result: ConversationResult) -> str:
    parts = [f'<section>\n<h2 dir="auto">{clean(result.name)}</h2>\n']
    if result.calls:
        parts.append(f'<figure class="plot">{plot_svg(number_, result)}</figure>\n')
    else:
        parts.append("<p>No model call.</p>\n")
    errors = [c for c in result.calls if c.error]
    if errors:
        items = "".join(f'<li dir="auto">call {c.index}: {clean(c.error)}</li>\n' for c in errors)
        parts.append(f"<h3>Errors</h3>\n<ul>\n{items}</ul>\n")
    head = ("call", "version", "evicted", "identifiers", "kept", "appended", "dropped", "artifacts")
    rows = integrity_rows(result)
    parts.append("<h3>Integrity per compaction</h3>\n")
    parts.append(
        table(head, rows, text=frozenset(), row_class=COMPACTION_ROW)
        if rows
        else "<p>No compaction.</p>\n"
    )
    bills = [
        (
            label,
            dollars(getattr(result.bill_with, part)),
            dollars(getattr(result.bill_without, part)),
        )
        for label, part in (("agent", "agent"), ("summarizer", "summarizer"), ("total", "total"))
    ]
    parts.append("<h3>Bill</h3>\n" + table(("", "with compaction", "without"), bills))
    parts.append(items_section(result))
    parts.append(probes_section(result))
    parts.append("</section>\n")
    return "".join(parts)


def render_page(evaluation: Evaluation) -> str:
    """The whole evaluation as one self-contained HTML document."""
    results = evaluation.results
    rows = [[clean(r.name), *overview([r])] for r in results]
    rows.append(["total", *overview(results)])
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>Compaction evaluation</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        "<h1>Compaction evaluation</h1>\n"
        + settings_section(evaluation)
        + "<h2>Totals</h2>\n"
        + table(OVERVIEW_HEAD, rows)
        + "<p>kept = in the last model input or the summary; recall = found only by total "
        "recall; the total's peak is the largest of the conversations.</p>\n"
        + "".join(conversation_section(i, r) for i, r in enumerate(results))
        + "</body>\n</html>\n"
    )
