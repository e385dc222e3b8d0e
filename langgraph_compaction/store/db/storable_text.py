"""Text the databases refuse, made storable at the store's edge.

PostgreSQL's ``text`` cannot hold NUL (U+0000), and neither driver can encode a lone
surrogate (U+D800..U+DFFF, which a Python str may hold, e.g. from a JSON ``"\\ud800"``
escape) as UTF-8. Either would fail the whole write, so a conversation holding one could
never be summarized, nor its failures recorded. Every statement the store runs therefore
passes its string parameters through :func:`storable` (a ``before_cursor_execute`` hook on
both engines, see :func:`guard_engine`): a NUL and a lone surrogate become U+FFFD, the
replacement character; two surrogates that form a pair become the character they encode.

The same on SQLite and PostgreSQL, so the same thread reads the same back on either. What
the store returns is what it holds: a summary served from the store is byte for byte the one
the call that made it put in the model input. Clean text, nearly all of it, is passed on as
it is after a check in C.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["REPLACEMENT", "guard_engine", "storable"]

REPLACEMENT = "\ufffd"
"""What a NUL or a lone surrogate is stored as."""

_REFUSED = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` as the store keeps it: NUL and lone surrogates replaced by U+FFFD."""
    if text.isascii():
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    if _REFUSED.search(text) is None:
        return text
    # UTF-16 joins a high and a low surrogate into one character; a lone one is replaced.
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined.replace("\x00", REPLACEMENT)


def _storable_row(row: Any) -> Any:
    """One statement's parameters (a tuple or a mapping), the same object when all are clean."""
    if type(row) is tuple:  # SQLite's parameters; the mapping is PostgreSQL's
        values: Iterable[Any] = row
    elif isinstance(row, Mapping):
        values = row.values()
    elif isinstance(row, Sequence) and not isinstance(row, str | bytes):
        values = row
    else:
        return row
    for value in values:
        # ASCII without NUL, nearly every value, is decided without a call.
        suspect = isinstance(value, str) and (not value.isascii() or "\x00" in value)
        if suspect and storable(value) is not value:
            break
    else:  # the common case: nothing to replace, nothing copied
        return row
    if isinstance(row, Mapping):
        return {k: storable(v) if isinstance(v, str) else v for k, v in row.items()}
    fixed = [storable(v) if isinstance(v, str) else v for v in row]
    return tuple(fixed) if isinstance(row, tuple) else fixed


def _storable_parameters(
    _conn: Any,
    _cursor: Any,
    statement: str,
    parameters: Any,
    _context: Any,
    executemany: bool,
) -> tuple[str, Any]:
    if executemany and isinstance(parameters, Sequence):
        return statement, [_storable_row(row) for row in parameters]
    return statement, _storable_row(parameters)


def guard_engine(engine: Engine) -> None:
    """Make every string parameter of ``engine``'s statements storable (an async engine: pass
    its ``sync_engine``)."""
    event.listen(engine, "before_cursor_execute", _storable_parameters, retval=True)
