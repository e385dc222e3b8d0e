"""The agent's ``recall`` tool: search the messages compaction evicted, get the originals back.

The tool has one argument, ``query``. It reads the thread id from the run's config, and,
where the agent's state is injected (``ToolNode``, ``create_react_agent``, ``create_agent``),
it keeps only hits whose message is still in the current ``messages`` with the same text, so
a forked or edited history never gets another branch's words back. A store that fails gives
a short sentence, never an exception: recall is a help, not a dependency of the run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import InjectedState

from ._prompts import render_transcript
from .store import RecalledMessage, SummaryStore, storable

__all__ = ["create_recall_tool", "format_hits"]

_log = logging.getLogger("langgraph_compaction")

MAX_HIT_CHARS = 600
"""A hit longer than this is cut, with a marker saying how much was left out."""

_OVERFETCH = 4
"""Hits fetched per hit returned, so that dropping other branches' still leaves enough."""

_DESCRIPTION = (
    "Search the earlier messages of this conversation that are no longer shown in full "
    "(they were summarized). Give words the message likely contained: names, numbers, "
    "error messages, places. Returns the best matches with their position in the history."
)


def _current_texts(state: Any) -> dict[str, str] | None:
    """Message id (or ``#<position>``) -> rendered text, from the agent state; None without."""
    if state is None:
        return None
    found = (
        state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    )
    if not isinstance(found, Sequence):
        return None
    texts = {}
    for position, message in enumerate(found):
        if isinstance(message, BaseMessage):
            # As the store holds them: text a database refuses is replaced there.
            key, text = message.id or f"#{position}", render_transcript([message])
            texts[storable(key)] = storable(text)
    return texts


def format_hits(query: str, hits: Sequence[RecalledMessage]) -> str:
    """Compact text for the model: one block per hit, ``[position] name: role: text``."""
    if not hits:
        return f"No earlier message matches {query!r}."
    lines = [f"{len(hits)} earlier message(s) match {query!r}, best first:"]
    for hit in hits:
        text = hit.text
        if len(text) > MAX_HIT_CHARS:
            text = f"{text[:MAX_HIT_CHARS]} [... {len(text) - MAX_HIT_CHARS} more characters cut]"
        who = f" ({hit.name})" if hit.name and hit.type != "tool" else ""
        lines.append(f"[message {hit.position}]{who} {text}")
    return "\n".join(lines)


def create_recall_tool(
    store: SummaryStore, *, namespace: str = "default", limit: int = 5, name: str = "recall"
) -> BaseTool:
    """The ``recall`` tool over ``store``: give it to the agent next to compaction's summary.

    Args:
        store: the SummaryStore compaction indexes evicted messages in (``recall.enabled``).
        namespace: the compaction namespace, as given to the graph or middleware.
        limit: at most this many hits per call (1 to 100).
        name: the tool's name, as the model sees it.

    ```python
    tool = create_recall_tool(store)
    agent = create_agent(model, tools=[tool, *tools], middleware=[CompactionMiddleware(...)])
    ```
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
        raise ValueError(f"limit must be an int from 1 to 100, got {limit!r}")
    fetch = min(100, limit * _OVERFETCH)

    def keep(hits: list[RecalledMessage], state: Any) -> list[RecalledMessage]:
        texts = _current_texts(state)
        if texts is not None:
            hits = [hit for hit in hits if texts.get(hit.message_id) == hit.text]
        return hits[:limit]

    def thread_of(config: RunnableConfig) -> str:
        return str((config.get("configurable") or {}).get("thread_id") or "")

    def recall(
        query: str,
        config: RunnableConfig,
        state: Annotated[Any, InjectedState] = None,
    ) -> str:
        try:
            hits = store.search_messages(thread_of(config), query, namespace=namespace, limit=fetch)
        except Exception as exc:  # a store outage must not break the agent's turn
            _log.warning("recall: the summary store failed: %s", exc)
            return "Recall is unavailable right now (the summary store failed); go on without it."
        return format_hits(query, keep(hits, state))

    async def arecall(
        query: str,
        config: RunnableConfig,
        state: Annotated[Any, InjectedState] = None,
    ) -> str:
        try:
            hits = await store.asearch_messages(
                thread_of(config), query, namespace=namespace, limit=fetch
            )
        except Exception as exc:
            _log.warning("recall: the summary store failed: %s", exc)
            return "Recall is unavailable right now (the summary store failed); go on without it."
        return format_hits(query, keep(hits, state))

    return StructuredTool.from_function(
        func=recall, coroutine=arecall, name=name, description=_DESCRIPTION
    )
