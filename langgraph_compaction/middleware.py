"""CompactionMiddleware: the same pipeline for ``langchain.agents.create_agent``.

``wrap_model_call`` replaces the request's messages with the compacted ones and never touches
the agent's state. Tools and the system prompt come from each request; the request's model
serves as the fallback summarizer (and gives the window) unless ``fallback_model`` is set.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.language_models import BaseChatModel
from langgraph.config import get_config

from ._config import CompactionConfig
from ._runtime import CompactionRuntime
from ._tokens import TokenCounter
from .graph import build_graph
from .store import SummaryStore

__all__ = ["CompactionMiddleware"]


class CompactionMiddleware(AgentMiddleware):
    """Compact the model input of a ``create_agent`` agent before every model call.

    Example:
        ```python
        from langchain.agents import create_agent
        from langgraph_compaction import CompactionMiddleware

        agent = create_agent(model, tools, middleware=[CompactionMiddleware({"keep": ...})])
        ```
    """

    def __init__(
        self,
        config: CompactionConfig | dict[str, Any] | None = None,
        *,
        model: BaseChatModel | str | None = None,
        fallback_model: BaseChatModel | None = None,
        store: SummaryStore | None = None,
        token_counter: TokenCounter | None = None,
        namespace: str = "default",
    ) -> None:
        super().__init__()
        self.config = CompactionConfig.coerce(config)
        self._model = model
        self._fallback_model = fallback_model
        self._store = store if store is not None else SummaryStore(self.config.store_url)
        self._token_counter = token_counter
        self._namespace = namespace
        self._graphs: dict[tuple[int, int, str | None], Any] = {}
        self._lock = threading.Lock()
        if fallback_model is not None:  # surface configuration mistakes at construction
            self._graph_for(fallback_model, [], None)

    def _graph_for(
        self, request_model: BaseChatModel, tools: Sequence[Any], system_prompt: str | None
    ) -> Any:
        """One compiled pipeline per (model, tools, system prompt), built once."""
        fallback = self._fallback_model or request_model
        key = (id(fallback), hash(tuple(id(t) for t in tools)), system_prompt)
        with self._lock:
            graph = self._graphs.get(key)
            if graph is None:
                runtime = CompactionRuntime.build(
                    self.config,
                    model=self._model,
                    fallback_model=fallback,
                    store=self._store,
                    token_counter=self._token_counter,
                    tools=list(tools),
                    system_prompt=system_prompt,
                    namespace=self._namespace,
                )
                graph = build_graph(runtime, name="compaction")
                self._graphs[key] = graph
        return graph

    def _compact_input(self, request: ModelRequest) -> tuple[Any, dict[str, Any]]:
        graph = self._graph_for(request.model, request.tools, request.system_prompt)
        return graph, {"messages": request.messages}

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse:
        graph, state = self._compact_input(request)
        result = graph.invoke(state, _thread_config())
        return handler(request.override(messages=result["llm_input_messages"]))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        graph, state = self._compact_input(request)
        result = await graph.ainvoke(state, _thread_config())
        return await handler(request.override(messages=result["llm_input_messages"]))


def _thread_config() -> dict[str, Any]:
    """Carry the agent's thread id into the pipeline (it keys the store)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        return {}
    return {"configurable": {"thread_id": configurable.get("thread_id")}}
