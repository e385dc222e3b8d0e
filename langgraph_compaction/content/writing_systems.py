"""Text by script: what a tokenizer spends on text that is not Latin, and text as compared.

langchain-core's approximate counter assumes four characters a token, true of English and
code. A Chinese, Japanese or Korean character costs about one token, and Cyrillic, Arabic,
Devanagari, Greek or Hebrew text fewer characters a token than Latin text. ``weighted_chars``
gives a text's length in Latin-equivalent characters, so that the counter's rule (characters
divided by four) holds for every script. ASCII text costs nothing extra to measure: its
weight is its length.

The weights were measured against OpenAI's ``o200k_base`` on real text of each script
(``benchmarks/scripts.py``; the table is in docs/guides/languages-and-media.md). A script is told by
its 256-code-point block, so that a text is weighed in a few passes in C: encode as UTF-16,
keep each unit's high byte (its block), map blocks to weight classes, count each class.

``fold_text`` gives text as the checks compare it (DESIGN 6.10): NFKC, the digits of every
script as ASCII digits, Arabic and Hebrew without vowel marks or letter variants, Cyrillic yo
as ie; a summary that writes ``2026-12-02`` then holds what a user wrote as ``٢٠٢٦-١٢-٠٢``.
"""

from __future__ import annotations

import unicodedata

__all__ = ["fold_text", "weighted_chars"]

_BLOCK_WEIGHTS: tuple[tuple[int, int, float], ...] = (
    # (first block, last block, Latin-equivalent characters per character); a block is a
    # code point >> 8. Block 0x00 (ASCII, Latin-1) and anything not listed weigh 1.
    (0x01, 0x02, 2.5),  # Latin Extended-A/B, IPA: Polish, Czech, Turkish, Romanian letters
    (0x03, 0x03, 1.65),  # Greek (and combining diacritics)
    (0x04, 0x04, 1.2),  # Cyrillic: o200k holds many Russian words whole
    (0x05, 0x05, 2.0),  # Hebrew, Armenian
    (0x06, 0x08, 1.65),  # Arabic, Syriac, Thaana
    (0x09, 0x09, 1.65),  # Devanagari, Bengali
    (0x0A, 0x0D, 2.0),  # Gurmukhi, Gujarati, Oriya, Tamil, Telugu, Kannada, Malayalam, Sinhala
    (0x0E, 0x0E, 2.0),  # Thai, Lao
    (0x0F, 0x0F, 4.0),  # Tibetan
    (0x10, 0x10, 1.65),  # Myanmar, Georgian
    (0x11, 0x11, 3.1),  # Hangul Jamo
    (0x12, 0x1D, 4.0),  # Ethiopic, Cherokee, Khmer, Mongolian and others: a token a character
    (0x1E, 0x1E, 3.6),  # Latin Extended Additional: Vietnamese
    (0x1F, 0x1F, 2.5),  # Greek Extended
    (0x20, 0x2F, 4.0),  # punctuation, symbols, arrows, box drawing, dingbats, CJK radicals
    (0x30, 0x31, 3.1),  # CJK punctuation, kana, bopomofo, Hangul compatibility jamo
    (0x32, 0x9F, 3.6),  # CJK enclosed and compatibility forms, Han ideographs
    (0xA0, 0xAB, 4.0),  # Yi, Vai, Javanese and others
    (0xAC, 0xD7, 3.1),  # Hangul syllables
    (0xD8, 0xDF, 4.0),  # each half of a surrogate pair: emoji, rare Han (two tokens each)
    (0xE0, 0xF8, 4.0),  # private use
    (0xF9, 0xFA, 3.6),  # CJK compatibility ideographs
    (0xFB, 0xFF, 4.0),  # presentation forms, variation selectors, full-width forms
)


def _weight_classes() -> tuple[bytes, tuple[tuple[bytes, float], ...]]:
    """A block -> class translation table, and each class's weight beyond one character."""
    weights = sorted({weight for _, _, weight in _BLOCK_WEIGHTS})
    table = bytearray(256)  # class 0: weight 1, nothing to add
    for first, last, weight in _BLOCK_WEIGHTS:
        table[first : last + 1] = bytes([weights.index(weight) + 1]) * (last - first + 1)
    extras = tuple((bytes([index + 1]), weight - 1) for index, weight in enumerate(weights))
    return bytes(table), extras


_CLASS_OF_BLOCK, _EXTRA_WEIGHT = _weight_classes()


def weighted_chars(text: str) -> int:
    """``text``'s length in Latin-equivalent characters (four to a token)."""
    if text.isascii():  # O(1) in CPython: a flag of the string
        return len(text)
    # Each UTF-16 code unit's high byte is its block; "surrogatepass" takes a lone surrogate
    # as any other unit instead of raising. Block 0 (ASCII, Latin-1) is dropped before the
    # classes are counted, so mostly Latin text counts over its few other characters only.
    units = text.encode("utf-16-le", "surrogatepass")[1::2]
    classes = units.translate(_CLASS_OF_BLOCK, b"\x00")
    weight = len(units) + sum(classes.count(code) * extra for code, extra in _EXTRA_WEIGHT)
    return round(weight)


_ZEROS = (0x660, 0x6F0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xE50)
"""Digit zero of the scripts whose digits NFKC leaves alone: Arabic, Indic, Thai and others."""
_DIGITS = {zero + v: str(v) for zero in (*_ZEROS, 0xED0, 0x1040, 0x17E0) for v in range(10)}
_FOLD: dict[int, str | None] = {
    **_DIGITS,
    **dict.fromkeys([0x640, *range(0x64B, 0x660), 0x670]),  # tatweel, Arabic vowel marks
    **dict.fromkeys([*range(0x591, 0x5BE), 0x5BF, 0x5C1, 0x5C2, 0x5C4, 0x5C5, 0x5C7]),  # Hebrew
    **dict.fromkeys([0x623, 0x625, 0x622, 0x671], "\u0627"),  # alef with hamza or madda: alef
    0x649: "\u064a",  # alef maqsura: yeh
    0x629: "\u0647",  # teh marbuta: heh
    0x451: "\u0435",  # Cyrillic yo: ie
    0x401: "\u0415",
}


def fold_text(text: str) -> str:
    """``text`` as compared: NFKC, ASCII digits, Arabic without vowel marks or letter variants."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text).translate(_FOLD)
