"""langgraph-compaction: keep a LangGraph agent's context under its model's window.

The compaction subgraph runs right before each model call, writes the compacted model input
to ``llm_input_messages`` and never rewrites the conversation. Summaries live in a
SQLAlchemy-backed store, so one process reuses what another made.
"""

from ._compact import create_compact_tool
from ._config import CompactionConfig
from ._recall import create_recall_tool
from ._report import CompactionReport
from ._state import CompactionState
from .graph import create_compaction_graph
from .middleware import CompactionMiddleware
from .store import RecalledMessage, SummaryRecord, SummaryStore

__all__ = [
    "CompactionConfig",
    "CompactionMiddleware",
    "CompactionReport",
    "CompactionState",
    "RecalledMessage",
    "SummaryRecord",
    "SummaryStore",
    "create_compact_tool",
    "create_compaction_graph",
    "create_recall_tool",
]
