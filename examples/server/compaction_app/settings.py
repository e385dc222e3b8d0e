"""What both graphs share: the compaction settings, the summary store and the models.

The numbers are small so that a 30-turn conversation is summarized several times: the
trigger fires past 1,500 tokens of conversation, the newest 6 messages always stay verbatim.
A real deployment would use e.g. ``{"type": "fraction", "value": 0.8}`` with its model's
context window.

The store URL comes from ``$COMPACTION_STORE_URL`` (default: ``sqlite:///compaction.db`` in
the folder the server runs in); point several servers at one PostgreSQL URL to share
summaries. Nothing connects when the app is imported: the store opens on first use.
"""

from __future__ import annotations

import os

from langgraph_compaction import CompactionConfig, SummaryStore

from .models import DigestSummarizer, TravelDeskModel

__all__ = [
    "CONFIG",
    "DEFAULT_STORE_URL",
    "STORE",
    "STORE_URL_ENV",
    "agent_model",
    "summarizer",
]

STORE_URL_ENV = "COMPACTION_STORE_URL"
DEFAULT_STORE_URL = "sqlite:///compaction.db"

CONFIG = CompactionConfig(
    trigger={"type": "tokens", "value": 1500},
    keep={"type": "messages", "value": 6},
    max_summary_tokens=256,
)

STORE = SummaryStore(os.environ.get(STORE_URL_ENV, DEFAULT_STORE_URL))
"""One store for both graphs: one connection pool per process."""

agent_model = TravelDeskModel()
summarizer = DigestSummarizer()
