"""The terminal table of ``python -m langgraph_compaction.evaluate``: one row per conversation and
a total, in as many stacked tables as the width needs. Plain text without colour codes, because
it goes to CI logs and files as often as to a terminal.
"""

from __future__ import annotations

import re
import textwrap
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from langgraph_compaction.evaluate.formatting import dollars, ratio
from langgraph_compaction.evaluate.records import ConversationResult, Evaluation, Place

__all__ = ["render_table"]

GAP = "  "
MIN_NAME = 12
"""The conversation column never gets narrower than this; columns move to another table first."""
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True)
class Figures:
    """One row: a conversation's figures, or the sum over all of them."""

    name: str
    calls: int
    tokens_with: int
    tokens_without: int
    peak_with: int
    peak_without: int
    summary_calls: int
    summary_input: int
    summary_output: int
    bill_with: float
    bill_without: float
    identifiers: dict[Place, int]
    artifacts: dict[Place, int]
    pair_violations: int
    probes: int
    right_with: int
    right_without: int


@dataclass(frozen=True)
class Column:
    top: str
    bottom: str
    cell: Callable[[Figures], str]


def figures_of(result: ConversationResult) -> Figures:
    return Figures(
        name=result.name,
        calls=len(result.calls),
        tokens_with=result.tokens_with,
        tokens_without=result.tokens_without,
        peak_with=result.peak_with,
        peak_without=result.peak_without,
        summary_calls=result.summary_calls,
        summary_input=sum(c.summary_input_tokens for c in result.calls),
        summary_output=sum(c.summary_output_tokens for c in result.calls),
        bill_with=result.bill_with.total,
        bill_without=result.bill_without.total,
        identifiers=result.places("identifier"),
        artifacts=result.places("artifact"),
        pair_violations=result.pair_violations,
        probes=len(result.probes),
        right_with=sum(p.right_compacted for p in result.probes),
        right_without=sum(p.right_full for p in result.probes),
    )


def total_of(rows: Sequence[Figures]) -> Figures:
    """Sums, except the peak: the largest input any conversation sent."""

    def places(pick: Callable[[Figures], dict[Place, int]]) -> dict[Place, int]:
        keys: tuple[Place, ...] = ("model input", "summary", "recall", "lost")
        return {k: sum(pick(r)[k] for r in rows) for k in keys}

    return Figures(
        name="total",
        calls=sum(r.calls for r in rows),
        tokens_with=sum(r.tokens_with for r in rows),
        tokens_without=sum(r.tokens_without for r in rows),
        peak_with=max((r.peak_with for r in rows), default=0),
        peak_without=max((r.peak_without for r in rows), default=0),
        summary_calls=sum(r.summary_calls for r in rows),
        summary_input=sum(r.summary_input for r in rows),
        summary_output=sum(r.summary_output for r in rows),
        bill_with=sum(r.bill_with for r in rows),
        bill_without=sum(r.bill_without for r in rows),
        identifiers=places(lambda r: r.identifiers),
        artifacts=places(lambda r: r.artifacts),
        pair_violations=sum(r.pair_violations for r in rows),
        probes=sum(r.probes for r in rows),
        right_with=sum(r.right_with for r in rows),
        right_without=sum(r.right_without for r in rows),
    )


def survived(places: dict[Place, int]) -> str:
    """Kept (last model input or summary) / found by recall / lost, of how many."""
    total = sum(places.values())
    if not total:
        return "-"
    kept = places["model input"] + places["summary"]
    return f"{kept}/{places['recall']}/{places['lost']} of {total}"


def probes(row: Figures) -> str:
    """Probes answered right from the compacted input, then from the full history."""
    if not row.probes:
        return "-"
    return f"{row.right_with}/{row.probes}, {row.right_without}/{row.probes}"


GROUPS: tuple[tuple[str, tuple[tuple[Column, ...], ...]], ...] = (
    (
        "Tokens",
        (
            (
                Column("calls", "", lambda f: f"{f.calls:,}"),
                Column("tokens", "with", lambda f: f"{f.tokens_with:,}"),
                Column("tokens", "without", lambda f: f"{f.tokens_without:,}"),
                Column("ratio", "", lambda f: ratio(f.tokens_with, f.tokens_without)),
            ),
            (
                Column("peak", "with", lambda f: f"{f.peak_with:,}"),
                Column("peak", "without", lambda f: f"{f.peak_without:,}"),
            ),
            (
                Column("summary", "calls", lambda f: f"{f.summary_calls:,}"),
                Column("summary", "input", lambda f: f"{f.summary_input:,}"),
                Column("summary", "output", lambda f: f"{f.summary_output:,}"),
            ),
        ),
    ),
    (
        "Cost",
        (
            (
                Column("bill", "with", lambda f: dollars(f.bill_with)),
                Column("bill", "without", lambda f: dollars(f.bill_without)),
            ),
        ),
    ),
    (
        "What survives",
        (
            (Column("identifiers", "kept/recall/lost", lambda f: survived(f.identifiers)),),
            (Column("artifacts", "kept/recall/lost", lambda f: survived(f.artifacts)),),
            (Column("pair", "violations", lambda f: f"{f.pair_violations:,}"),),
            (Column("probes right", "with, without", probes),),
        ),
    ),
)
"""Each group's columns in units kept side by side (with beside without)."""


def printable(text: str) -> str:
    """One line of valid text: control characters become spaces, lone surrogates U+FFFD."""
    return _UNPRINTABLE.sub(
        lambda m: "" if m[0] == "\0" else "\ufffd" if "\ud800" <= m[0] <= "\udfff" else " ", text
    )


def cells(text: str) -> int:
    """Terminal cells: wide East Asian characters take two, combining marks none."""
    return sum(
        0
        if unicodedata.category(ch) in ("Mn", "Me")
        else 2
        if unicodedata.east_asian_width(ch) in ("W", "F")
        else 1
        for ch in text
    )


def cut(text: str, width: int) -> str:
    """``text`` within ``width`` cells, cut in the middle: a name's head and its line number."""
    if cells(text) <= width:
        return text
    if width < 2:
        return "…"[:width]
    tail_room = (width - 1) // 2
    head, tail = "", ""
    for ch in reversed(text):
        if cells(ch + tail) > tail_room:
            break
        tail = ch + tail
    for ch in text:
        if cells(head + ch) > width - 1 - cells(tail):
            break
        head += ch
    return f"{head}…{tail}"


def pad(text: str, width: int, *, right: bool) -> str:
    room = " " * max(0, width - cells(text))
    return room + text if right else text + room


def column_width(column: Column, rows: Sequence[Figures]) -> int:
    return max(cells(column.top), cells(column.bottom), *(cells(column.cell(r)) for r in rows))


def pack(rows: Sequence[Figures], width: int) -> list[tuple[str, list[Column]]]:
    """Columns into tables: a group joins the table above when it fits whole, else gets its own
    tables, a unit of columns (with and without side by side) never split."""
    tables: list[tuple[str, list[Column]]] = []

    def fits(columns: Iterable[Column]) -> bool:
        used = sum(column_width(c, rows) + len(GAP) for c in columns)
        return MIN_NAME + used <= width

    for title, units in GROUPS:
        whole = [c for unit in units for c in unit]
        if tables and fits([*tables[-1][1], *whole]):
            tables[-1] = (f"{tables[-1][0]} / {title}", [*tables[-1][1], *whole])
            continue
        first = len(tables)
        # a unit too wide alone goes column by column
        pieces = [p for u in units for p in ([u] if fits(u) else [(c,) for c in u])]
        for unit in pieces:
            if len(tables) > first and fits([*tables[-1][1], *unit]):
                tables[-1][1].extend(unit)
            else:
                label = title if len(tables) == first else f"{title} (continued)"
                tables.append((label, list(unit)))
    return tables


def render_one(title: str, columns: Sequence[Column], rows: Sequence[Figures], width: int) -> str:
    widths = [column_width(c, rows) for c in columns]
    used = sum(w + len(GAP) for w in widths)
    names = [printable(r.name) for r in rows]
    name_width = max(4, min(max(MIN_NAME, *(cells(n) for n in names)), width - used))
    pairs = list(zip(columns, widths, strict=True))
    lines = [title]
    lines.append(" " * name_width + "".join(GAP + pad(c.top, w, right=True) for c, w in pairs))
    lines.append(
        pad(cut("conversation", name_width), name_width, right=False)
        + "".join(GAP + pad(c.bottom, w, right=True) for c, w in pairs)
    )
    for row, name in zip(rows, names, strict=True):
        if row is rows[-1]:
            lines.append("-" * (name_width + used))
        lines.append(
            pad(cut(name, name_width), name_width, right=False)
            + "".join(GAP + pad(c.cell(row), w, right=True) for c, w in pairs)
        )
    return "\n".join(line.rstrip() for line in lines)


def render_table(evaluation: Evaluation, *, width: int = 100) -> str:
    """The evaluation as plain-text tables no wider than ``width`` cells, then how it was priced
    and which models ran."""
    width = max(width, 40)
    rows = [figures_of(r) for r in evaluation.results]
    blocks: list[str] = []
    if rows:
        rows.append(total_of(rows))
        blocks = [render_one(t, cols, rows, width) for t, cols in pack(rows, width)]
    else:
        blocks = ["No conversations."]
    settings = evaluation.settings
    models = f"Summarizer: {settings.get('model', 'not given')}"
    for key, label in (("agent_model", "agent"), ("judge", "judge")):
        if settings.get(key):
            models += f"; {label}: {settings[key]}"
    notes = [
        f"Priced: {settings.get('prices', 'not given')}",
        models,
        "kept = in the last model input or the summary; recall = found only by total recall; "
        "the total's peak is the largest of the conversations.",
    ]
    wrapped = [textwrap.fill(printable(n), width=width) for n in notes]
    return "\n\n".join(blocks) + "\n\n" + "\n".join(wrapped) + "\n"
