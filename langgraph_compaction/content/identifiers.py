"""Identifiers in messages: what a summarizer must keep verbatim, since no model can rebuild it.

DESIGN 6.13. The rules (URLs, paths, ids, amounts, dates, code names, names...) are
``content.identifier_scan``'s; here they are applied to what the user, the assistant and the
tools wrote, each identifier kept once with its weightiest source, its last mention and how
often it occurs. Names are read in what the user and the assistant write only: in a tool
result a capitalized word is data. Every text is folded first (``fold_text``), so that
``٢٠٢٦-١٢-٠٢`` is found, and checked, as ``2026-12-02``.

A tool result or tool-call argument longer than 20,000 characters is read in its first 16,000
and last 4,000 characters: an identifier in the middle of a huge log is rarely the one a
summary needs, and reading it all would cost more than the rest of the check.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, cast

from langchain_core.messages import BaseMessage

from langgraph_compaction.content.blocks import is_reasoning, media_block, tool_call_block
from langgraph_compaction.content.identifier_scan import lowercase_names, scan
from langgraph_compaction.content.writing_systems import fold_text

__all__ = [
    "SOURCE_WEIGHT",
    "Identifier",
    "IdentifierKind",
    "Source",
    "find_identifiers",
    "identifiers_in",
]

IdentifierKind = Literal[
    "url", "email", "path", "uuid", "hex", "issue", "version", "money", "quantity", "date",
    "time", "code", "quoted", "name",
]  # fmt: skip
Source = Literal["user", "assistant", "tool_call", "tool_result", "summary"]

SOURCE_WEIGHT: Mapping[Source, int] = {
    "user": 4, "tool_call": 3, "assistant": 2, "tool_result": 1, "summary": 0,
}  # fmt: skip
"""Which source an identifier keeps when seen in several: the user's word weighs most."""

_READ_HEAD = 16_000
_READ_TAIL = 4_000
"""A long tool result or argument is read in its first and last characters only."""


@dataclass(frozen=True, slots=True)
class Identifier:
    """One identifier of the messages read, with where it was last seen and how often."""

    text: str
    """Folded (``fold_text``) and as matched: what the check looks for verbatim."""
    kind: IdentifierKind
    source: Source
    """The weightiest source it was seen in: user > tool_call > assistant > tool_result >
    summary."""
    message_id: str
    """The message of its last mention (``message.id``, else ``#<position>``)."""
    position: int
    """Index in the full message list of its last mention."""
    mentions: int
    """How many times it occurs over the messages read."""


def identifiers_in(text: str) -> list[tuple[str, IdentifierKind]]:
    """Every identifier of ``text``, in order of appearance, duplicates kept; folded first.

    Names are read too (the caller knows whether ``text`` is what a person wrote); a name that
    ``text`` also writes in lowercase is an ordinary word, capitalized, and is left out.
    """
    text = fold_text(text)
    found = cast(list[tuple[str, IdentifierKind]], list(scan(text, names=True)))
    words = lowercase_names({value for value, kind in found if kind == "name"}, text)
    return [item for item in found if item[1] != "name" or item[0] not in words]


def find_identifiers(
    messages: Sequence[BaseMessage], positions: Sequence[int], exclude: Collection[str] = ()
) -> tuple[Identifier, ...]:
    """The identifiers of ``messages[i]`` for ``i`` in ``positions`` (each read once, in order),
    by first appearance.

    Read: user text, assistant text (its text blocks too), every string value of the tool
    calls' arguments (recursively) and tool results; a media block by its URL and file name
    only. System messages and reasoning blocks are not read. ``exclude`` holds folded texts
    never reported (the system prompt's identifiers, the summary prompts' own words). A name
    that the user or the assistant also writes in lowercase is an ordinary word, not a name.
    """
    skip = exclude if isinstance(exclude, set | frozenset) else frozenset(exclude)
    found: dict[str, _Seen] = {}
    prose: list[str] = []  # user and assistant text, whose lowercase words are not names
    for position in sorted(set(positions)):
        message = messages[position]
        message_id = message.id or f"#{position}"
        for source, text, direct in _texts(message):
            if direct is not None:
                matches: Iterable[tuple[str, str]] = ((text, direct),)
            else:
                text = fold_text(text)
                is_prose = source in ("user", "assistant")
                if is_prose:
                    prose.append(text)
                matches = scan(text, names=is_prose)
            weight = SOURCE_WEIGHT[source]
            for value, kind in matches:
                seen = found.get(value)
                if seen is None:
                    if value not in skip:
                        found[value] = _Seen(kind, source, weight, message_id, position)
                    continue
                if weight > seen.weight:
                    seen.source, seen.weight = source, weight
                seen.message_id, seen.position = message_id, position
                seen.mentions += 1
    names = [text for text, seen in found.items() if seen.kind == "name"]
    common = lowercase_names(names, "\n".join(prose))
    return tuple(
        Identifier(
            text,
            cast(IdentifierKind, seen.kind),
            seen.source,
            seen.message_id,
            seen.position,
            seen.mentions,
        )
        for text, seen in found.items()
        if text not in common
    )


@dataclass(slots=True)
class _Seen:
    """An identifier while the messages are read (frozen into an ``Identifier`` at the end)."""

    kind: str
    source: Source
    weight: int
    message_id: str
    position: int
    mentions: int = 1


def _texts(message: BaseMessage) -> Iterator[tuple[Source, str, IdentifierKind | None]]:
    """``(source, text, kind)`` for each text of ``message`` read; ``kind`` set for a media
    block's URL or file name, which is an identifier whole."""
    kind = message.type
    if kind == "chat":
        role = getattr(message, "role", "")
        kind = {"user": "human", "assistant": "ai", "tool": "tool", "function": "tool"}.get(
            role, "system"
        )
    if kind == "system":
        return
    if kind == "human":
        is_summary = message.name == "summary" or (
            message.additional_kwargs.get("lc_source") == "summarization"
        )
        yield from _content_texts(message.content, "summary" if is_summary else "user")
    elif kind == "ai":
        yield from _content_texts(message.content, "assistant")
        for call in getattr(message, "tool_calls", None) or ():
            for value in _strings(call.get("args")):
                yield "tool_call", _head_and_tail(value), None
    elif kind in ("tool", "function"):
        yield from _content_texts(message.content, "tool_result", long=True)


def _content_texts(
    content: object, source: Source, *, long: bool = False
) -> Iterator[tuple[Source, str, IdentifierKind | None]]:
    """The texts of a message's content (a string or blocks); media by URL and file name."""
    if isinstance(content, str):
        yield source, _head_and_tail(content) if long else content, None
        return
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, str):
            yield source, _head_and_tail(block) if long else block, None
        elif not isinstance(block, Mapping) or is_reasoning(block):
            continue
        elif isinstance(text := block.get("text"), str) and block.get("type") in _TEXT_BLOCKS:
            yield source, _head_and_tail(text) if long else text, None
        elif tool_call_block(block) is None and (media := media_block(block)) is not None:
            if media.url:
                yield source, fold_text(media.url), "url"
            if media.file_name:
                yield source, fold_text(media.file_name), "path"


_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})


def _strings(value: object) -> Iterator[str]:
    """Every string in a tool call's arguments, recursively (keys are not read)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _head_and_tail(text: str) -> str:
    """A long text's first ``_READ_HEAD`` and last ``_READ_TAIL`` characters, else the text."""
    if len(text) <= _READ_HEAD + _READ_TAIL:
        return text
    return text[:_READ_HEAD] + "\n" + text[-_READ_TAIL:]
