"""CompactionMiddleware: the same pipeline for ``langchain.agents.create_agent``.

``wrap_model_call`` replaces the request's messages with the compacted ones and never touches
the agent's state. Tools and the system prompt come from each request; the request's model
serves as the fallback summarizer (and gives the window) unless ``fallback_model`` is set.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tools import BaseTool

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.config.settings import Compactor, resolve_model, resolve_store
from langgraph_compaction.content.tokens import TokenCounter
from langgraph_compaction.errors import CompactionConfigError
from langgraph_compaction.graph import (
    ainvoke_pipeline,
    build_graph,
    build_pipeline,
    invoke_pipeline,
)
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.state import CompactionInput
from langgraph_compaction.store import SummaryStore
from langgraph_compaction.tools import create_compact_tool, create_recall_tool

try:  # LangGraph's config keys for a node's stream and runtime (internal names)
    from langgraph._internal._constants import CONFIG_KEY_RUNTIME, CONFIG_KEY_STREAM
except ImportError:  # pragma: no cover - another LangGraph layout: always the nested graph
    CONFIG_KEY_RUNTIME = CONFIG_KEY_STREAM = None  # type: ignore[assignment]

__all__ = ["CompactionMiddleware"]

_GRAPH_LIMIT = 32
"""Compiled pipelines kept per middleware: one per (model, tools, system prompt) seen.

A dynamic system prompt makes a new key on every change; the bound keeps memory flat, and an
evicted pipeline costs only its per-process caches (summaries stay in the store).
"""

_GraphKey = tuple[int, tuple[int, ...], str | None]
_Entry = tuple[Pipeline, Any]
"""A resolved pipeline and its compiled graph (the same memory and jobs)."""

_STAND_IN_WINDOW = 2**31
"""Checks everything but the window at construction when only the run model can give it."""


def _window_needed_by(config: CompactionConfig) -> str | None:
    """What in ``config`` needs the model's context window, or None when nothing does."""
    if config.keep.type == "fraction":
        return "keep of type fraction"
    if not config.enabled:
        return None
    if config.trigger is None:
        return "a null trigger (fire when the context no longer fits the window)"
    for trigger in config.trigger:
        if trigger.type in ("fraction", "token_ratio", "remaining_tokens"):
            return f"trigger {trigger.type}"
    return None


def _profile_window(model: BaseChatModel) -> int | None:
    """The window a model's profile gives (``max_input_tokens``), if any."""
    profile = getattr(model, "profile", None)
    window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    return window if isinstance(window, int) and window > 0 else None


class CompactionMiddleware(AgentMiddleware):
    """Compact the model input of a ``create_agent`` agent before every model call.

    It runs the compaction subgraph of ``create_compaction_graph`` on the request's messages
    and hands the model the compacted list; the agent's state keeps every message. It reads
    the thread id from the agent's config. When callbacks watch the run (a tracer) or the
    caller streams subgraphs, the pipeline runs as a nested graph of the model node, so its
    custom stream events (``context_compacting``, ...), values and runs show as a subgraph's;
    otherwise its steps run in the model node itself, without a graph run's costs.

    Example:
        ```python
        from langchain.agents import create_agent
        from langgraph_compaction import CompactionMiddleware

        agent = create_agent(model, tools, middleware=[CompactionMiddleware({"keep": ...})])
        ```

    Raises:
        CompactionConfigError: at construction, for every mistake it can see there. A setting
            that needs the context window (a null trigger, a ``fraction`` / ``token_ratio`` /
            ``remaining_tokens`` trigger, a ``fraction`` keep) with neither ``context_window``
            nor a ``fallback_model`` whose profile gives ``max_input_tokens`` is checked then
            against a stand-in window only: the agent's model, whose profile may give the
            window, is known on the first model call. If it does not, that first call raises,
            naming the model and the fix (set ``context_window``, or pass ``fallback_model``).
    """

    def __init__(
        self,
        config: CompactionConfig | dict[str, Any] | None = None,
        *,
        model: BaseChatModel | str | None = None,
        fallback_model: BaseChatModel | None = None,
        store: SummaryStore | str | None = None,
        token_counter: TokenCounter | None = None,
        namespace: str = "default",
        summarize: Compactor | None = None,
        compact_tool: bool = False,
    ) -> None:
        """Take the arguments of ``create_compaction_graph`` except tools and system prompt.

        Args:
            config: a CompactionConfig, a dict of its fields, or None (defaults).
            model: the summarizer; None uses ``config.model``, else the fallback model.
            fallback_model: tried once when the summarizer fails, and the source of the
                context window; None: the model of each request (the agent's own model).
            store: where summaries live: a SummaryStore or its URL; None opens
                ``SummaryStore(config.store_url)``.
            token_counter: counts a list of messages; default: langchain-core's approximation.
            namespace: separates several agents or tenants in one thread.
            summarize: your own compactor, ``fn(messages, previous, instruction) -> str``
                (sync or async), used instead of the summary model.
            compact_tool: give the agent the ``compact`` tool (``create_compact_tool``), with
                which it asks for its context to be compacted before its next model call.
        """
        super().__init__()
        self.config = CompactionConfig.coerce(config)
        # Resolved here, once: a "provider:model" string imports its integration, which must
        # not happen on an event loop in the middle of a run.
        self._model = resolve_model(
            model if model is not None else self.config.model, self.config.provider
        )
        self._fallback_model = fallback_model
        self._store = resolve_store(store, self.config.store_url)
        recall = self.config.recall
        self.tools: list[BaseTool] = []
        if recall.enabled:  # the agent gets the tool that searches what compaction evicted
            self.tools.append(
                create_recall_tool(
                    self._store, namespace=namespace, limit=recall.limit, name=recall.tool_name
                )
            )
        if not isinstance(compact_tool, bool):
            raise CompactionConfigError(
                f"compact_tool must be true or false, got {type(compact_tool).__name__}"
            )
        if compact_tool:  # the agent asks for compaction itself (DESIGN 6.11)
            self.tools.append(create_compact_tool(self._store, namespace=namespace))
        self._token_counter = token_counter
        self._namespace = namespace
        self._summarize = summarize
        self._compact_tool = compact_tool
        self._graphs: OrderedDict[_GraphKey, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._window_need = (
            _window_needed_by(self.config) if self.config.context_window is None else None
        )
        if fallback_model is not None:  # surface configuration mistakes at construction
            self._graph_for(fallback_model, [], None)
        else:
            self._check_without_run_model()

    def _check_without_run_model(self) -> None:
        """Resolve the settings now; the window, if the run model must give it, is a stand-in."""
        config = self.config
        if self._window_need is not None:
            config = config.model_copy(update={"context_window": _STAND_IN_WINDOW})
        build_pipeline(
            config,
            model=self._model,
            store=self._store,
            token_counter=self._token_counter,
            namespace=self._namespace,
            summarize=self._summarize,
        )

    def _build_pipeline_for(
        self, fallback: BaseChatModel, tools: Sequence[Any], system_prompt: str | None
    ) -> Any:
        try:
            return build_pipeline(
                self.config,
                model=self._model,
                fallback_model=fallback,
                store=self._store,
                token_counter=self._token_counter,
                tools=list(tools),
                system_prompt=system_prompt,
                namespace=self._namespace,
                summarize=self._summarize,
            )
        except CompactionConfigError as exc:
            if self._window_need is None or _profile_window(fallback) is not None:
                raise
            name = getattr(fallback, "model_name", None) or type(fallback).__name__
            if self._fallback_model is None:
                whose = f"the agent's model {name!r}"
                fix = "pass CompactionMiddleware(fallback_model=...) a model whose profile gives it"
            else:
                whose, fix = f"fallback_model {name!r}", "pass a fallback_model whose profile does"
            raise CompactionConfigError(
                f"CompactionMiddleware: {self._window_need} needs the model's context window, "
                f"and {whose} has no profile giving max_input_tokens: set context_window in the "
                f"config, or {fix}"
            ) from exc

    def _graph_for(
        self, request_model: BaseChatModel, tools: Sequence[Any], system_prompt: str | None
    ) -> _Entry:
        """One pipeline and its compiled graph per (model, tools, system prompt), built once."""
        fallback = self._fallback_model or request_model
        # The pipeline holds the model and the tools, so their ids stay valid while cached.
        key: _GraphKey = (id(fallback), tuple(id(t) for t in tools), system_prompt)
        with self._lock:
            entry = self._graphs.get(key)
            if entry is not None:
                self._graphs.move_to_end(key)
                return entry
            pipe = self._build_pipeline_for(fallback, tools, system_prompt)
            entry = (pipe, build_graph(pipe, name="compaction"))
            self._graphs[key] = entry
            if len(self._graphs) > _GRAPH_LIMIT:
                self._graphs.popitem(last=False)
            return entry

    def _entry_for(self, request: ModelRequest) -> _Entry:
        return self._graph_for(request.model, request.tools, request.system_prompt)

    def _cached_entry(self, request: ModelRequest) -> _Entry | None:
        key: _GraphKey = (
            id(self._fallback_model or request.model),
            tuple(id(t) for t in request.tools),
            request.system_prompt,
        )
        with self._lock:
            return self._graphs.get(key)

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse:
        """Compact the request's messages, then call the model with them."""
        pipe, graph = self._entry_for(request)
        state = CompactionInput(messages=request.messages)
        with _inline_run() as config:
            # The nested run has no config of its own: it inherits the agent's (thread id,
            # callbacks, stream writer), so its events reach the caller like a subgraph's.
            if config is not None:
                result = invoke_pipeline(pipe, state, config)
            else:
                result = graph.invoke(state)
        return handler(request.override(messages=result["llm_input_messages"]))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Compact the request's messages, then call the model with them (async path)."""
        entry = self._cached_entry(request)
        if entry is None:  # building counts tool schemas and may import: off the loop
            entry = await asyncio.to_thread(self._entry_for, request)
        pipe, graph = entry
        state = CompactionInput(messages=request.messages)
        with _inline_run() as config:
            if config is not None:
                result = await ainvoke_pipeline(pipe, state, config)
            else:
                result = await graph.ainvoke(state)
        return await handler(request.override(messages=result["llm_input_messages"]))


def _watched(config: RunnableConfig) -> bool:
    """Whether callbacks watch the run (a tracer, a stream of messages): they see the
    compaction run and its nodes only when it runs as a graph."""
    callbacks = config.get("callbacks")
    if callbacks is None:
        return False
    if isinstance(callbacks, list):
        return bool(callbacks)
    return bool(getattr(callbacks, "handlers", True))


@contextmanager
def _inline_run() -> Iterator[RunnableConfig | None]:
    """The config to run the pipeline's steps with in the model node itself, or None when it
    must run as the nested graph: callbacks watch the run, or the caller streams subgraphs
    (it then sees the compaction run's events, values and updates), or no node config.

    A nested graph run costs about 1 ms a call, twice a turn. Run inline, the steps read the
    model node's config (thread id, ``configurable.compaction``, its interrupt scratchpad);
    their events go nowhere, as a nested graph's do for a caller that does not stream
    subgraphs.
    """
    config = var_child_runnable_config.get()
    configurable = (config or {}).get("configurable") or {}
    runtime = configurable.get(CONFIG_KEY_RUNTIME) if CONFIG_KEY_RUNTIME else None
    if config is None or runtime is None or CONFIG_KEY_STREAM in configurable or _watched(config):
        yield None
        return
    inner = RunnableConfig(
        **{
            **config,
            "configurable": {
                **configurable,
                CONFIG_KEY_RUNTIME: dataclasses.replace(runtime, stream_writer=_drop),
            },
        }
    )
    token = var_child_runnable_config.set(inner)
    try:
        yield inner
    finally:
        var_child_runnable_config.reset(token)


def _drop(chunk: Any) -> None:
    """The stream writer of a nested graph whose caller does not stream subgraphs: nothing."""
