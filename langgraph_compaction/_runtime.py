"""Everything one compaction graph fixes when it is built, and the data one call carries.

The runtime is resolved once (model, window, thresholds, counted tools and system prompt), so
a mistake surfaces when the graph is built, never in the middle of a run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_stream_writer

from ._config import CompactionConfig
from ._exceptions import CompactionConfigError
from ._messages import make_summary_message
from ._model_calls import Overflow
from ._tokens import HistoryIndex, HistoryScan, TokenCounter, count_fixed_tokens
from .store import SummaryRecord, SummaryStore, ThreadState

if TYPE_CHECKING:
    from ._background import BackgroundSummaries

__all__ = [
    "CallWork",
    "CompactionRuntime",
    "Outcome",
    "resolve_model",
    "resolve_store",
    "thread_id_of",
]

K = TypeVar("K")
V = TypeVar("V")
_CACHE_LIMIT = 4096
_WINDOW_MARGIN = 0.85
"""Share of the summarizer's known window a prompt may fill (our count is an estimate)."""
_MIN_TRANSCRIPT_TOKENS = 64
_SUMMARIZER_RATIO_BOUNDS = (0.5, 4.0)

logger = logging.getLogger("langgraph_compaction")


def thread_id_of(config: RunnableConfig | None) -> str:
    """The thread id from ``config["configurable"]``; ``""`` when there is none."""
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    return "" if thread_id is None else str(thread_id)


def resolve_model(model: BaseChatModel | str | None, provider: str | None) -> BaseChatModel | None:
    if model is None or isinstance(model, BaseChatModel):
        return model
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:  # pragma: no cover - langchain is a dependency
        raise CompactionConfigError(
            f"model {model!r} is a string, which needs the `langchain` package"
        ) from exc
    try:
        return init_chat_model(model, model_provider=provider)
    except Exception as exc:
        raise CompactionConfigError(
            f"model {model!r} could not be created with init_chat_model: {exc}. "
            "Use a 'provider:model' string or pass a chat model instance"
        ) from exc


def resolve_store(store: object, default_url: str) -> SummaryStore:
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


@dataclass
class CompactionRuntime:
    """The resolved pieces one compaction graph (or middleware) runs with."""

    config: CompactionConfig
    store: SummaryStore
    namespace: str
    summarizer: BaseChatModel | None
    fallback_model: BaseChatModel | None
    history: HistoryIndex
    counter: TokenCounter
    fixed_tokens: int
    window: int | None
    budget: int | None
    thresholds: tuple[Any, ...] = ()
    precompact_thresholds: tuple[Any, ...] = ()
    """The triggers scaled by ``precompact_ratio`` (empty: pre-compaction is off)."""
    needs_refine_count: bool = False
    calibration: dict[tuple[str, str], float] = field(default_factory=dict)
    """Per-thread calibration ratios (reported / estimated input tokens)."""
    calibration_dirty: set[tuple[str, str]] = field(default_factory=set)
    last_sent: dict[tuple[str, str], tuple[int, str | None, int]] = field(default_factory=dict)
    """Per thread: (index of the last history message sent, its id, estimated tokens)."""
    in_use: dict[tuple[str, str], tuple[SummaryRecord, int]] = field(default_factory=dict)
    """Per thread: the summary this process served last (the reuse fast path), with the
    store's deletion epoch of the thread when the call that found it started."""
    rescued_positions: dict[str, tuple[int, ...]] = field(default_factory=dict)
    summary_messages: dict[str, tuple[HumanMessage, int]] = field(default_factory=dict)
    prune_epochs: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    """Per (namespace, thread, phase): the derived pruning epochs (``nodes.prune.Epochs``)."""
    summarizer_window: int | None = None
    """The summarizer's context window, once a refused prompt has told it."""
    summarizer_ratio: float | None = None
    """The summarizer's own token count over our estimate, from the usage it reports."""
    summarizer_limit: int | None = None
    """Most prompt tokens (our estimate) to send, learned from a refusal naming no window."""
    store_failure: str | None = None
    """The store error last logged; logged again only after the store worked once."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    background: BackgroundSummaries = field(default_factory=lambda: _new_background())

    @classmethod
    def build(
        cls,
        config: CompactionConfig | dict[str, Any] | None = None,
        *,
        model: BaseChatModel | str | None = None,
        fallback_model: BaseChatModel | None = None,
        store: SummaryStore | str | None = None,
        token_counter: TokenCounter | None = None,
        tools: Sequence[BaseTool | dict[str, Any]] | None = None,
        system_prompt: str | None = None,
        namespace: str = "default",
    ) -> CompactionRuntime:
        """Resolve a configuration into a runtime; raises on anything that cannot work."""
        from .nodes.measure import resolve_thresholds, scale_thresholds

        resolved = CompactionConfig.coerce(config)
        if not namespace:
            raise CompactionConfigError("namespace must be a non-empty string")
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
        history = HistoryIndex(token_counter)
        return cls(
            config=resolved,
            store=resolve_store(store, resolved.store_url),
            namespace=namespace,
            summarizer=summarizer,
            fallback_model=fallback_model,
            history=history,
            counter=history.counter,
            fixed_tokens=count_fixed_tokens(history.counter, system_prompt, tools),
            window=window,
            budget=budget,
            thresholds=thresholds,
            precompact_thresholds=scale_thresholds(thresholds, resolved.precompact_ratio),
            needs_refine_count=any(t.kind == "refine" for t in thresholds),
        )

    @property
    def fit_limit(self) -> int | None:
        """What "fits" means: under the budget, or with no window the smallest tokens trigger."""
        if self.budget is not None:
            return self.budget
        limits = [t.limit for t in self.thresholds if t.kind == "tokens"]
        return int(min(limits)) if limits else None

    def summary_message(self, record: SummaryRecord) -> tuple[HumanMessage, int]:
        """The summary message of a stored row and its token count, built once per row."""
        cached = self.summary_messages.get(record.id)
        if cached is None:
            message = make_summary_message(record.summary, record.id)
            cached = (message, self.counter([message]))
            self.remember(self.summary_messages, record.id, cached)
        return cached

    def held(self, key: tuple[str, str]) -> SummaryRecord | None:
        """The summary this process served the thread last, unless the thread was deleted
        (through any SummaryStore of this process) since the call that found it started."""
        entry = self.in_use.get(key)
        if entry is None:
            return None
        record, epoch = entry
        if self.store.deletion_epoch(key[1], key[0]) != epoch:
            with self.lock:
                self.in_use.pop(key, None)
            return None
        return record

    def note_store_failure(self, error: str) -> None:
        """Log a store outage once, not on every turn it lasts."""
        if self.store_failure is None:
            logger.warning("%s; compaction goes on without it until it recovers", error)
        self.store_failure = error

    def note_store_ok(self) -> None:
        if self.store_failure is not None:
            logger.info("summary store %r works again", self.store)
            self.store_failure = None

    def counts(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Token estimates of each message."""
        return [self.counter([message]) for message in messages]

    def learn_summarizer_usage(self, estimate: int, reported: int | None) -> None:
        """Calibrate our count of summary prompts against the summarizer's own."""
        if reported and estimate > 0:
            low, high = _SUMMARIZER_RATIO_BOUNDS
            self.summarizer_ratio = min(max(reported / estimate, low), high)

    def learn_summarizer_overflow(self, overflow: Overflow, estimate: int) -> None:
        """Take in what a prompt refused as too long says about the summarizer's window."""
        if overflow.prompt_tokens and estimate > 0:
            self.learn_summarizer_usage(estimate, overflow.prompt_tokens)
        if overflow.window:
            self.summarizer_window = overflow.window
        # Whatever the message says, the next prompt is smaller than the refused one.
        limit = self._window_limit()
        shrunk = int(estimate * 0.6)
        self.summarizer_limit = min(limit, shrunk) if limit is not None else shrunk

    def _window_limit(self) -> int | None:
        if self.summarizer_window is None:
            return None
        room = self.summarizer_window * _WINDOW_MARGIN - self.config.max_summary_tokens
        return int(room / (self.summarizer_ratio or 1.0))

    def transcript_capacity(self, previous: str | None) -> int | None:
        """Most transcript tokens one summary call may carry: ``trim_tokens_to_summarize``,
        or less when the summarizer is known to take less (its window, a refused prompt)."""
        trim = self.config.trim_tokens_to_summarize
        limits = [x for x in (self._window_limit(), self.summarizer_limit) if x is not None]
        if not limits:
            return trim
        overhead = self.counter([HumanMessage(content=self.config.update_prompt)])
        if previous:
            overhead += self.counter([HumanMessage(content=previous)])
        capacity = max(min(limits) - overhead, _MIN_TRANSCRIPT_TOKENS)
        return capacity if trim is None else min(trim, capacity)

    def remember(self, cache: dict[K, V], key: K, value: V) -> None:
        """Store in a per-process cache, bounded so a long-lived worker does not grow."""
        with self.lock:
            if len(cache) >= _CACHE_LIMIT:
                cache.pop(next(iter(cache)))
            cache[key] = value

    def emit(self, event: dict[str, Any]) -> None:
        """Send a custom stream event; a no-op outside a LangGraph run."""
        try:
            writer = get_stream_writer()
        except RuntimeError:
            return
        writer(event)

    def remember_sent(
        self,
        key: tuple[str, str],
        messages: Sequence[BaseMessage],
        tokens: int,
        ratio: float | None,
    ) -> None:
        """Note what this thread sends, to calibrate against the usage the reply reports."""
        if messages:
            raw = tokens / ratio if ratio else tokens
            self.remember(self.last_sent, key, (len(messages) - 1, messages[-1].id, int(raw)))


def _new_background() -> BackgroundSummaries:
    from ._background import BackgroundSummaries

    return BackgroundSummaries()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What summarize-or-reuse decided: the summary to assemble with, if any."""

    action: Literal["reused", "summarized", "failed", "kept"]
    """``kept``: nothing could be evicted and no summary applies (assemble truncates)."""
    record: SummaryRecord | None
    calls: int = 0
    shortened: int = 0
    over_trim: int = 0
    error: str | None = None


@dataclass
class CallWork:
    """What the nodes after measure hand each other during one call."""

    thread_id: str
    key: tuple[str, str]
    epoch: int
    """The store's deletion epoch of the thread when this call started."""
    messages: Sequence[BaseMessage]
    scan: HistoryScan
    lead: int
    ratio: float | None
    tokens_before: int
    fired: tuple[str, ...]
    model_messages: Sequence[BaseMessage] | None = None
    """The pruned copy of ``messages`` for the model input (None: nothing pruned)."""
    pruned_tokens: dict[int, int] = field(default_factory=dict)
    """Token counts of the pruned copies, by index."""
    pruned_count: int = 0
    thread_state: ThreadState | None = None
    matching: SummaryRecord | None = None
    """The newest stored summary whose prefix still matches this history."""
    plan: Any = None
    outcome: Outcome | None = None
    precompact_from: SummaryRecord | None = None
    """Set when the context nears a trigger: start the next summary in the background."""
