"""Total recall in the database: index the messages a summary evicts, and search them.

Ranking was studied on LoCoMo's conversations (``benchmarks/recall.py``), where the words of
a question are often split between a message and its neighbours, dates live in a session
header, and names are frequent. So each row also carries the two messages before and after
it (down-weighted columns), and the last date the conversation mentioned before it. Rarer
words weigh more: bm25 on SQLite, an inverse document frequency per term times ``ts_rank``
on PostgreSQL. A word of the query that is a message *name* (a speaker's, a tool's) is not
searched for but multiplies the score of that name's messages; the share of the query's
words a message holds, and for a *when* question a time expression, lift it further.

Like ``store.sql.summaries``, each operation is a plain function over a sync ``Connection``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any

from sqlalchemy import Connection, bindparam, func, select, text, update

from langgraph_compaction.store.records import IndexedMessage, RecalledMessage
from langgraph_compaction.store.schema.fulltext import (
    FTS_TABLE,
    POSTGRES_WEIGHTS,
    SQLITE_WEIGHTS,
    query_terms,
)
from langgraph_compaction.store.sql.summaries import dialect_insert, messages

__all__ = ["NAME_BOOST", "content_hash", "find_date", "index_messages", "search_messages"]

NAME_BOOST = 2.2
"""Score factor of a message whose name is a word of the query (LoCoMo: +0.05 recall@5)."""

_NEIGHBOURS = 2
"""Messages on each side whose text goes into previous_text / next_text."""

_NEIGHBOUR_CHARS = 1000
"""A long tool output next door should not drown the message's own words."""

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    r"|\d{4}-\d{2}-\d{2})\b",
    re.IGNORECASE,
)

_M = messages.c


def content_hash(message: IndexedMessage) -> str:
    """sha256 of type, name and text: the same message re-indexed hashes the same."""
    parts = (message.type, message.name or "", message.text)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def find_date(message_text: str) -> str | None:
    """The first calendar date a message mentions ("8 May, 2023", "2023-05-08"), if any."""
    found = _DATE.search(message_text)
    return None if found is None else found.group(0)


def _side(texts: dict[int, str], position: int, step: int) -> str:
    """The texts of up to ``_NEIGHBOURS`` positions beside ``position``, in reading order."""
    found = [
        texts[position + step * k][:_NEIGHBOUR_CHARS]
        for k in range(1, _NEIGHBOURS + 1)
        if position + step * k in texts
    ]
    return "\n".join(found if step > 0 else reversed(found))


def index_messages(
    conn: Connection, thread_id: str, namespace: str, batch: Sequence[IndexedMessage]
) -> None:
    """Index ``batch`` in the caller's write transaction; a message already there is skipped.

    Neighbour texts and dates come from the batch and from the rows already indexed next to
    it; the two rows just before the batch get their ``next_text`` completed.
    """
    unique = {(m.message_id, content_hash(m)): m for m in batch}
    if not unique:
        return
    ordered = sorted(unique.items(), key=lambda item: item[1].position)
    low, high = ordered[0][1].position, ordered[-1][1].position
    scope = (_M.thread_id == thread_id, _M.namespace == namespace)
    near = conn.execute(
        select(_M.id, _M.position, _M.text, _M.next_text)
        .where(*scope, _M.position.between(low - _NEIGHBOURS, high + _NEIGHBOURS))
        .order_by(_M.position, _M.id)
    ).all()
    texts = {row.position: row.text for row in near}
    texts.update({m.position: m.text for _, m in ordered})
    date = conn.scalar(
        select(_M.session_date)
        .where(*scope, _M.position < low)
        .order_by(_M.position.desc(), _M.id.desc())
        .limit(1)
    )
    now, rows = datetime.now(UTC), []
    for (message_id, digest), message in ordered:
        date = find_date(message.text) or date
        rows.append(
            {
                "thread_id": thread_id,
                "namespace": namespace,
                "position": message.position,
                "message_id": message_id,
                "type": message.type,
                "name": message.name,
                "text": message.text,
                "previous_text": _side(texts, message.position, -1),
                "next_text": _side(texts, message.position, 1),
                "session_date": date,
                "content_hash": digest,
                "created_at": now,
            }
        )
    key = [_M.thread_id, _M.namespace, _M.message_id, _M.content_hash]
    conn.execute(dialect_insert(conn, messages).on_conflict_do_nothing(index_elements=key), rows)
    for row in near:  # the rows before the batch now have later neighbours
        if row.position < low and row.next_text != (after := _side(texts, row.position, 1)):
            conn.execute(update(messages).where(_M.id == row.id).values(next_text=after))


def search_messages(
    conn: Connection, thread_id: str, namespace: str, query: str, limit: int
) -> list[RecalledMessage]:
    """The thread's indexed messages best matching ``query``, best first; [] without terms.

    Two passes: the engine's own ranking of the content words (the query's names left out)
    cuts the matches to the best ``_CUT``; those are scored again with the name boost and
    the share of the content words each one holds, and a question asking *when* prefers
    messages that say when (``yesterday``, ``last week``, ...).
    """
    terms = query_terms(query)
    if not terms:
        return []
    scope = {"thread_id": thread_id, "namespace": namespace}
    names = _names_in(conn, scope, terms)
    content = [term for term in terms if term not in names] or terms
    params: dict[str, Any] = {**scope, "names": names or [""], "fetch": limit + _SPARE}
    if conn.dialect.name == "postgresql":
        span = conn.scalar(
            select(func.max(_M.position) - func.min(_M.position) + 1).where(
                _M.thread_id == thread_id, _M.namespace == namespace
            )
        )
        statement = _postgres_search(len(content), thread_first=(span or 0) <= _THREAD_SCAN)
        params.update({f"t{i}": term for i, term in enumerate(content)})
        rows = conn.execute(statement, {**params, "cut": _CUT}).all()
    else:
        thread = _thread_match(thread_id)
        params["match"] = thread + _any_of(content)
        params.update({f"c{i}": thread + _any_of([t]) for i, t in enumerate(content)})
        cut = _sqlite_search(len(content), cut=True)
        rows = conn.execute(cut, {**params, "cut": _CUT}).all()
        if len(rows) < params["fetch"] and _cut_was_full(conn, params):
            rows = conn.execute(_sqlite_search(len(content), cut=False), params).all()
    when = _WHEN.search(query) is not None
    scored = [(float(row[5]) * (_WHEN_BOOST if when and _SAYS_WHEN.search(row[4]) else 1.0), row)
              for row in rows]  # fmt: skip
    scored.sort(key=lambda item: (-item[0], -item[1][1]))
    return [RecalledMessage(r[0], r[1], r[2], r[3], r[4], score) for score, r in scored[:limit]]


_CUT = 200
"""Matches the engine's first ranking keeps for the second (LoCoMo: as good as all)."""

_SPARE = 10
"""Extra rows the second pass returns so the *when* preference can reorder them."""

COVERAGE = 0.5
"""Score factor ``1 + COVERAGE x share of the content words`` a message and its neighbours
hold (LoCoMo: +0.010 recall@5, +0.008 @10): one rare word should not beat all the words."""

_WHEN_BOOST = 1.5
"""Score factor of a message saying when, for a question asking when (LoCoMo temporal:
+0.02 @10)."""

_WHEN = re.compile(r"\b(?:when|how long|what (?:year|month|day|date|time))\b", re.IGNORECASE)
_SAYS_WHEN = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|recently|ago|the other day|"
    r"(?:last|next|this|past) (?:week|weekend|month|year|night|morning|summer|winter|spring|"
    r"fall|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:few|couple of) (?:days|weeks|months))\b",
    re.IGNORECASE,
)

_RECENT = 200
"""Names are looked for among the thread's latest indexed messages: a bounded read."""


def _names_in(conn: Connection, scope: dict[str, str], terms: list[str]) -> list[str]:
    """The query's words that are names of the thread's messages (speakers, tools).

    A name tells whose message is wanted, not what it says: people address each other by
    name, so as a search word it finds the other speaker's messages (LoCoMo: +0.015).
    """
    recent = (
        select(_M.name)
        .where(_M.thread_id == scope["thread_id"], _M.namespace == scope["namespace"])
        .order_by(_M.position.desc())
        .limit(_RECENT)
        .subquery()
    )
    found = {str(name).casefold() for name in conn.scalars(select(recent.c.name).distinct())
             if name}  # fmt: skip
    return [term for term in terms if term in found]


def _thread_match(thread_id: str) -> str:
    """The FTS5 filter narrowing a match to the thread's rows (the join checks exactly).

    Thread words hold letters and digits only, so quoting them is enough."""
    thread_words = " ".join(re.findall(r"[^\W_]+", thread_id.casefold()))
    return f'thread_id : "{thread_words}" AND ' if thread_words else ""


def _any_of(terms: Iterable[str]) -> str:
    """An FTS5 query of plain terms over the ranked columns.

    Terms hold letters and digits only, so quoting them is enough: no FTS5 operator or
    column filter can come from the user.
    """
    words = " OR ".join(f'"{term}"' for term in terms)
    return f"{{text previous_text next_text session_date}} : ({words})"


def _cut_was_full(conn: Connection, params: dict[str, Any]) -> bool:
    """Whether the first cut may have been filled by other namespaces' or threads' rows."""
    count = conn.scalar(
        text(
            f"SELECT count(*) FROM (SELECT 1 FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :match "
            "LIMIT :cut)"
        ),
        {"match": params["match"], "cut": _CUT},
    )
    return bool(count and count >= _CUT)


_BOOST = f"(CASE WHEN lower(m.name) IN :names THEN {NAME_BOOST} ELSE 1.0 END)"


@cache
def _sqlite_search(count: int, *, cut: bool) -> Any:
    """bm25 over the FTS5 index (first ``:cut`` only), then boost and word coverage."""
    bm25 = f"-bm25({FTS_TABLE}, {', '.join(map(str, SQLITE_WEIGHTS))})"
    first = f"SELECT rowid AS id, {bm25} AS r FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :match" + (
        " ORDER BY r DESC LIMIT :cut" if cut else ""
    )
    holds = " + ".join(
        f"(m.id IN (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :c{i}))"
        for i in range(count)
    )
    coverage = f"(1 + {COVERAGE} * ({holds}) / {count}.0)" if count > 1 else "1.0"
    return text(
        f"WITH firstcut AS MATERIALIZED ({first}) "
        "SELECT m.message_id, m.position, m.type, m.name, m.text, "
        f"firstcut.r * {_BOOST} * {coverage} AS score "
        "FROM firstcut JOIN compaction_messages AS m ON m.id = firstcut.id "
        "WHERE m.thread_id = :thread_id AND m.namespace = :namespace "
        "ORDER BY score DESC, m.position DESC LIMIT :fetch"
    ).bindparams(bindparam("names", expanding=True))


_THREAD_SCAN = 5000
"""PostgreSQL: a thread up to this many positions is read through its own index and each
row tested, which beats the GIN index whose matches span every thread of the store; a
longer one asks the GIN index (100,000 messages in threads of 600: p95 22-28 -> 8-9 ms)."""


@cache
def _postgres_search(count: int, *, thread_first: bool) -> Any:
    """One statement: the thread's matches, each term's document frequency, two rankings.

    ``ts_rank`` knows nothing of how rare a word is, so each term's rank is weighted by
    its inverse document frequency in the thread, as bm25 does. That rank is the costly
    part, so it runs on a first cut only: the ``:cut`` matches holding the most
    idf-weighted content words (a cheap ``@@`` per term). The thread's size in the idf is
    the span of its positions, two index probes, where a count would read every row.
    """
    query = [f"plainto_tsquery('english', :t{i})" for i in range(count)]
    holds = ", ".join(f"(m.search_vector @@ {q})::int AS h{i}" for i, q in enumerate(query))
    frequencies = ", ".join(f"sum(h{i}) AS d{i}" for i in range(count))
    idf = ", ".join(
        f"ln(1 + (total.n - df.d{i} + 0.5) / (df.d{i} + 0.5))::float8 AS w{i}" for i in range(count)
    )
    first = " + ".join(f"w{i} * h{i}" for i in range(count))
    rank = " + ".join(
        f"w{i} * ts_rank('{POSTGRES_WEIGHTS}'::float4[], v, {q}, 1)" for i, q in enumerate(query)
    )
    share = " + ".join(f"h{i}" for i in range(count))
    coverage = f"(1 + {COVERAGE} * ({share}) / {count}.0)" if count > 1 else "1.0"
    source = "compaction_messages"
    if thread_first:  # OFFSET 0: the word test is not pushed down to the GIN index
        source = (
            "(SELECT id, thread_id, namespace, search_vector FROM compaction_messages "
            "WHERE thread_id = :thread_id AND namespace = :namespace OFFSET 0)"
        )
    return text(
        "WITH hits AS MATERIALIZED (SELECT m.id, "
        f"{holds} FROM {source} AS m WHERE m.thread_id = :thread_id "
        f"AND m.namespace = :namespace AND m.search_vector @@ ({' || '.join(query)})), "
        f"df AS MATERIALIZED (SELECT {frequencies} FROM hits), "
        "total AS MATERIALIZED (SELECT max(position) - min(position) + 1 AS n "
        "FROM compaction_messages WHERE thread_id = :thread_id AND namespace = :namespace), "
        f"idf AS MATERIALIZED (SELECT {idf} FROM df, total), "
        f"firstcut AS MATERIALIZED (SELECT cut.id, ({rank}) * {coverage} AS r FROM "
        f"(SELECT hits.*, idf.* FROM hits, idf ORDER BY {first} DESC LIMIT :cut) AS cut "
        "JOIN LATERAL (SELECT search_vector AS v FROM compaction_messages WHERE id = cut.id) "
        "AS vector ON true) "
        f"SELECT m.message_id, m.position, m.type, m.name, m.text, firstcut.r * {_BOOST} AS score "
        "FROM firstcut JOIN compaction_messages AS m ON m.id = firstcut.id "
        "ORDER BY score DESC, m.position DESC LIMIT :fetch"
    ).bindparams(bindparam("names", expanding=True))
