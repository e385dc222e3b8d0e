"""Everything one compaction graph (or middleware) fixes when it is built, resolved once.

Settings are frozen: the models, the store, the window and budget, the triggers as absolute
thresholds, and the tokens the model node adds itself. A mistake surfaces when the graph is
built (``CompactionConfigError``), never in the middle of a run. What a process learns while
it runs lives apart, in ``pipeline.memory``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_stream_writer

from langgraph_compaction.config.compaction import CONVERSATION_MODEL_CONFLICT, CompactionConfig
from langgraph_compaction.config.triggers import Threshold, resolve_thresholds, scale_thresholds
from langgraph_compaction.content.tokens import TokenCounter, count_fixed_tokens
from langgraph_compaction.errors import CompactionConfigError
from langgraph_compaction.store import SummaryStore, storable

__all__ = ["Compactor", "Settings", "emit", "resolve_model", "resolve_store", "thread_id_of"]

Compactor: TypeAlias = Callable[[list[BaseMessage], str | None, str | None], "str | Awaitable[str]"]
"""A custom compactor: ``fn(messages, previous, instruction) -> str`` (or a coroutine
function), used instead of the summary model (``summarize=``)."""


def thread_id_of(config: RunnableConfig | None) -> str:
    """The thread id from ``config["configurable"]``; ``""`` when there is none."""
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    return "" if thread_id is None else str(thread_id)


def emit(event: dict[str, Any]) -> None:
    """Send a custom stream event; a no-op outside a LangGraph run.

    Its text is made storable first (a NUL or lone surrogate from a model's error becomes
    U+FFFD): the LangGraph server's JSON encoder refuses a lone surrogate, which would break
    the run's stream.
    """
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    writer({key: storable(v) if isinstance(v, str) else v for key, v in event.items()})


def resolve_model(model: BaseChatModel | str | None, provider: str | None) -> BaseChatModel | None:
    """A chat model from an instance or a "provider:model" string (``init_chat_model``)."""
    if model is None or isinstance(model, BaseChatModel):
        return model
    try:
        return init_chat_model(model, model_provider=provider)
    except Exception as exc:
        raise CompactionConfigError(
            f"model {model!r} could not be created with init_chat_model: {exc}. "
            "Use a 'provider:model' string or pass a chat model instance"
        ) from exc


def resolve_store(store: object, default_url: str) -> SummaryStore:
    """A SummaryStore from an instance, a URL, or None (the configured ``store_url``)."""
    if store is None:
        return SummaryStore(default_url)
    if isinstance(store, str):
        return SummaryStore(store)
    if not isinstance(store, SummaryStore):
        raise CompactionConfigError(
            f"store must be a SummaryStore or a store URL such as 'sqlite:///compaction.db', "
            f"got {type(store).__name__}"
        )
    return store


def _window_of(config: CompactionConfig, fallback_model: BaseChatModel | None) -> int | None:
    if config.context_window is not None:
        return config.context_window
    profile = getattr(fallback_model, "profile", None) or {}
    window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    return int(window) if isinstance(window, int) and window > 0 else None


@dataclass(frozen=True, slots=True)
class Settings:
    """The resolved pieces one compaction graph runs with."""

    config: CompactionConfig
    store: SummaryStore
    namespace: str
    summarizer: BaseChatModel | None
    fallback_model: BaseChatModel | None
    counter: TokenCounter
    fixed_tokens: int
    """Tokens the model node adds itself: a system prompt outside ``messages``, tool schemas."""
    window: int | None
    budget: int | None
    thresholds: tuple[Threshold, ...]
    precompact_thresholds: tuple[Threshold, ...]
    """The triggers scaled by ``precompact_ratio`` (empty: pre-compaction is off)."""
    needs_refine_count: bool
    """Some trigger counts messages outside the keep window (costs a walk per call)."""
    recall_tool: str | None
    """The recall tool's name when recall is on: the summary message names it."""
    compactor: Compactor | None = None
    """``summarize=``: the custom compactor used instead of the summary model."""
    system_message: SystemMessage | None = None
    """The system prompt the model node sends before ``messages`` (as the agent sends it):
    the head of a ``summary_context: "conversation"`` summary call."""
    tools: tuple[BaseTool | dict[str, Any], ...] = ()
    """The tools the model node binds: bound to a ``conversation`` summary call too."""
    model_settings: Mapping[str, Any] = field(default_factory=dict)
    """What the model node binds besides tools (the middleware's ``request.model_settings``,
    Anthropic's ``cache_control`` say): bound to a ``conversation`` summary call too."""

    @classmethod
    def build(
        cls,
        config: CompactionConfig | dict[str, Any] | None = None,
        *,
        model: BaseChatModel | str | None = None,
        fallback_model: BaseChatModel | None = None,
        store: SummaryStore | str | None = None,
        counter: TokenCounter,
        tools: Sequence[BaseTool | dict[str, Any]] | None = None,
        system_prompt: str | None = None,
        namespace: str = "default",
        summarize: Compactor | None = None,
    ) -> Settings:
        """Resolve a configuration; raises on anything that cannot work."""
        resolved = CompactionConfig.coerce(config)
        if summarize is not None and not callable(summarize):
            raise CompactionConfigError(
                "summarize must be a function fn(messages, previous, instruction) -> str "
                f"(sync or async), got {type(summarize).__name__}"
            )
        if not namespace:
            raise CompactionConfigError("namespace must be a non-empty string")
        if model is not None and resolved.summary_context == "conversation":
            raise CompactionConfigError(CONVERSATION_MODEL_CONFLICT.format(given="model="))
        summarizer = resolve_model(
            model if model is not None else resolved.model, resolved.provider
        )
        window = _window_of(resolved, fallback_model)
        budget = int(window * (1 - resolved.reserve_ratio)) if window else None
        if resolved.keep.type == "fraction" and window is None:
            raise CompactionConfigError(
                "keep of type fraction needs the model's context window: set context_window "
                "or pass the agent's model as fallback_model"
            )
        thresholds = (
            resolve_thresholds(resolved.trigger, window, budget) if resolved.enabled else ()
        )
        return cls(
            config=resolved,
            store=resolve_store(store, resolved.store_url),
            namespace=namespace,
            summarizer=summarizer,
            fallback_model=fallback_model,
            counter=counter,
            fixed_tokens=count_fixed_tokens(counter, system_prompt, tools),
            window=window,
            budget=budget,
            thresholds=thresholds,
            precompact_thresholds=scale_thresholds(thresholds, resolved.precompact_ratio),
            needs_refine_count=any(t.kind == "refine" for t in thresholds),
            recall_tool=resolved.recall.tool_name if resolved.recall.enabled else None,
            compactor=summarize,
            system_message=SystemMessage(content=system_prompt) if system_prompt else None,
            tools=tuple(tools or ()),
        )

    @property
    def fit_limit(self) -> int | None:
        """What "fits" means: under the budget, or with no window the smallest tokens trigger."""
        if self.budget is not None:
            return self.budget
        limits = [t.limit for t in self.thresholds if t.kind == "tokens"]
        return int(min(limits)) if limits else None

    @property
    def token_limit(self) -> float | None:
        """The smallest tokens trigger, where pruning epochs cross."""
        limits = [t.limit for t in self.thresholds if t.kind == "tokens"]
        return min(limits) if limits else None
