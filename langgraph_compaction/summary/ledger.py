"""The ledger: what a summary's prose dropped, appended after it within its own budget.

The ledger is a fixed heading (:data:`LEDGER_HEADING`) and one short line per missing
identifier or artifact of the tool trail, written after the prose so that the stored text
holds it (reused byte for byte, readable in a SQLite browser). Over ``ledger_tokens`` lines go
in this order (DESIGN 6.13): identifiers from user messages, artifacts that changed or failed
something, then the rest by how often mentioned, newest first; a line that does not fit is
dropped and counted. An identifier an artifact's line states (its target, or text of a line
written before it) gets no line of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langgraph_compaction.content.artifacts import Artifact
from langgraph_compaction.content.identifiers import Identifier

__all__ = [
    "LEDGER_HEADING",
    "Ledger",
    "artifact_line",
    "build_ledger",
    "holds",
    "identifier_line",
    "join_ledger",
    "split_ledger",
]

LEDGER_HEADING = "## Ledger: identifiers and artifacts, verbatim"
"""The one heading the ledger goes under; the text after it is the ledger."""

_SPLIT = re.compile(rf"(?:^|\n[ \t]*\n?)[ \t]*{re.escape(LEDGER_HEADING)}[ \t]*(?:\n|$)")
_SPACE = re.compile(r"\s+")
_MAX_MISSES = 24
"""Lines tried in a row that did not fit before the rest is counted as dropped unread."""


@dataclass(frozen=True, slots=True)
class Ledger:
    """The ledger's text (empty: nothing to append) and what it wrote and left out."""

    text: str
    appended: int
    dropped: int


def split_ledger(text: str) -> tuple[str, str]:
    """``text`` as its prose and its ledger (``""`` when it has none).

    A model that echoes an earlier ledger in its reply gets it cut off here too: the ledger
    is rebuilt from the stored items, never from prose.
    """
    found = _SPLIT.search(text)
    if found is None:
        return text, ""
    return text[: found.start()].rstrip(), text[found.end() :].strip("\n")


def join_ledger(prose: str, ledger: str) -> str:
    """The stored text: the prose, then the ledger under its heading (when there is one)."""
    return f"{prose.rstrip()}\n\n{LEDGER_HEADING}\n{ledger}" if ledger else prose


def holds(text: str, needle: str) -> bool:
    """Whether ``text`` holds ``needle`` verbatim, not as part of a longer ASCII word.

    Both are folded already. ``ETL-21`` is not held by ``ETL-212``; an identifier glued to CJK
    text is held (CJK characters are not ASCII letters).
    """
    start = text.find(needle) if needle else -1
    if start < 0:
        return False
    head, tail = _word_char(needle[0]), _word_char(needle[-1])
    while start >= 0:
        end = start + len(needle)
        before = start == 0 or not (head and _word_char(text[start - 1]))
        after = end == len(text) or not (tail and _word_char(text[end]))
        if before and after:
            return True
        start = text.find(needle, start + 1)
    return False


def _word_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def identifier_line(identifier: Identifier) -> str:
    """``- ETL-212 (user)``: the identifier as written, and where it came from."""
    source = identifier.source.replace("_", " ")
    text = identifier.text  # verbatim, as the check looks for it; one line, as a ledger is
    if "\n" in text:
        text = _one_line(text)
    return f"- {text} ({source})"


def artifact_line(artifact: Artifact) -> str:
    """``- edit_file deploy/cron.yaml: error, 2 calls``: the tool, its target, the last outcome."""
    target = f" {_one_line(artifact.target)}" if artifact.target else ""
    outcome = {"ok": "ok", "error": "error", "none": "no result"}[artifact.outcome]
    calls = f", {artifact.calls} calls" if artifact.calls > 1 else ""
    wrote = ", changed" if artifact.changes else ""
    return f"- {artifact.tool}{target}: {outcome}{wrote}{calls}"


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


Entry = Identifier | Artifact


def _rank(entry: Entry) -> tuple[int, int, int]:
    """Sort key: user identifiers, then artifacts that changed or failed, then the rest; by
    mentions, then newest first, within each."""
    if isinstance(entry, Identifier):
        group = 0 if entry.source == "user" else 2
        return (group, -entry.mentions, -entry.position)
    group = 1 if entry.changes or entry.outcome == "error" else 2
    return (group, -entry.calls, -entry.position)


def build_ledger(
    missing: Sequence[Identifier],
    artifacts: Sequence[Artifact],
    budget: int,
    tokens: Callable[[str], int],
) -> Ledger:
    """The ledger of ``missing`` identifiers and the ``artifacts``, within ``budget`` tokens.

    ``tokens`` counts one line as the pipeline's counter would, the heading included once.
    With ``budget`` 0 nothing is written and everything is counted as dropped.
    """
    # An identifier that is an artifact's target is stated by the artifact's line, which goes
    # where the weightier of the two would.
    targets = {artifact.target: artifact for artifact in artifacts}
    ranks = {id(artifact): _rank(artifact) for artifact in artifacts}
    for identifier in missing:
        artifact = targets.get(identifier.text)
        if artifact is not None:
            ranks[id(artifact)] = min(ranks[id(artifact)], _rank(identifier))
    own_lines = [identifier for identifier in missing if identifier.text not in targets]
    entries: list[Entry] = sorted(
        [*own_lines, *artifacts],
        key=lambda entry: ranks[id(entry)] if isinstance(entry, Artifact) else _rank(entry),
    )
    if not entries:
        return Ledger("", 0, 0)
    left = budget - tokens(LEDGER_HEADING)
    lines: list[str] = []
    trail = ""  # the artifact lines written: an identifier one of them states needs no line
    stated = misses = 0
    for entry in entries:
        if left <= 0 or misses >= _MAX_MISSES:
            break
        if isinstance(entry, Identifier):
            if holds(trail, entry.text):
                continue
            line = identifier_line(entry)
        else:
            line = artifact_line(entry)
        cost = tokens(line)
        if cost > left:
            misses += 1
            continue
        misses = 0
        left -= cost
        lines.append(line)
        if isinstance(entry, Artifact):
            stated += 1
            trail += f"{line}\n"
    text = "\n".join(lines)
    held = sum(1 for entry in missing if holds(text, entry.text))
    dropped = (len(missing) - held) + (len(artifacts) - stated)
    return Ledger(text, len(lines), dropped)
