"""CompactionMiddleware: the same pipeline for ``langchain.agents.create_agent``.

``wrap_model_call`` replaces the request's messages with the compacted ones and never touches
the agent's state. Tools and the system prompt come from each request and are counted per call;
the request's model serves as the fallback summarizer (and gives the window) unless
``fallback_model`` is set.

One middleware has one compiled graph, one job queue (so at most one background summary per
thread, whatever the prompt) and one memory per context window (what it caches about a thread
depends on the window's thresholds); settings are resolved once per model. A dynamic system
prompt (``@dynamic_prompt``) that changes on every call costs a count of its tokens, nothing
more.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.config.settings import (
    Compactor,
    Settings,
    resolve_model,
    resolve_store,
)
from langgraph_compaction.content.tokens import TokenCounter, count_fixed_tokens
from langgraph_compaction.errors import CompactionConfigError
from langgraph_compaction.graph import build_graph, serving
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.jobs import Jobs
from langgraph_compaction.pipeline.memory import BoundedCache, Memory
from langgraph_compaction.pipeline.state import CompactionInput
from langgraph_compaction.store import SummaryStore
from langgraph_compaction.tools import create_compact_tool, create_recall_tool

__all__ = ["CompactionMiddleware"]

_MODEL_LIMIT = 32
"""Settings kept per middleware: one per model seen (each holds its model, so ids stay valid)."""
_TOOLS_LIMIT = 32
"""Tool-schema counts kept: one per tool list seen (each holds its tools)."""
_PROMPT_LIMIT = 256
"""System-prompt counts kept; a prompt that changes every call is counted again, in µs."""

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

    It runs the compaction subgraph of ``create_compaction_graph`` on the request's messages,
    as a nested graph of the model node, and hands the model the compacted list; the agent's
    state keeps every message. It reads the thread id from the agent's config; its custom
    stream events (``context_compacting``, ...), values and runs show as a subgraph's. The
    request's system prompt and tool schemas are counted on every call, so a dynamic prompt
    (``@dynamic_prompt``) is counted as it is, and shares the thread's caches and its one
    background summary with every other prompt.

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
        self._lock = threading.Lock()
        self._jobs = Jobs()
        self._memories: dict[int | None, Memory] = {}
        self._counter = self._memory_for(None).counter
        self._settings: OrderedDict[int, Settings] = OrderedDict()
        self._tool_tokens: OrderedDict[tuple[int, ...], tuple[Sequence[Any], int]] = OrderedDict()
        self._prompt_tokens: BoundedCache[str, int] = BoundedCache(_PROMPT_LIMIT)
        self._window_need = (
            _window_needed_by(self.config) if self.config.context_window is None else None
        )
        if fallback_model is not None:  # surface configuration mistakes at construction
            settings = self._settings_for(fallback_model)
        else:
            settings = self._check_without_run_model()
        # One graph for every request: each call brings its own pipeline (``serving``); the
        # one built in stands for them and shares their jobs, which is how a node knows them.
        self._graph = build_graph(
            Pipeline(settings, Memory(token_counter), self._jobs), name="compaction"
        )

    def _memory_for(self, window: int | None) -> Memory:
        """The memory of the requests with this context window: what it caches per thread
        (pruning epochs, the keep window) follows the window's thresholds. One per window a
        model of this agent gives: a handful, bounded by the models kept."""
        with self._lock:
            memory = self._memories.get(window)
            if memory is None:
                memory = self._memories[window] = Memory(self._token_counter)
            return memory

    def _build_settings(self, config: CompactionConfig, fallback: BaseChatModel | None) -> Settings:
        return Settings.build(
            config,
            model=self._model,
            fallback_model=fallback,
            store=self._store,
            counter=self._counter,
            namespace=self._namespace,
            summarize=self._summarize,
        )

    def _check_without_run_model(self) -> Settings:
        """Resolve the settings now; the window, if the run model must give it, is a stand-in."""
        config = self.config
        if self._window_need is not None:
            config = config.model_copy(update={"context_window": _STAND_IN_WINDOW})
        return self._build_settings(config, None)

    def _settings_for(self, request_model: BaseChatModel) -> Settings:
        """The settings of the requests to one model (its window, its fallback), built once."""
        fallback = self._fallback_model or request_model
        with self._lock:
            settings = self._settings.get(id(fallback))
            if settings is not None:
                self._settings.move_to_end(id(fallback))
                return settings
        try:
            settings = self._build_settings(self.config, fallback)
        except CompactionConfigError as exc:
            raise self._explained(exc, fallback) from exc
        with self._lock:
            self._settings[id(fallback)] = settings
            while len(self._settings) > _MODEL_LIMIT:
                self._settings.popitem(last=False)
        return settings

    def _explained(self, exc: CompactionConfigError, fallback: BaseChatModel) -> Exception:
        """The error of a window no model gives, naming the model and the fix."""
        if self._window_need is None or _profile_window(fallback) is not None:
            return exc
        name = getattr(fallback, "model_name", None) or type(fallback).__name__
        if self._fallback_model is None:
            whose = f"the agent's model {name!r}"
            fix = "pass CompactionMiddleware(fallback_model=...) a model whose profile gives it"
        else:
            whose, fix = f"fallback_model {name!r}", "pass a fallback_model whose profile does"
        return CompactionConfigError(
            f"CompactionMiddleware: {self._window_need} needs the model's context window, "
            f"and {whose} has no profile giving max_input_tokens: set context_window in the "
            f"config, or {fix}"
        )

    def _tools_tokens(self, tools: Sequence[Any]) -> int:
        """Tokens of the request's tool schemas, counted once per tool list."""
        if not tools:
            return 0
        key = tuple(map(id, tools))
        with self._lock:
            entry = self._tool_tokens.get(key)
        if entry is None:  # the entry holds the tools, so their ids stay valid while kept
            entry = (tuple(tools), count_fixed_tokens(self._counter, None, tools))
            with self._lock:
                self._tool_tokens[key] = entry
                while len(self._tool_tokens) > _TOOLS_LIMIT:
                    self._tool_tokens.popitem(last=False)
        return entry[1]

    def _prompt_tokens_of(self, prompt: str | None) -> int:
        if not prompt:
            return 0
        return self._prompt_tokens.get_or_make(
            prompt, lambda: count_fixed_tokens(self._counter, prompt, None)
        )

    def _pipeline_for(self, request: ModelRequest) -> Pipeline:
        """This request's pipeline: its model's settings with its own prompt and tool tokens,
        over the middleware's memory and jobs."""
        settings = self._settings_for(request.model)
        fixed = self._prompt_tokens_of(request.system_prompt) + self._tools_tokens(request.tools)
        if fixed != settings.fixed_tokens:
            settings = dataclasses.replace(settings, fixed_tokens=fixed)
        if settings.config.summary_context == "conversation":  # the summary call sends them
            settings = dataclasses.replace(
                settings,
                system_message=request.system_message,
                tools=tuple(request.tools),
                model_settings=dict(request.model_settings),
            )
        return Pipeline(settings, self._memory_for(settings.window), self._jobs)

    def _ready(self, request: ModelRequest) -> bool:
        """Whether this request's pipeline needs no build (an import, a schema count)."""
        fallback = self._fallback_model or request.model
        with self._lock:
            return id(fallback) in self._settings and (
                not request.tools or tuple(map(id, request.tools)) in self._tool_tokens
            )

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse:
        """Compact the request's messages, then call the model with them."""
        pipe = self._pipeline_for(request)
        # The nested run has no config of its own: it inherits the agent's (thread id,
        # callbacks, stream writer), so its events reach the caller like a subgraph's.
        with serving(pipe):
            result = self._graph.invoke(CompactionInput(messages=request.messages))
        return handler(request.override(messages=result["llm_input_messages"]))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Compact the request's messages, then call the model with them (async path)."""
        if self._ready(request):
            pipe = self._pipeline_for(request)
        else:  # building counts tool schemas and may import: off the loop
            pipe = await asyncio.to_thread(self._pipeline_for, request)
        with serving(pipe):
            result = await self._graph.ainvoke(CompactionInput(messages=request.messages))
        return await handler(request.override(messages=result["llm_input_messages"]))
