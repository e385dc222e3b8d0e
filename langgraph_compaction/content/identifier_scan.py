"""One text's identifiers: the rules of DESIGN 6.13 as one regular expression, and its filters.

URLs, file paths, e-mail addresses, UUIDs, hashes and hex ids (7+ hex characters with a digit),
issue keys (``ETL-212``, ``#1234``), versions, numbers with a currency, a unit, a date or a time
(``$1,250``, ``40 ms``, ``68,112 rows``, ``2026-12-02``, ``03:00 UTC``), code names
(``snake_case``, ``camelCase``, ``PascalCase``, ``a.b.c``), text in backticks, codes in capitals
(``HAT017``, ``OI5L9G``, ``MCO``; not ``ERROR`` or ``NOTE``) and, where asked, names: a
capitalized word that is not at a sentence start and is not an ordinary word (``Caroline``,
``Denver``). A code name that is a JSON key (``"flight_number":``) is a tool result's schema,
not a fact, and is skipped.

The text is folded (``fold_text``) by the caller, so other scripts' digits are ASCII digits.
A match is bounded by ASCII letters and digits only, not by ``\\b``, so that an identifier glued
to Chinese or Japanese text (``请检查ETL-212的状态``) is found. Where two rules match at one
place the longer wins (a URL is not also a path), and trailing punctuation is never part of a
match.

Speed: one pattern finds every candidate in one pass in C, and Python looks only at its
matches. The pattern matches the character before an identifier too, so that it opens with a
character class and the engine skips letters and digits without trying a rule there; the rules
are grouped by their first character, and guards keep plain words and plain JSON numbers from
being tried against each rule.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterator

from langgraph_compaction.content.common_words import COMMON_ACRONYMS, ORDINARY_WORDS

__all__ = ["lowercase_names", "scan"]

# A match is bounded by ASCII letters, digits and the underscore only, so that CJK may touch it.
_E = "(?![A-Za-z0-9_])"
_NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
_SEG = "A-Za-z0-9_.@%+=~\\-\u00c0-\u024f\u0370-\u052f\u0590-\u06ff\u0900-\u097f"
"""Characters of a path segment: ASCII, and the letters of spaced scripts (never CJK, which
would glue the prose around a path to it)."""
_PATH = f"[{_SEG}]+(?:/[{_SEG}]+)*/?"
_URL_CHARS = r"A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%"
_EXTENSIONS = (
    "py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|json|jsonl|ya?ml|toml|ini|cfg|conf|env|md|rst|txt|csv|"
    "tsv|log|xml|html?|css|scss|sql|sh|bash|zsh|ps1|bat|go|rs|java|kt|scala|c|h|cc|cpp|hpp|cs|rb|"
    "php|swift|lua|pl|dart|vue|lock|gradle|pdf|png|jpe?g|gif|svg|webp|mp3|mp4|wav|zip|tar|gz|tgz|"
    "whl|db|sqlite|parquet|proto|tf|docx?|xlsx?|pptx?"
)
_TLDS = "com|org|net|io|dev|ai|gov|edu|app|co|info|me|us|uk|de|ru|cn|jp|fr|in|eu"
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_RU_MONTH = "(?:января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря)"
_ZONE = r"(?: ?(?:UTC|GMT|Z|[A-Z]{2,3}T|MSK|IST|JST|KST|[+-]\d{2}:?\d{2}))?"
_ORDINAL = "(?:st|nd|rd|th)?"
_UNITS = (
    "ms|µs|us|ns|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?|months?|years?|"
    "[KMGT]i?B|[kKMGT]b|bytes?|kbps|[MG]bps|px|pt|km|cm|mm|kg|mg|lbs?|oz|miles?|mi|ft|feet|"
    "inch(?:es)?|°[CF]|[kMG]Hz|Hz|kWh?|mAh|tokens?|rows?|records?|items?|requests?|rps|qps|"
    "files?|lines?|tests?|errors?|users?|messages?|calls?|retries|attempts?|steps?|pages?|"
    "nights?|passengers?|bags?|seats?|tickets?|points?|epochs?|GPUs?|CPUs?|cores?|threads?|"
    "workers?|nodes?|replicas?|times|x"
)
_CURRENCY = "[$€£¥₹₽₩₺₴₪]"
_CURRENCY_WORDS = (
    "USD|EUR|GBP|JPY|CNY|RUB|INR|CHF|CAD|AUD|dollars?|euros?|pounds?|yen|yuan|rubles?|roubles?|"
    "рублей|рубля|рубль|\u0440\u0443\u0431\\.?|元|円|원"  # the last Russian one: the abbreviation
)
_UUID = rf"[0-9a-fA-F]{{8}}(?:-[0-9a-fA-F]{{4}}){{3}}-[0-9a-fA-F]{{12}}{_E}"
_NOT_KEY = r"(?!(?<=[\"'])[A-Za-z0-9_.]*+[\"']:)"
"""Not a key of a JSON object or a Python dict (``"flight_number":``): a schema, not a fact."""
_NOT_SENTENCE_START = (
    r"(?<![.!?:;\n]\s)(?<![.!?:;\n]\s\s)(?<!\n)(?<!\n\s)(?<!\n- )(?<!\n\* )(?<!\*\*)(?<!['\u2019])"
)
"""The plain cases, told in C; ``_sentence_start`` looks at the rest."""
_CODE = (
    r"__[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*__|_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*(?:\.\d+)*"
    r"|_[a-z][a-z0-9]+|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"
    r"|[A-Z]+[A-Z][a-z]{2,}[A-Za-z0-9]*|[A-Z][a-z]+\d[A-Za-z0-9]*|[a-z]+\d[a-z0-9]*(?:\.\d+)*"
    r"|[a-z][a-z0-9]*(?=[a-z0-9-]*\d)(?:-[a-z0-9]+)+"
)
"""Code names: dunder, snake_case (SCREAMING too), _private, camelCase, PascalCase,
HTTPServer, Python3, python3, gpt-4o (kebab-case only with a digit: not ``self-care``)."""

# Each rule as (kind, pattern); a pattern opens with the class of its first character, which
# lets the engine pass over it at once elsewhere. At one place the first rule that matches wins,
# so the longer kinds of an overlap come first. "caps" and "dotted" are filtered into codes.
Rule = tuple[str, "str | tuple[Rule, ...]"]
"""``(kind, pattern)``, or ``(guard, rules)``: rules read only where the guard's lookahead holds."""
Rules = tuple[Rule, ...]

_SPECIAL: Rules = (
    ("quoted", r"`[^`\n]{1,200}`"),
    ("path", rf"/(?<![{_SEG}/<]/){_PATH}"),
    ("path", rf"[~.](?<![{_SEG}/<][~.])(?:(?<=\.)\.)?/{_PATH}"),
    (
        "money",
        rf"{_CURRENCY}(?<![A-Za-z0-9_$]{_CURRENCY}) ?{_NUM}(?: ?(?:[kKMB]n?|million|billion){_E})?",
    ),
    ("issue", rf"#(?<![A-Za-z0-9_&]#)\d+{_E}"),
)
_DIGIT: Rules = (
    ("uuid", _UUID),
    ("date", rf"\d{{4}}-\d{{2}}-\d{{2}}(?:T\d{{2}}:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?{_ZONE})?{_E}"),
    ("date", rf"(?:\d{{4}}/\d{{1,2}}/\d{{1,2}}|\d{{1,2}}[/.]\d{{1,2}}[/.]\d{{4}}){_E}"),
    ("date", rf"\d{{1,2}}{_ORDINAL}(?: of)? {_MONTH}(?:,? \d{{4}})?{_E}"),
    (
        "date",
        r"\d{4}年\d{1,2}月(?:\d{1,2}日)?|\d{1,2}月\d{1,2}日|\d{4}년 ?\d{1,2}월(?: ?\d{1,2}일)?",
    ),
    ("date", rf"\d{{1,2}} {_RU_MONTH}(?: \d{{4}})?"),
    (
        "time",
        rf"\d{{1,2}}:\d{{2}}(?<![:.]\d:\d\d)(?<![:.]\d\d:\d\d)(?::\d{{2}})?"
        rf"(?: ?(?:[ap]\.m\.|[AP]\.M\.|[ap]m|[AP]M))?{_ZONE}{_E}",
    ),
    ("time", rf"\d{{1,2}} ?(?:[ap]\.m\.|[AP]\.M\.|am|pm|AM|PM){_ZONE}(?![A-Za-z0-9_.])"),
    ("money", rf"{_NUM} ?(?:{_CURRENCY_WORDS}|[€₽]){_E}"),
    ("quantity", rf"{_NUM} ?(?:{_UNITS}){_E}|{_NUM}(?:[smhdg%]|[kKMGT]){_E}"),
    (
        "version",
        rf"\d+\.\d+\.\d+(?:[-.+]?(?:alpha|beta|rc|a|b|dev|post)\.?\d*)?{_E}"
        rf"|\d+\.\d+(?:a|b|rc|dev|alpha|beta)\d*{_E}"
        rf"|(?:(?<=[Vv]ersion )|(?<=Python )|(?<=release ))\d+\.\d+{_E}",
    ),
    ("hex", rf"(?=[a-fA-F]*\d)[0-9a-fA-F]{{7,}}{_E}"),
    ("code", rf"\d(?=[0-9]*[A-Z])[A-Z0-9]{{2,}}{_E}"),
)
_SHARED: Rules = (  # e-mail, paths, URLs and dotted names open with a letter of either case
    (
        # Only a word followed by "@", "/", ".", "\" or ":" is read by these.
        r"(?=[A-Za-z0-9_%+\-]*+[@/.\\:])",
        (
            ("email", rf"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{{2,}}{_E}"),
            (
                "path",
                rf"(?:[{_SEG}]+/){{2,}}[{_SEG}]*|(?:[{_SEG}]+/)+[{_SEG}]*\.(?:{_EXTENSIONS}){_E}"
                r"|[A-Za-z]:\\[^\s\"'<>|*?]+",
            ),
            ("url", rf"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:{_TLDS})(?:/[{_URL_CHARS}]*)?{_E}"),
            ("path", rf"[A-Za-z0-9_][A-Za-z0-9_.\-]*\.(?:{_EXTENSIONS}){_E}"),
            ("dotted", rf"{_NOT_KEY}[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"),
        ),
    ),
    (
        r"(?=[A-Za-z]*+[\d-])",  # these hold a digit
        (
            ("uuid", _UUID),
            ("hex", rf"(?=[a-fA-F]*\d)[0-9a-fA-F]{{7,}}{_E}"),
            ("version", rf"[vV]\d+(?:\.\d+)*(?:-[A-Za-z0-9.]+)?{_E}"),
            ("code", rf"(?=[A-Z]*\d)[A-Z][A-Z0-9]{{2,}}{_E}"),
        ),
    ),
)
_UPPER: Rules = (
    ("uuid", _UUID),
    (
        r"(?=[A-Z0-9]++[$\-])",
        (
            ("money", rf"(?:US|CA|AU|NZ|HK|A|C){_CURRENCY} ?{_NUM}"),
            ("issue", rf"[A-Z][A-Z0-9]{{1,9}}-\d+{_E}"),
        ),
    ),
    ("date", rf"{_MONTH} (?:\d{{1,2}}{_ORDINAL}(?:,? \d{{4}})?|\d{{4}}){_E}"),
    *_SHARED,
    ("code", rf"(?<!<)(?<!</){_NOT_KEY}(?:{_CODE}){_E}"),
    ("caps", rf"[A-Z]{{3,}}{_E}"),
    ("name", f"{_NOT_SENTENCE_START}[A-Z][a-z\u00df-\u00ff]+(?![A-Za-z0-9_\u00c0-\u024f])"),
)
_LOWER: Rules = (
    ("url", rf"(?:(?:https?|ftps?|wss?|file|s3|gs|git|ssh)://|www\.)[{_URL_CHARS}]*"),
    *_SHARED,
    ("code", rf"(?<!<)(?<!</)(?:{_CODE}){_E}"),
)
_UNDERSCORE: Rules = (("code", rf"{_NOT_KEY}(?:{_CODE}){_E}"),)
_LOWER_GUARD = r"(?=[a-z]++(?:[A-Z0-9_@/]|[.\-:][A-Za-z0-9/]))" + _NOT_KEY
"""A lowercase word is read on only when it holds a capital, a digit, ``_@/`` or an inner
``.-:``: an ordinary word costs one look."""
_OTHER_NAMES: Rules = (
    (
        "name",
        "(?<![A-Za-z0-9_\u00c0-\u024f])[\u00c0-\u00d6\u00d8-\u00de][a-z\u00df-\u00ff]+(?![A-Za-z0-9_\u00c0-\u024f])",
    ),
    ("name", "(?<![\u0400-\u04ff])[\u0410-\u042f][\u0430-\u044f]+(?![\u0400-\u04ff])"),
)


def _alternatives(rules: Rules, kinds: list[str]) -> str:
    """``rules`` as one alternation, each closed by an empty group whose number tells its kind."""
    parts = []
    for head, body in rules:
        if isinstance(body, tuple):
            parts.append(f"{head}(?:{_alternatives(body, kinds)})")
        else:
            kinds.append(head)  # the kind of group number len(kinds)
            parts.append(f"(?:{body})()")
    return "|".join(parts)


def _scanner(kinds: list[str], *, names: bool) -> re.Pattern[str]:
    """One pattern for every rule (names only with ``names``), grouped by first character."""
    upper = _UPPER if names else tuple(rule for rule in _UPPER if rule[0] != "name")
    rules: Rules = (
        (_DIGIT_GUARD, _DIGIT),
        ("(?=[A-Z])", upper),
        (_LOWER_GUARD, _LOWER),
        ("(?=_)", _UNDERSCORE),
        *_SPECIAL,
        *(_OTHER_NAMES if names else ()),
    )
    # The character before a match is matched too: a pattern that opens with a character class
    # lets the engine skip letters and digits in C instead of trying every rule at each one.
    return re.compile(f"[^A-Za-z0-9_](?=[{_FIRST}])(?:{_alternatives(rules, kinds)})")


_DIGIT_GUARD = r"(?=\d++(?:[^\d,}\]\"]|,\d)|\d{7})"
"""A number is read on only when something follows it (a unit, a separator, more digits):
the plain numbers of a JSON result cost one look each."""
_FIRST = "A-Za-z0-9_`/~.$€£¥₹₽₩₺₴₪#\u00c0-\u00de\u0410-\u042f"
"""The characters an identifier may open with."""
_KIND_OF_GROUP: list[str] = [""]  # by group number; group 0 is the whole match
_PROSE = _scanner(_KIND_OF_GROUP, names=True)
"""For what the user and the assistant write: names too."""
_KIND_OF_DATA_GROUP: list[str] = [""]
_DATA = _scanner(_KIND_OF_DATA_GROUP, names=False)
"""For tool calls and results, where a capitalized word is data, not a name."""
_TRAILING = ".,;:!?'\")]}>*"
_SENTENCE_END = frozenset(".!?:;…\n]}|。")  # folded: NFKC made full-width marks ASCII
_OPENERS = " \t\r\"'\u201c\u2018«([{*_#>-•·"
_LIST_MARKER = re.compile(r"(?:^|\s)(?:\d{1,3}|[a-zA-Z])[.)]$")
_INNER_KINDS = frozenset(
    {"url", "email", "path", "uuid", "hex", "issue", "version", "money", "quantity", "date", "time"}
)
"""Kinds that text in backticks keeps when it is one such identifier whole (else ``quoted``)."""
_SUFFIXES = (
    ("s", ""),
    ("es", ""),
    ("ies", "y"),
    ("ed", ""),
    ("ed", "e"),
    ("ing", ""),
    ("ing", "e"),
)
_CODE_SEGMENT = re.compile(r"_|\d|[a-z][A-Z]")


def scan(text: str, *, names: bool) -> Iterator[tuple[str, str]]:
    """``(text, kind)`` of each identifier of folded ``text``; names only when ``names``."""
    text = "\n" + text  # the character before a match, for one at the start
    scanner, kind_of = (_PROSE, _KIND_OF_GROUP) if names else (_DATA, _KIND_OF_DATA_GROUP)
    plain = _PLAIN
    for match in scanner.finditer(text):
        kind = kind_of[match.lastindex or 0]
        start, end = match.span()
        value = text[start + 1 : end]
        if kind in plain:
            yield value, kind
        elif kind == "caps":
            if _is_code(value):
                yield value, "code"
        elif kind == "name":
            if not _is_ordinary(value.lower()) and not _sentence_start(text, start + 1):
                yield value, "name"
        elif kind == "dotted":
            if _is_dotted_code(value, text.startswith("(", end)):
                yield value, "code"
        elif kind == "quoted":
            yield from _quoted(value[1:-1].strip())
        else:  # a URL or a path, which may end at a sentence's full stop
            value = value.rstrip(_TRAILING)
            if len(value) > 1:
                yield value, kind


_PLAIN = frozenset(
    {"email", "uuid", "hex", "issue", "version", "money", "quantity", "date", "time", "code"}
)
"""Kinds taken as matched; the others are looked at once more."""


def _quoted(inner: str) -> Iterator[tuple[str, str]]:
    """Text in backticks: as the one identifier it is, else as quoted text."""
    if not inner:
        return
    whole = _DATA.fullmatch(" " + inner)
    kind = _KIND_OF_DATA_GROUP[whole.lastindex or 0] if whole else None
    if kind in _INNER_KINDS:
        yield inner, kind
    elif kind == "code" or (kind == "dotted" and _is_dotted_code(inner, False)):
        yield inner, "code"
    else:
        yield inner, "quoted"


@functools.lru_cache(maxsize=4096)
def _is_code(caps: str) -> bool:
    """A word in capitals that is a code (``MCO``), not a shout or a label (``ERROR``)."""
    return caps not in COMMON_ACRONYMS and not _is_ordinary(caps.lower())


@functools.lru_cache(maxsize=4096)
def _is_ordinary(word: str) -> bool:
    """An ordinary English word, or its plural, past or -ing form (``Seats``, ``Becoming``)."""
    if word in ORDINARY_WORDS:
        return True
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and word[: -len(suffix)] + replacement in ORDINARY_WORDS:
            return True
    return False


def _is_dotted_code(value: str, called: bool) -> bool:
    """``a.b.c``, ``attrs.define(`` or ``ssim_value.mean``; not ``e.g`` nor ``end.The``."""
    parts = value.split(".")
    return len(parts) >= 3 or called or any(_CODE_SEGMENT.search(part) for part in parts)


def _sentence_start(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence, a line or a list item."""
    before = text[max(0, start - 24) : start]
    stripped = before.rstrip(_OPENERS)
    if not stripped:
        return start <= 24 or "\n" in before
    if "\n" in before[len(stripped) :] or stripped[-1] in _SENTENCE_END:
        return True
    return _LIST_MARKER.search(stripped) is not None


def lowercase_names(names: Collection[str], text: str) -> set[str]:
    """The ``names`` that ``text`` also writes in lowercase (``Painting`` beside ``painting``)."""
    common = set()
    for name in names:
        word = name.lower()
        if word not in text:  # the usual case, told by a substring search in C
            continue
        for match in re.finditer(re.escape(word) + "(?![^\\W\\d_])", text):
            start = match.start()
            if start == 0 or not text[start - 1].isalpha():
                common.add(name)
                break
    return common
