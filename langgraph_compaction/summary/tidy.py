"""Tidying a summary model's reply before it is checked, capped and stored.

Small models leave three faults in a reply that a stored summary must not keep (SmolLM2-135M
behind llama.cpp's server, the demo's summarizer, shows each):

- the prompt's delimiters echoed at its start or end (``</conversation>``, ``<summary>``): only
  the tags of the prompt actually used (:func:`prompt_tags`, a custom prompt's own), and only
  as markup at an edge of the reply, so a summary that writes ``<summary>`` in its text keeps it;
- a markdown section written twice: a later section whose heading and body repeat an earlier
  one exactly is dropped, the first kept;
- a sentence cut in the middle where the provider stopped the reply at ``max_tokens``
  (:func:`stopped_at_max_tokens`): the reply ends at its last complete sentence or line instead,
  in any script (:func:`~langgraph_compaction.summary.cap.sentence_ends`), and a heading left
  without its body goes too. When nothing complete remains the reply is kept as it is, for the
  checks to judge.

A custom compactor's text is not tidied: it gets the messages, not our prompt, so our
delimiters are none of its business, and it reports no stop reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from langgraph_compaction.summary.cap import sentence_ends
from langgraph_compaction.summary.prompts import delimiters_of, fill_prompt

__all__ = [
    "drop_repeated_sections",
    "prompt_tags",
    "stopped_at_max_tokens",
    "strip_delimiters",
    "tidy_reply",
    "trim_to_sentence",
]

_FIRST_TAG = re.compile(r"\A</?\s*([A-Za-z][\w.:-]*)[^<>]*>")
_LAST_TAG = re.compile(r"</?\s*([A-Za-z][\w.:-]*)[^<>]*>\Z")
_HEADING = re.compile(r"[ ]{0,3}#{1,6}(?:[ \t]|$)")
"""A markdown (ATX) heading line."""
_FENCE = re.compile(r"[ ]{0,3}(?:```|~~~)")
_WORD = re.compile(r"\w")

_STOP_KEYS = ("finish_reason", "stop_reason", "done_reason", "stopReason")
"""Where a provider's ``response_metadata`` says why the reply ended: OpenAI, vLLM, llama.cpp,
Mistral, Google (``finish_reason``), Anthropic (``stop_reason``), Ollama (``done_reason``),
Bedrock's Converse API (``stopReason``)."""
_CAP_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})
"""The reasons that mean "stopped at ``max_tokens``" (compared lowercase, an enum by name)."""


def prompt_tags(template: str) -> frozenset[str]:
    """The tag names of the prompt made from ``template`` (lowercase), the transcript's own
    ``<conversation>`` included when the template leaves its placement to us."""
    return delimiters_of(fill_prompt(template, ""))[0]


def stopped_at_max_tokens(metadata: Mapping[str, object]) -> bool:
    """Whether a reply's ``response_metadata`` says the provider stopped it at ``max_tokens``.

    langchain-core has no standard field for it (its protocol passes the provider's own
    through), so each provider's is read: ``finish_reason: "length"`` (OpenAI and compatible
    servers), ``stop_reason: "max_tokens"`` (Anthropic), ``finish_reason: "MAX_TOKENS"``
    (Google), ``done_reason: "length"`` (Ollama), ``stopReason: "max_tokens"`` (Bedrock), and
    ``incomplete_details.reason: "max_output_tokens"`` (OpenAI's Responses API).
    """
    reasons = [metadata.get(key) for key in _STOP_KEYS]
    details = metadata.get("incomplete_details")
    if isinstance(details, Mapping):
        reasons.append(details.get("reason"))
    return any(_reason_name(reason) in _CAP_REASONS for reason in reasons if reason is not None)


def _reason_name(reason: object) -> str:
    """``"length"``, ``FinishReason.MAX_TOKENS`` or ``"FinishReason.MAX_TOKENS"``, lowercase."""
    name = reason if isinstance(reason, str) else getattr(reason, "name", str(reason))
    return str(name).rsplit(".", 1)[-1].lower()


def strip_delimiters(text: str, tags: frozenset[str]) -> str:
    """``text`` without the tags named in ``tags`` at its start or end, as often as they come.

    A tag counts as markup there unless a space parts it from a word beside it: ``the tag
    <summary>`` ends a sentence that names the tag, and stays, as does a tag in a code span (the
    backtick is the edge); ``done.</conversation>``, ``done. </conversation>`` and a tag on a
    line of its own go. Text that would be left blank comes back as it was (stripped).
    """
    text = original = text.strip()
    while tags:
        first = _FIRST_TAG.match(text)
        if first and first.group(1).lower() in tags and not _in_prose(text[first.end() :][:80]):
            text = text[first.end() :].strip()
            continue
        last = _LAST_TAG.search(text)
        if (
            last
            and last.group(1).lower() in tags
            and not _in_prose(text[: last.start()][-80:][::-1])
        ):
            text = text[: last.start()].strip()
            continue
        break
    return text or original


def _in_prose(beside: str) -> bool:
    """Whether a tag is a word of a sentence: ``beside`` (the text beside it, read outwards
    from it) is spaces on the same line and then a letter or digit."""
    rest = beside.lstrip(" \t")
    return rest != beside and rest[:1].isalnum()


def _sections(text: str) -> list[str]:
    """``text`` split before each heading line outside a fenced code block (joined: ``text``)."""
    sections: list[str] = [""]
    fenced = False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and _HEADING.match(line):
            sections.append("")
        sections[-1] += line
    return sections


def drop_repeated_sections(text: str) -> str:
    """``text`` without a markdown section whose heading and body repeat an earlier one exactly.

    A section runs from its heading line to the next heading; the first of the repeats is kept,
    and what comes before the first heading is never dropped.
    """
    head, *sections = _sections(text)
    seen: set[str] = set()
    kept = [head]
    for section in sections:
        key = section.strip()
        if key in seen:
            continue
        seen.add(key)
        kept.append(section)
    if len(kept) == len(sections) + 1:
        return text
    return "".join(kept).rstrip()


def trim_to_sentence(text: str) -> str:
    """``text`` up to its last complete sentence or line, without a heading left bodiless.

    For a reply the provider cut at ``max_tokens``. When nothing complete is left (no word
    remains), ``text`` comes back as it is.
    """
    ends = sentence_ends(text)
    if not ends:
        return text
    lines = text[: ends[-1]].rstrip().splitlines()
    while lines and (not lines[-1].strip() or _HEADING.match(lines[-1])):
        lines.pop()  # a heading whose body was cut away
    head = "\n".join(lines).rstrip()
    return head if _WORD.search(head) else text


def tidy_reply(text: str, tags: frozenset[str], stopped_at_cap: bool) -> str:
    """A summary model's reply without echoed delimiters (``tags``: :func:`prompt_tags`),
    without a repeated section, and, when the provider stopped it at ``max_tokens``
    (``stopped_at_cap``), ending at its last complete sentence or line."""
    text = strip_delimiters(text, tags)
    if stopped_at_cap:  # the trim may leave a delimiter at the new end
        text = strip_delimiters(trim_to_sentence(text), tags)
    return drop_repeated_sections(text)
