"""SummaryStore's search methods: total recall over the messages summaries evicted.

A mixin, like ``_leasing``, so that the store's module stays one screenful per concern; it
needs only the store's ``_db``. Indexing happens in ``add_summary`` (``recall_messages=``),
in the summary's own transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from langgraph_compaction.store.database import Database
from langgraph_compaction.store.records import RecalledMessage
from langgraph_compaction.store.sql import search as search_sql

__all__ = ["RecallMethods"]

_MAX_LIMIT = 100


class RecallMethods:
    """``search_messages`` and ``asearch_messages``."""

    _db: Database

    def search_messages(
        self, thread_id: str, query: str, *, namespace: str = "default", limit: int = 5
    ) -> list[RecalledMessage]:
        """The thread's evicted messages that best match ``query``, best first.

        Any text is a valid query: only its words are searched (stop words dropped, words
        stemmed), never FTS or tsquery syntax; a query without a searchable word returns [].

        Raises:
            ValueError: ``limit`` is not between 1 and 100.
            SummaryStoreError: the database failed.
        """
        return self._db.run(_search_op(thread_id, query, namespace, limit))

    async def asearch_messages(
        self, thread_id: str, query: str, *, namespace: str = "default", limit: int = 5
    ) -> list[RecalledMessage]:
        """Async :meth:`search_messages`."""
        return await self._db.arun(_search_op(thread_id, query, namespace, limit))


def _search_op(
    thread_id: str, query: str, namespace: str, limit: int
) -> Callable[[Connection], list[RecalledMessage]]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _MAX_LIMIT:
        raise ValueError(f"limit must be an int from 1 to {_MAX_LIMIT}, got {limit!r}")
    if not isinstance(query, str):
        raise ValueError(f"query must be a str, got {type(query).__name__}")
    return lambda conn: search_sql.search_messages(conn, thread_id, namespace, query, limit)
