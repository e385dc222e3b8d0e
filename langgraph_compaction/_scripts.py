"""Text length by script: what a tokenizer spends on text that is not Latin.

langchain-core's approximate counter assumes four characters a token, true of English and
code. A Chinese, Japanese or Korean character costs about one token, and Cyrillic, Arabic,
Devanagari, Greek or Hebrew text fewer characters a token than Latin text. ``weighted_chars``
gives a text's length in Latin-equivalent characters, so that the counter's rule (characters
divided by four) holds for every script. ASCII text costs nothing extra to measure: its
weight is its length.
"""

from __future__ import annotations

import re

__all__ = ["weighted_chars"]

_LATIN_CHARS_PER_TOKEN = 4.0
"""langchain-core's rule for Latin text, which the weights below are relative to."""

_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f"
    "\u31a0-\u31ff\u3200-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\uff00-\uffef\U00020000-\U0003134f]"
)
"""Han ideographs, kana, Hangul, CJK punctuation and full-width forms."""
_OTHER = re.compile("[^\u0000-\u024f\u1e00-\u1eff\u2000-\u206f]")
"""Anything beyond Latin and general punctuation (CJK included; it is taken out below)."""

_CJK_CHARS_PER_TOKEN = 1.0
_OTHER_CHARS_PER_TOKEN = 2.5


def weighted_chars(text: str) -> int:
    """``text``'s length in Latin-equivalent characters (four to a token)."""
    if text.isascii():
        return len(text)
    cjk = len(_CJK.findall(text))
    other = len(_OTHER.findall(text)) - cjk
    latin = len(text) - cjk - other
    weight = (
        latin
        + cjk * _LATIN_CHARS_PER_TOKEN / _CJK_CHARS_PER_TOKEN
        + other * _LATIN_CHARS_PER_TOKEN / _OTHER_CHARS_PER_TOKEN
    )
    return round(weight)
