"""The agent's ``compact`` tool: ask for the context to be compacted before the next model call.

The tool files a request in the store (``SummaryStore.request_compaction``) for the run's
thread, with the model's ``focus`` as the summary's instruction. The next compaction call of
that thread consumes it and compacts as if ``force`` were set. The tool does not end the
agent's loop: it answers with a short confirmation, and the agent goes on. A run without a
thread id, or a store that fails, gives the model a sentence saying so, never an exception:
the agent's turn goes on either way.
"""

from __future__ import annotations

import logging
from typing import Annotated

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool

from ._settings import thread_id_of
from .store import SummaryStore

__all__ = ["confirmation", "create_compact_tool"]

_log = logging.getLogger("langgraph_compaction")

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
