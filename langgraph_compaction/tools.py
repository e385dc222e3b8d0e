"""The agent's tools: ``recall`` searches what compaction evicted, ``compact`` asks for it.

``recall`` has one argument, ``query``. It reads the thread id from the run's config, and,
where the agent's state is injected (``ToolNode``, ``create_react_agent``, ``create_agent``),
it keeps only hits whose message is still in the current ``messages`` with the same text, so
a forked or edited history never gets another branch's words back.

``compact`` files a request in the store (``SummaryStore.request_compaction``) for the run's
thread, with the model's ``focus`` as the summary's instruction. The next compaction call of
that thread consumes it and compacts as if ``force`` were set. It does not end the agent's
loop: it answers with a short confirmation, and the agent goes on.

A run without a thread id, or a store that fails, gives the model a short sentence saying so,
never an exception: either tool is a help, not a dependency of the run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import InjectedState

from langgraph_compaction.config.settings import thread_id_of
from langgraph_compaction.store import RecalledMessage, SummaryStore, storable
from langgraph_compaction.summary.prompts import render_transcript

__all__ = ["confirmation", "create_compact_tool", "create_recall_tool", "format_hits"]

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


_DESCRIPTION = (
    "Compact this conversation's context: the earlier messages are replaced by a summary "
    "before your next model call, freeing room for the work ahead. Use it when the context "
    "is long and much of it is no longer needed verbatim. `focus` says what the summary must "
    "keep in detail; the conversation itself is kept, and you go on working after this call."
)

NO_THREAD = (
    "Compaction was not requested: this run has no thread id "
    '(config["configurable"]["thread_id"]), so there is no conversation to compact. '
    "Go on without it."
)
"""The answer in a run without a thread id."""

STORE_FAILED = (
    "Compaction was not requested: the summary store failed. Go on without it; the context "
    "is still compacted when it grows past the limit."
)
"""The answer when the store cannot file the request."""

Focus = Annotated[
    str, "What the summary must keep in detail: the task at hand, names, numbers, decisions."
]


def confirmation(focus: str | None) -> str:
    """What the model reads once the request is filed."""
    said = "The context will be compacted before your next model call"
    return f"{said}, focusing on: {focus}" if focus else f"{said}."


def _focus_of(focus: str) -> str | None:
    """The instruction the request carries; None for a blank focus."""
    return focus.strip() or None


def create_compact_tool(
    store: SummaryStore, *, namespace: str = "default", name: str = "compact"
) -> BaseTool:
    """The ``compact`` tool over ``store``: the agent asks for its context to be compacted.

    Give it to the agent next to compaction (the middleware adds it with
    ``compact_tool=True``). Calling it with a ``focus`` files a request for the run's thread;
    the next compaction call of that thread compacts even under the trigger, with the focus
    in the summary prompt, and consumes the request.

    Args:
        store: the SummaryStore compaction uses (the same database).
        namespace: the compaction namespace, as given to the graph or middleware.
        name: the tool's name, as the model sees it.

    ```python
    tool = create_compact_tool(store)
    agent = create_agent(model, tools=[tool, *tools], middleware=[CompactionMiddleware(...)])
    ```
    """
    if not isinstance(store, SummaryStore):
        raise TypeError(f"store must be a SummaryStore, got {type(store).__name__}")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty string, got {name!r}")

    def compact(focus: Focus, config: RunnableConfig) -> str:
        thread_id, instruction = thread_id_of(config), _focus_of(focus)
        if not thread_id:
            _log.warning("compact: the run has no thread id; nothing was requested")
            return NO_THREAD
        try:
            store.request_compaction(thread_id, namespace=namespace, instruction=instruction)
        except Exception as exc:  # a store outage must not break the agent's turn
            _log.warning("compact: the summary store failed: %s", exc)
            return STORE_FAILED
        return confirmation(instruction)

    async def acompact(focus: Focus, config: RunnableConfig) -> str:
        thread_id, instruction = thread_id_of(config), _focus_of(focus)
        if not thread_id:
            _log.warning("compact: the run has no thread id; nothing was requested")
            return NO_THREAD
        try:
            await store.arequest_compaction(thread_id, namespace=namespace, instruction=instruction)
        except Exception as exc:
            _log.warning("compact: the summary store failed: %s", exc)
            return STORE_FAILED
        return confirmation(instruction)

    return StructuredTool.from_function(
        func=compact, coroutine=acompact, name=name, description=_DESCRIPTION
    )
