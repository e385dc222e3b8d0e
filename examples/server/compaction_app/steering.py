"""Graphs ``steering`` and ``review``: the agent and a person steer compaction (DESIGN 6.11).

- ``steering``: ``create_agent`` with ``CompactionMiddleware(compact_tool=True)``: the agent
  has the ``compact`` tool. Asked to "compact the context, focusing on ...", the stand-in
  model calls it; the tool files a request in the store, and the compaction before the
  agent's next model call summarizes, under the trigger too, with that focus in the prompt.
- ``review``: the ``parent`` graph with ``review: true``: a new summary is put to a person
  before its first use. The run stops with an interrupt whose value is
  ``{"type": "compaction_review", "thread_id", "version", "summary"}``; resume it with
  ``{"action": "accept"}``, ``{"action": "edit", "summary": "..."}`` or
  ``{"action": "reject"}`` (``langgraph_sdk``: ``command={"resume": ...}``).
"""

from __future__ import annotations

from langchain.agents import create_agent

from langgraph_compaction import CompactionConfig, CompactionMiddleware

from .parent import build_parent
from .settings import CONFIG, STORE, agent_model, summarizer
from .tools import TOOLS

__all__ = ["review", "steering"]

steering = create_agent(
    agent_model,
    tools=TOOLS,
    middleware=[CompactionMiddleware(CONFIG, model=summarizer, store=STORE, compact_tool=True)],
    name="steering",
)  # no checkpointer: the server provides its own

review = build_parent(CompactionConfig(**{**CONFIG.model_dump(), "review": True}), "review")
