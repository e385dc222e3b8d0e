"""The summary store: SQLAlchemy tables, a sync + async SummaryStore, and an inspect CLI.

Run ``python -m langgraph_compaction.store inspect --url URL`` to see what a store holds,
``check --url URL`` to check its rows' consistency, ``migrate --url URL`` to upgrade it,
``edit --url URL --thread T --text S`` to store a person's text as the thread's newest summary,
``revoke --url URL --thread T [--version N]`` to withdraw a summary from use.
"""

from langgraph_compaction.store.db.storable_text import storable
from langgraph_compaction.store.records import (
    CompactionRequest,
    IndexedMessage,
    IntegrityColumns,
    RecalledMessage,
    ReviewDraft,
    SummaryRecord,
    ThreadControls,
    ThreadState,
)
from langgraph_compaction.store.sql.leases import Lease
from langgraph_compaction.store.summary_store import SummaryStore

__all__ = [
    "CompactionRequest",
    "IndexedMessage",
    "IntegrityColumns",
    "Lease",
    "RecalledMessage",
    "ReviewDraft",
    "SummaryRecord",
    "SummaryStore",
    "ThreadControls",
    "ThreadState",
    "storable",
]
