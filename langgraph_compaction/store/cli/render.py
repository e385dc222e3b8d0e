"""``inspect``'s report as text for people, no line wider than a 100-column terminal.

Without ``--thread``: one table row per thread (long ids cut in the middle, ``--json`` has
them whole; a revoked newest version says so), a line per thread with failures, calibration,
pinned messages or a pending compaction request, then a second table of what each thread's
summary calls cost (``n/a`` where no version reported a count: unknown is never shown as 0).
With ``--thread``: a block per stored version (its kind, ``edited`` for a person's text, and
``REVOKED`` on a line of its own when withdrawn), its figures and usage on two lines, what the
integrity check found on a third (none when no check ran) and a preview of its text, or, with
``--full``, the whole text.
Without ``--thread``, ``--full`` prints each thread's newest summary whole.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from itertools import groupby
from typing import Any

__all__ = ["WIDTH", "cut_middle", "fit_widths", "render_table", "render_text", "wrap"]

WIDTH = 100
"""Columns of the terminal every line fits."""
_INDENT = "    "
_CUT = "…"
_UNKNOWN = "n/a"
"""A usage count no version reported."""
_EMPTY = ("-", _UNKNOWN)
"""Cells that leave a column numeric."""
_PREVIEW = 80
"""Characters of ``summary_preview`` in a report (``load_report``)."""


def wrap(text: str, width: int = WIDTH, indent: str = "") -> list[str]:
    """``text`` as lines of at most ``width`` columns, its own line breaks kept.

    Words longer than a line (a URL, a path) are broken, so no line ever exceeds ``width``.
    """
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines += textwrap.wrap(
            paragraph,
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            replace_whitespace=False,
            drop_whitespace=True,
        ) or [indent.rstrip()]
    return lines


def cut_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its head and tail kept around ``…``."""
    if len(text) <= width:
        return text
    head = width // 2
    return text[:head] + _CUT + text[len(text) - (width - 1 - head) :]


def fit_widths(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, shrink: Sequence[int]
) -> list[int]:
    """Each column's width: its widest cell, less what the ``shrink`` columns give up to fit.

    The widest ``shrink`` column gives first, down to its header's width (at least 8).
    """
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    while excess > 0 and shrink:
        column = max(shrink, key=lambda i: widths[i])
        floor = max(len(headers[column]), 8)
        if widths[column] <= floor:
            break
        step = min(excess, widths[column] - floor)
        widths[column] -= step
        excess -= step
    return widths


def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int = WIDTH,
    shrink: Sequence[int] = (),
) -> str:
    """Columns aligned to their widest cell, numbers right-aligned, the line within ``width``.

    When the rows are wider, the cells of the ``shrink`` columns are cut in the middle.
    """
    widths = fit_widths(headers, rows, width, shrink)
    rows = [[cut_middle(c, w) for c, w in zip(r, widths, strict=True)] for r in rows]
    # A column is numeric when every filled cell ("-" and "n/a" are empty) is a number.
    numeric = [
        any(r[i] not in _EMPTY for r in rows)
        and all(r[i] in _EMPTY or _is_number(r[i]) for r in rows)
        for i in range(len(headers))
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if num else c.ljust(w)
            for c, w, num in zip(cells, widths, numeric, strict=True)
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def _is_number(cell: str) -> bool:
    return cell.replace(",", "").replace(".", "", 1).replace("%", "").isdigit()


def _stamp(iso: str | None, seconds: bool = True) -> str:
    return "-" if iso is None else iso.replace("T", " ")[: 19 if seconds else 16]


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:.3f}"


def _thread_name(entry: dict[str, Any]) -> str:
    return json.dumps(entry["thread_id"]) if entry["thread_id"] == "" else entry["thread_id"]


def _parent(entry: dict[str, Any]) -> str:
    if entry.get("parent_id") is None:
        return "-"
    if entry.get("parent_version") is None:  # deleted by retention, version not recorded
        return f"gone:{entry['parent_id'][:8]}"
    return f"v{entry['parent_version']}" + (" (gone)" if entry.get("parent_gone") else "")


_THREAD_HEADERS = (
    "THREAD", "NAMESPACE", "VERSIONS", "LATEST", "TOKENS", "CREATED (UTC)", "FAILURES",
)  # fmt: skip
_SHRINK = (0, 1)
"""The thread and namespace columns give up width when a table is too wide."""


def _thread_cells(e: dict[str, Any]) -> list[str]:
    summarized = "version" in e  # False for a thread that only has failures or calibration
    return [
        _thread_name(e),
        e["namespace"],
        str(e["versions"]),
        (f"v{e['version']}" + (" revoked" if e.get("revoked_at") else "")) if summarized else "-",
        _num(e.get("summary_tokens")),
        _stamp(e.get("created_at"), seconds=False),
        _num(e.get("consecutive_failures", 0)),
    ]


_USAGE_HEADERS = ("THREAD", "NAMESPACE", "INPUT", "OUTPUT", "CACHE READ", "REPORTED BY")
_USAGE_TITLE = (
    "Summary calls' tokens, summed over each thread's stored versions (n/a: none reported):"
)


def _count(value: int | None) -> str:
    return _UNKNOWN if value is None else f"{value:,}"


def _usage_cells(e: dict[str, Any]) -> list[str]:
    u = e["summary_usage"]
    counts = (u["input_tokens"], u["output_tokens"], u["cache_read_tokens"])
    reported = f"{u['versions_reported']} of {e['versions']} version(s)"
    return [_thread_name(e), e["namespace"], *map(_count, counts), reported]


def _usage_table(entries: Sequence[dict[str, Any]]) -> list[str]:
    """The usage table of the threads with summaries; nothing before schema 6."""
    rows = [_usage_cells(e) for e in entries if e["versions"] and "summary_usage" in e]
    if not rows:
        return []
    return ["", _USAGE_TITLE, render_table(_USAGE_HEADERS, rows, shrink=_SHRINK)]


def _version_usage(v: dict[str, Any]) -> str:
    """``usage 1,200 in, 300 out, 0 cache-read``; ``usage n/a`` when nothing was reported
    (an edit, a model that reports no usage, a row older than schema 6)."""
    counts = [v.get(name) for name in ("input_tokens", "output_tokens", "cache_read_tokens")]
    if all(count is None for count in counts):
        return f"usage {_UNKNOWN}"
    labels = ("in", "out", "cache-read")
    cells = zip(counts, labels, strict=True)
    return "usage " + ", ".join(f"{_count(count)} {label}" for count, label in cells)


_INTEGRITY = (
    "integrity_identifiers", "integrity_kept", "integrity_appended", "integrity_dropped",
    "integrity_artifacts", "integrity_repaired",
)  # fmt: skip


def _version_integrity(v: dict[str, Any]) -> list[str]:
    """``integrity  ids 12/15 kept  ledger +3 -1  artifacts 4  repaired no``; nothing when no
    check ran (a row older than schema 7, the check off, an edit), ``-`` for one NULL."""
    found, kept, appended, dropped, artifacts, repaired = (v.get(k) for k in _INTEGRITY)
    if all(value is None for value in (found, kept, appended, dropped, artifacts, repaired)):
        return []
    figures = (
        f"integrity  ids {_num(kept)}/{_num(found)} kept  "
        f"ledger {_signed('+', appended)} {_signed('-', dropped)}  artifacts {_num(artifacts)}  "
        f"repaired {'-' if repaired is None else 'yes' if repaired else 'no'}"
    )
    return wrap(figures, indent=_INDENT)


def _signed(sign: str, count: int | None) -> str:
    return "-" if count is None else f"{sign}{count:,}"


def _thread_notes(e: dict[str, Any]) -> list[str]:
    """Calibration and the last failure of a thread, when it has them, wrapped."""
    parts = []
    if e.get("pinned"):
        parts.append(f"{e['pinned']} pinned message(s)")
    if e.get("requested_at"):
        asked = f"compaction requested at {_stamp(e['requested_at'])} UTC"
        instruction = e.get("request_instruction")
        parts.append(asked + (f" ({' '.join(instruction.split())})" if instruction else ""))
    if e.get("calibration") is not None:
        parts.append(f"calibration {_num(e['calibration'])}")
    if e.get("last_error"):
        failures = e.get("consecutive_failures") or 0
        when = _stamp(e.get("last_failure_at"))
        parts.append(
            f"{failures} consecutive failure(s), the last at {when} UTC: {e['last_error']}"
        )
    if not parts:
        return []
    return wrap(f"{_thread_name(e)} [{e['namespace']}]: " + "; ".join(parts), indent="  ")


def _version_block(v: dict[str, Any], full: bool) -> list[str]:
    """A stored version: figures on two lines, then a preview of its text or the whole text."""
    source = v.get("source_tokens") or 0
    ratio = f" ({v['summary_tokens'] / source:.1%})" if source else ""
    kind = v["kind"] if v.get("parent_id") is None else f"{v['kind']} of {_parent(v)}"
    first = (
        f"v{v['version']}  id {v['id'][:8]}  {kind}  covers {_num(v['covered_messages'])} "
        f"messages  {_num(v['summary_tokens'])} tokens from {_num(v['source_tokens'])}{ratio}"
    )
    second = f"created {_stamp(v['created_at'])} UTC  model {v.get('model') or '-'}"
    if "input_tokens" in v:  # schema 6
        second += f"  {_version_usage(v)}"
    lines = [*wrap(first), *wrap(second, indent=_INDENT), *_version_integrity(v)]
    if v.get("revoked_at"):  # rare, and the second line is full with the usage
        lines.append(f"{_INDENT}REVOKED {_stamp(v['revoked_at'])} UTC")
    if full:
        return lines + wrap(v["summary"], indent=_INDENT)
    preview = v["summary_preview"]
    if len(preview) >= _PREVIEW:  # the report cuts previews there
        preview += _CUT
    return [*lines, _INDENT + cut_middle(preview, WIDTH - len(_INDENT))]


def _newest_summaries(entries: Sequence[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for e in entries:
        if "summary" in e:
            title = f"{_thread_name(e)} [{e['namespace']}] v{e['version']}, newest summary:"
            out += ["", *wrap(title), *wrap(e["summary"], indent=_INDENT)]
    return out


def render_text(report: dict[str, Any], *, full: bool = False) -> str:
    """The report for people; ``full`` prints whole summaries instead of previews."""
    entries = report["threads"]
    total = sum(e["versions"] for e in entries)
    head = (
        f"store {report['url']}  schema_version {report['schema_version'] or '-'}  "
        f"{len(entries)} thread(s), {total} summary version(s)"
    )
    out = [*wrap(head), ""]
    if not entries:
        out.append("(no threads)")
    else:
        rows = [_thread_cells(e) for e in entries]
        out.append(render_table(_THREAD_HEADERS, rows, shrink=_SHRINK))
        widths = fit_widths(_THREAD_HEADERS, rows, WIDTH, _SHRINK)
        if any(len(r[i]) > widths[i] for r in rows for i in _SHRINK):
            out.append("(long names are cut in the middle to fit; --json prints them whole)")
        notes = [line for e in entries for line in _thread_notes(e)]
        out += ["", *notes] if notes else []
        out += _usage_table(entries)
        if full and "versions" not in report:
            out += _newest_summaries(entries)
    if "versions" in report:
        versions = report["versions"]
        if not versions:
            out += ["", "(no summaries)"]
        for namespace, group in groupby(versions, key=lambda v: v["namespace"]):
            listed = list(group)
            title = f"thread {_thread_name(listed[0])}, namespace {namespace}: "
            out += ["", *wrap(title + f"{len(listed)} version(s), oldest first")]
            for n, v in enumerate(listed):
                out += ([""] if full and n else []) + _version_block(v, full)
    return "\n".join(out)
