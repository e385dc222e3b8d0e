"""Graph ``agent``: ``langchain.agents.create_agent`` with ``CompactionMiddleware``.

The middleware compacts each model request's messages (``awrap_model_call`` on the server's
async path) and never the agent's state, so the thread keeps every message. Its pipeline runs
as a nested graph of the model node: its custom events reach a client that streams with
``stream_subgraphs=True``.
"""

from __future__ import annotations

from langchain.agents import create_agent

from langgraph_compaction import CompactionMiddleware

from .settings import CONFIG, STORE, agent_model, summarizer
from .tools import TOOLS

__all__ = ["graph"]

graph = create_agent(
    agent_model,
    tools=TOOLS,
    middleware=[CompactionMiddleware(CONFIG, model=summarizer, store=STORE)],
    name="agent",
)  # no checkpointer: the server provides its own
