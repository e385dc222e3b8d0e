"""Artifacts: what the agent's tools touched, how often, and how the last call went.

DESIGN 6.13. A summary tends to lose the trail of files and commands first (Factory's probe
study found it the weakest part of every compaction method), so the integrity check keeps one
entry per tool and identifying argument: a path, a URL, a command, a query or an id, with the
number of calls, the last call's outcome, and whether some call changed something.

A result belongs to the nearest call before it with its ``tool_call_id``: real traces reuse ids
(tau-bench does within a run), so an id names the latest call that carried it. A call is an
error when its ``ToolMessage`` says ``status="error"`` or its text reads as one: it opens with
``Error`` (or ``error``), or with OpenHands' ``OBSERVATION:`` then ``ERROR:``; a Python
traceback; a last ``exit code N`` with N other than 0; a JSON object with an ``"error"``. Only
the first and last 4,000 characters of a long result are looked at.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import BaseMessage

__all__ = ["Artifact", "Outcome", "find_artifacts"]

Outcome = Literal["ok", "error", "none"]
"""``none``: the last call has no result among the messages read."""

_TARGET_CHARS = 160
"""A target longer than this is cut, with "…" as its last character."""
_SHORT = 80
"""The longest argument taken as a target when no key says which one identifies the call."""
_LOOK = 4_000
"""Characters at each end of a result that are read for the signs of an error."""

_TARGET_KEYS = (
    "path",
    "filepath",
    "filename",
    "file",
    "url",
    "uri",
    "command",
    "cmd",
    "query",
    "q",
)
"""Arguments that identify a call, best first, compared without case, ``_`` or ``-``."""
_SUBCOMMAND_KEYS = ("command", "action", "operation", "op", "subcommand", "mode", "method")
_SHELL_KEYS = ("command", "cmd", "script")
_CHANGES = """
    write edit create delete remove update book cancel modify insert append move rename send post
    put patch set add upload commit push deploy apply replace save exchange pay refund drop
    truncate install uninstall kill reset submit publish merge upsert store assign approve reject
    schedule register archive restore revert rollback undo rm mv cp mkdir touch chmod chown
"""
_CHANGE_WORDS = frozenset(_CHANGES.split())
"""Words of a tool's name or sub-command that say it changes something (``update_reservation``,
``str_replace``, ``undo_edit``); ``get``, ``search``, ``view`` are not among them."""
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_SUBCOMMAND = re.compile(r"[A-Za-z][\w-]*")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_SHELL_WRITES = re.compile(
    r"(?:^|[;&|(`]|\s)(?:sudo\s+)?(?:rm|mv|cp|mkdir|rmdir|touch|chmod|chown|ln|tee|truncate|dd"
    r"|patch|kill|pkill|killall|unlink|shred)(?![\w.-])"
    r"|\bsed\s+(?:-[a-zA-Z]+\s+)*-[a-zA-Z]*i|\bperl\s+-[a-zA-Z]*i"
    r"|\bgit\s+(?:commit|push|checkout|reset|apply|merge|rebase|rm|mv|add|stash|cherry-pick"
    r"|revert|restore|switch|clean|tag|am)\b"
    r"|\b(?:pip3?|npm|yarn|pnpm|apt|apt-get|brew|cargo|gem|conda|poetry|uv)\s+(?:install"
    r"|uninstall|remove|add|upgrade)\b"
    r"|(?<![<>&=\-\d])>>?(?!&|\s*/dev/null|=)"
)
"""A shell command that writes: rm, mv, sed -i, git commit, pip install, a redirect to a file
(``2>&1`` and ``> /dev/null`` write nothing). Quoted text is taken out first."""
_ERROR_START = re.compile(r"(?:OBSERVATION:\s*)?(?:Error|ERROR|error)\b")
_TRACEBACK = "Traceback (most recent call last):"
_EXIT_CODE = re.compile(r"(?:exit (?:code|status)|exited with(?: code)?|returncode)[ :=]*(-?\d+)")


@dataclass(frozen=True, slots=True)
class Artifact:
    """One tool and identifying argument, over the calls of the messages read."""

    tool: str
    """The tool's name."""
    target: str
    """The identifying argument, verbatim, at most 160 characters (longer: cut with "…")."""
    calls: int
    outcome: Outcome
    """Of the last call."""
    changes: bool
    """Some call wrote, edited, created, deleted, booked, cancelled..."""
    message_id: str
    """The AI message of the last call (``message.id``, else ``#<position>``)."""
    position: int


@dataclass(slots=True)
class _Trail:
    """An artifact while the messages are read (frozen into an ``Artifact`` at the end)."""

    calls: int
    outcome: Outcome
    changes: bool
    message_id: str
    position: int


def find_artifacts(
    messages: Sequence[BaseMessage], positions: Sequence[int]
) -> tuple[Artifact, ...]:
    """One entry per (tool, target) over the tool calls of ``messages[i]``, ``i`` in ``positions``
    (each read once, in order).

    Results are matched by ``tool_call_id`` to the nearest call before them with that id, among
    the messages read; a call without one has outcome ``none``. Ordered by first call.
    """
    trails: dict[tuple[str, str], _Trail] = {}
    calls_by_id: dict[str, tuple[tuple[str, str], int]] = {}  # id -> (artifact, call number)
    for position in sorted(set(positions)):
        message = messages[position]
        if message.type == "ai":
            message_id = message.id or f"#{position}"
            for call in getattr(message, "tool_calls", None) or ():
                args = call.get("args")
                args = args if isinstance(args, Mapping) else {}
                name = str(call.get("name") or "")
                key = (name, _identifying_argument(args))
                trail = trails.get(key)
                if trail is None:
                    trail = trails[key] = _Trail(0, "none", False, message_id, position)
                trail.calls += 1
                trail.outcome = "none"
                trail.changes = trail.changes or _changes_something(name, args)
                trail.message_id, trail.position = message_id, position
                if call_id := call.get("id"):
                    calls_by_id[call_id] = (key, trail.calls)
        elif message.type == "tool":
            found = calls_by_id.get(getattr(message, "tool_call_id", ""))
            if found is not None and trails[found[0]].calls == found[1]:  # the last call's
                trails[found[0]].outcome = "error" if _is_error(message) else "ok"
    return tuple(
        Artifact(tool, target, t.calls, t.outcome, t.changes, t.message_id, t.position)
        for (tool, target), t in trails.items()
    )


def _identifying_argument(args: Mapping[str, object]) -> str:
    """The argument that names what a call is about, verbatim and cut to ``_TARGET_CHARS``.

    In order: path, file_path, filename, file, url, command or cmd, query or q (any case, with or
    without ``_``); then an id (a key ending in ``_id`` or ``Id``, or ``id``); else the first
    short one-line string argument; else "".
    """
    by_key = {key.lower().replace("_", "").replace("-", ""): value for key, value in args.items()}
    for key in _TARGET_KEYS:
        value = by_key.get(key)
        if isinstance(value, str) and value.strip():
            return _cut(value)
    for key, value in args.items():
        if key == "id" or key.endswith(("_id", "Id", "ID")):
            if isinstance(value, str) and value.strip():
                return _cut(value)
            if isinstance(value, int) and not isinstance(value, bool):
                return str(value)
    for value in args.values():
        if isinstance(value, str) and value.strip() and len(value) <= _SHORT and "\n" not in value:
            return value
    return ""


def _changes_something(tool: str, args: Mapping[str, object]) -> bool:
    """Whether a call writes, edits, creates, deletes, books or cancels something.

    A one-word sub-command decides alone (str_replace_editor's ``create`` does, its ``view``
    does not); else a shell command that writes, or a tool whose name says so.
    """
    for key in _SUBCOMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and _SUBCOMMAND.fullmatch(value):
            return _says_change(value)
    for key in _SHELL_KEYS:
        value = args.get(key)
        if isinstance(value, str) and _SHELL_WRITES.search(_QUOTED.sub("''", value)):
            return True
    return _says_change(tool)


def _says_change(name: str) -> bool:
    """A name with a word of change in it (``book_reservation``, ``writeFile``, ``undo_edit``)."""
    return any(word.lower() in _CHANGE_WORDS for word in _NAME_WORD.findall(name))


def _cut(value: str) -> str:
    return value if len(value) <= _TARGET_CHARS else value[: _TARGET_CHARS - 1] + "…"


def _is_error(message: BaseMessage) -> bool:
    """A failed call: ``status="error"``, or a result that reads as an error."""
    if getattr(message, "status", None) == "error":
        return True
    text = _text(message.content).strip()
    head, tail = "\n" + text[:_LOOK], text[-_LOOK:]
    if _ERROR_START.match(text) or f"\n{_TRACEBACK}" in head or f"\n{_TRACEBACK}" in tail:
        return True
    if "exit" in tail or "returncode" in tail:
        codes = _EXIT_CODE.findall(tail)
        if codes and int(codes[-1]) != 0:
            return True
    return text.startswith("{") and '"error"' in head and _json_error(text)


def _json_error(text: str) -> bool:
    """A JSON object with a non-empty ``"error"`` member."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and bool(value.get("error"))


def _text(content: object) -> str:
    """A result's text: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and isinstance(text := block.get("text"), str):
            parts.append(text)
    return "\n".join(parts)
