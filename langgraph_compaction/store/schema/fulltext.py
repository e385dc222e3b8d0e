"""Full text over ``compaction_messages``: the database objects, and queries made safe.

SQLite: an FTS5 external-content table, ``compaction_messages_fts``, kept in step with the
table by three triggers, Porter stemming, bm25 ranking. PostgreSQL: a generated ``tsvector``
column, ``search_vector`` (``english`` configuration: stemming and stop words), under a GIN
index, ranked with ``ts_rank``. Neither is in the SQLAlchemy metadata (it cannot declare
them portably): :func:`create_fulltext` adds them after the table, in ``create_all`` and in
migration 0004 alike. Changing any statement here needs a new migration.

A user's query never reaches either engine's query syntax: :func:`query_terms` keeps its
words only (letters and digits), drops stop words, and each word is then bound or quoted as
a plain term, so quotes, ``*``, ``:``, ``NEAR``, ``AND``/``OR``/``NOT`` and SQL are just text.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Connection

__all__ = [
    "FTS_TABLE",
    "POSTGRES_WEIGHTS",
    "SQLITE_WEIGHTS",
    "STOP_WORDS",
    "create_fulltext",
    "drop_fulltext",
    "is_fulltext_object",
    "query_terms",
]

FTS_TABLE = "compaction_messages_fts"
"""The FTS5 table (SQLite); its shadow tables carry this name with a suffix."""

_FTS_COLUMNS = "thread_id, text, previous_text, next_text, session_date"
"""``thread_id`` narrows a match to one thread inside FTS5 (weight 0: it never ranks)."""

SQLITE_WEIGHTS = (0.0, 1.0, 0.5, 0.3, 0.6)
"""bm25 weights of the FTS5 columns above, measured on LoCoMo (benchmarks/recall.py)."""

POSTGRES_WEIGHTS = "{1.0, 0.3, 0.5, 1.0}"
"""ts_rank weights of labels D (session date), C (next), B (previous), A (the text)."""

_SQLITE = (
    f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5({_FTS_COLUMNS}, "
    "content='compaction_messages', content_rowid='id', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    f"CREATE TRIGGER compaction_messages_fts_insert AFTER INSERT ON compaction_messages BEGIN "
    f"INSERT INTO {FTS_TABLE}(rowid, {_FTS_COLUMNS}) VALUES (new.id, new.thread_id, "
    "new.text, new.previous_text, new.next_text, new.session_date); END",
    f"CREATE TRIGGER compaction_messages_fts_delete AFTER DELETE ON compaction_messages BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, {_FTS_COLUMNS}) VALUES ('delete', old.id, "
    "old.thread_id, old.text, old.previous_text, old.next_text, old.session_date); END",
    f"CREATE TRIGGER compaction_messages_fts_update AFTER UPDATE ON compaction_messages BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, {_FTS_COLUMNS}) VALUES ('delete', old.id, "
    "old.thread_id, old.text, old.previous_text, old.next_text, old.session_date); "
    f"INSERT INTO {FTS_TABLE}(rowid, {_FTS_COLUMNS}) VALUES (new.id, new.thread_id, "
    "new.text, new.previous_text, new.next_text, new.session_date); END",
)

_POSTGRES = (
    "ALTER TABLE compaction_messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ("
    "setweight(to_tsvector('english'::regconfig, text), 'A') || "
    "setweight(to_tsvector('english'::regconfig, previous_text), 'B') || "
    "setweight(to_tsvector('english'::regconfig, next_text), 'C') || "
    "setweight(to_tsvector('english'::regconfig, coalesce(session_date, '')), 'D')) STORED",
    "CREATE INDEX ix_compaction_messages_search ON compaction_messages USING GIN (search_vector)",
)

_SQLITE_DROP = (
    "DROP TRIGGER IF EXISTS compaction_messages_fts_update",
    "DROP TRIGGER IF EXISTS compaction_messages_fts_delete",
    "DROP TRIGGER IF EXISTS compaction_messages_fts_insert",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
)


def create_fulltext(conn: Connection) -> None:
    """Add the full-text objects over a just-created ``compaction_messages``."""
    statements = {"sqlite": _SQLITE, "postgresql": _POSTGRES}.get(conn.dialect.name, ())
    for statement in statements:
        conn.exec_driver_sql(statement)


def drop_fulltext(conn: Connection) -> None:
    """Remove them again (SQLite; PostgreSQL's go with the table)."""
    if conn.dialect.name == "sqlite":
        for statement in _SQLITE_DROP:
            conn.exec_driver_sql(statement)


def is_fulltext_object(name: str | None, type_: str, parent_names: Any) -> bool:
    """Whether a reflected name is one of these objects, which the metadata cannot declare.

    For Alembic's ``include_name`` hook (negated): schema comparisons skip the FTS5 table and
    its shadow tables, and PostgreSQL's generated column and its index.
    """
    if name is None:
        return False
    if type_ == "table":
        return name == FTS_TABLE or name.startswith(f"{FTS_TABLE}_")
    return name in ("search_vector", "ix_compaction_messages_search")


_WORD = re.compile(r"[^\W_]+")
_MAX_TERMS = 32
"""A pasted paragraph is still one quick search."""

_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing don down during each few for
    from further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not now of off on once only or other
    our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours yourself
    yourselves ll re ve isn aren wasn weren hasn haven hadn doesn didn won wouldn shan
    shouldn can couldn mustn let"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
"""Snowball's English list (PostgreSQL's ``english`` drops the same), contractions split."""


def query_terms(text: str) -> list[str]:
    """The searchable words of a query: lower-cased, stop words and lone letters dropped.

    Only letters and digits survive, so any term is safe inside an FTS5 string or a
    tsquery; an empty result means there is nothing to search for.
    """
    words = (w for w in _WORD.findall(text.casefold()) if w not in STOP_WORDS)
    kept = [w for w in words if len(w) > 1 or w.isdigit()]
    return list(dict.fromkeys(kept))[:_MAX_TERMS]
