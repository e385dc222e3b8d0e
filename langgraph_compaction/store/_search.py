"""Total recall in the database: index the messages a summary evicts, and search them.

Ranking was studied on LoCoMo's conversations (``benchmarks/recall.py``), where the words of
a question are often split between a message and its neighbours, dates live in a session
header, and names are frequent. So each row also carries the two messages before and after
it (down-weighted columns), the last date the conversation mentioned before it, and a match
on a message's *name* (a speaker's, a tool's) multiplies its score. Rarer words weigh more:
bm25 on SQLite, an inverse document frequency per term times ``ts_rank_cd`` on PostgreSQL.

Like ``_tables``, each operation is a plain function over a sync ``Connection``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any

from sqlalchemy import Connection, bindparam, select, text, update

from langgraph_compaction.store._fulltext import (
    FTS_TABLE,
    POSTGRES_WEIGHTS,
    SQLITE_WEIGHTS,
    query_terms,
)
from langgraph_compaction.store._records import IndexedMessage, RecalledMessage
from langgraph_compaction.store._tables import dialect_insert, messages

__all__ = ["NAME_BOOST", "content_hash", "find_date", "index_messages", "search_messages"]

NAME_BOOST = 1.8
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
    """The thread's indexed messages best matching ``query``, best first; [] without terms."""
    terms = query_terms(query)
    if not terms:
        return []
    params: dict[str, Any] = {"thread_id": thread_id, "namespace": namespace, "limit": limit}
    params["names"] = terms
    if conn.dialect.name == "postgresql":
        statement = _postgres_search(len(terms))
        params.update({f"t{i}": term for i, term in enumerate(terms)})
    else:
        statement = _SQLITE_SEARCH
        params["match"] = _fts_match(thread_id, terms)
    return [
        RecalledMessage(row[0], row[1], row[2], row[3], row[4], float(row[5]))
        for row in conn.execute(statement, params)
    ]


def _fts_match(thread_id: str, terms: Iterable[str]) -> str:
    """An FTS5 query of plain terms, narrowed to the thread's rows inside the index.

    Terms and thread words hold letters and digits only, so quoting them is enough: no FTS5
    operator or column filter can come from the user. The thread words only narrow the
    match; the join checks the thread exactly.
    """
    words = " OR ".join(f'"{term}"' for term in terms)
    match = f"{{text previous_text next_text session_date}} : ({words})"
    thread_words = " ".join(re.findall(r"[^\W_]+", thread_id.casefold()))
    return f'thread_id : "{thread_words}" AND {match}' if thread_words else match


_BOOST = f"(CASE WHEN lower(m.name) IN :names THEN {NAME_BOOST} ELSE 1.0 END)"

_SQLITE_SEARCH = text(
    "SELECT m.message_id, m.position, m.type, m.name, m.text, "
    f"-bm25({FTS_TABLE}, {', '.join(map(str, SQLITE_WEIGHTS))}) * {_BOOST} AS score "
    f"FROM {FTS_TABLE} JOIN compaction_messages AS m ON m.id = {FTS_TABLE}.rowid "
    f"WHERE {FTS_TABLE} MATCH :match AND m.thread_id = :thread_id AND m.namespace = :namespace "
    "ORDER BY score DESC, m.position DESC LIMIT :limit"
).bindparams(bindparam("names", expanding=True))


@cache
def _postgres_search(count: int) -> Any:
    """One statement: the thread's matches, each term's document frequency, the ranking.

    ``ts_rank_cd`` knows nothing of how rare a word is, so each term's rank is weighted by
    its inverse document frequency in the thread, as bm25 does.
    """
    query = [f"plainto_tsquery('english', :t{i})" for i in range(count)]
    frequencies = ", ".join(
        f"count(*) FILTER (WHERE v @@ {q}) AS d{i}" for i, q in enumerate(query)
    )
    rank = " + ".join(
        f"ln(1 + (total.n - df.d{i} + 0.5) / (df.d{i} + 0.5)) "
        f"* ts_rank_cd('{POSTGRES_WEIGHTS}'::float4[], v, {q}, 1)"
        for i, q in enumerate(query)
    )
    return text(
        "WITH hits AS MATERIALIZED (SELECT m.message_id, m.position, m.type, m.name, m.text, "
        "m.search_vector AS v FROM compaction_messages AS m WHERE m.thread_id = :thread_id "
        f"AND m.namespace = :namespace AND m.search_vector @@ ({' || '.join(query)})), "
        f"df AS MATERIALIZED (SELECT {frequencies} FROM hits), "
        "total AS MATERIALIZED (SELECT count(*) AS n FROM compaction_messages "
        "WHERE thread_id = :thread_id AND namespace = :namespace) "
        f"SELECT m.message_id, m.position, m.type, m.name, m.text, ({rank}) * {_BOOST} AS score "
        "FROM hits AS m, df, total ORDER BY score DESC, m.position DESC LIMIT :limit"
    ).bindparams(bindparam("names", expanding=True))
