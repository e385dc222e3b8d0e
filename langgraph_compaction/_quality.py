"""Tell a reply that is plainly not a summary from one that is, however poor.

A small summarizer (the demo's 135M local model) often answers a summary prompt with something
else: "I'm ready to continue the conversation. Please go ahead and share...", the instruction
read back, or generic text about none of the conversation. Storing such a reply would make
every later call reuse it, so the pipeline treats it as a failed summary. The checks are
deliberately coarse: they reject what is plainly wrong and accept any reply that is about the
conversation, since judging quality needs a model, not a regular expression.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ._prompts import DEFAULT_SUMMARY_PROMPT, DEFAULT_UPDATE_PROMPT

__all__ = ["not_a_summary", "salient_terms"]

_TOKEN = re.compile(r"[^\W_](?:[\w./:@-]*[^\W_])?")
_PART = re.compile(r"[./:@_-]+")
_SHINGLE = 6
"""Consecutive words of a built-in instruction that make a reply an echo of it."""
_OPENING = 240
"""Characters at the head of a reply where a request for input gives it away."""
_QUOTED_WORDS = 6
"""Words from a request on that, found in the transcript too, make it a quote, not a request."""

# Words that say nothing about a particular conversation: function words, and the vocabulary
# of the prompts and of chat itself, which a reply can repeat without reading the transcript.
_COMMON_WORDS = """
    about above after again also always another answer anything around asked back because
    been before being below best both call called came can't cannot come could didn't does
    doesn't doing done don't down each even every first from further give going good great
    have having hello help here i'll i'm into it's just keep know last later let's like look
    made make many maybe more most much must need never next okay once only other ours over
    please really right said same see seem should show since some something soon still such
    sure take tell than thank thanks that that's their them then there these they thing
    things think this those though through time today told under until upon very want wanted
    well were what what's when where which while will with within without work would yeah yes
    your yours you're
    user users assistant assistants tool tools conversation conversations summary summaries
    checkpoint transcript message messages goal goals constraints constraint preferences
    preference progress decisions decision steps step critical context continue continuing
    share ready provide sections section update updated identifier identifiers verbatim
    concise factual invent reply earlier part covers everything obsolete true drop same
    write written previous discussed track information details
    success successful successfully completed complete finished improve improved improvement
"""
_COMMON = frozenset(_COMMON_WORDS.split())
_REQUESTS = re.compile(
    r"\b(?:please|kindly)\s+(?:go ahead|share|provide|paste|send|give|tell|let me know)\b"
    r"|\bgo ahead and\b"
    r"|\b(?:i'?m|i am) (?:ready|happy|here) to\b"
    r"|\bhow (?:can|may) i (?:help|assist)\b"
    r"|\bwhat would you like\b"
    r"|\b(?:could|can|would) you (?:please )?(?:share|provide|paste|send|give|tell)\b"
    r"|\bi (?:would )?need (?:more|the|some) (?:information|context|details|conversation)\b",
    re.IGNORECASE,
)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1)}


def _instruction(template: str) -> str:
    """The template without its placeholders' surroundings: what the model is told to do."""
    return template.rsplit("</conversation>", 1)[-1]


_INSTRUCTION_SHINGLES = frozenset(
    _shingles(_words(_instruction(DEFAULT_SUMMARY_PROMPT)))
    | _shingles(_words(_instruction(DEFAULT_UPDATE_PROMPT)))
)


def _quotes(passage: str, transcript: str) -> bool:
    """Whether ``passage`` opens with words the transcript has too (a summary quoting a request)."""
    head = _words(passage)[:_QUOTED_WORDS]
    return " ".join(head) in " ".join(_words(transcript))


def _salient_form(term: str, written: str) -> str | None:
    """How ``term`` counts as salient (lowercase, or as written for a code), or None."""
    if term.isdigit():  # "10" or "25" is in any text; "884213" or "2025" names something
        return term if len(term) >= 3 else None
    if any(ch.isdigit() for ch in term):  # "m1", "v2", "gpt-4o": an identifier
        return term if len(term) >= 2 else None
    if len(term) >= 4 and term not in _COMMON:
        return term
    # "SEK", "UTC", "CSV": a code, matched only in capitals, so that the "AND" of a SQL query
    # is not matched by any "and".
    return written if written.isupper() and len(written) >= 3 else None


def _terms(text: str) -> Iterator[tuple[str, str]]:
    """Each token and each part of it, lowercase, with the token as it was written."""
    for token in _TOKEN.findall(text):
        yield token.lower(), token
        for part in _PART.split(token):
            yield part.lower(), part


def salient_terms(text: str) -> frozenset[str]:
    """The words and identifiers of ``text`` that a summary of it would be expected to repeat.

    Identifiers count whole (``etl/currency.py``) and by their parts (``currency``), so a
    summary that shortens a path still matches. Lowercase, but codes in capitals as written.
    """
    forms = (_salient_form(term, written) for term, written in _terms(text))
    return frozenset(form for form in forms if form is not None)


def not_a_summary(text: str, transcript: str) -> str | None:
    """A short reason when ``text`` is plainly not a summary of ``transcript``, else None.

    ``transcript`` is what the summary had to cover: the rendered messages, and for an update
    the previous summary too. Checked in order: the reply reads back the built-in
    instruction; it opens by asking for input ("Please share...", "go ahead"); it has none of
    the transcript's salient terms. A transcript without salient terms cannot be judged by
    the last check, so it passes.
    """
    words = _words(text)
    if not words:
        return "the reply is empty"
    echoed = (_shingles(words) & _INSTRUCTION_SHINGLES) - _shingles(_words(transcript))
    if echoed:
        return f"it repeats the instruction ({' '.join(min(echoed))!r})"
    request = _REQUESTS.search(text[:_OPENING])
    if request and not _quotes(text[request.start() :], transcript):
        return f"it asks for input ({request.group(0)!r}) instead of summarizing"
    expected = salient_terms(transcript)
    written = {form for pair in _terms(text) for form in pair}
    if expected and not expected & written:
        return "it mentions none of the conversation's names, numbers or terms"
    return None
