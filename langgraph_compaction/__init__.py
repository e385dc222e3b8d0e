"""langgraph-compaction: keep a LangGraph agent's context under its model's window.

The compaction subgraph runs right before each model call, writes the compacted model input
to ``llm_input_messages`` and never rewrites the conversation. Summaries live in a
SQLAlchemy-backed store, so one process reuses what another made.
"""

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.graph import create_compaction_graph
from langgraph_compaction.middleware import CompactionMiddleware
from langgraph_compaction.pipeline.report import CompactionReport
from langgraph_compaction.pipeline.state import CompactionState
from langgraph_compaction.store import RecalledMessage, SummaryRecord, SummaryStore
from langgraph_compaction.tools import create_compact_tool, create_recall_tool

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
