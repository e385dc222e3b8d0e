"""create_compaction_graph: the compaction pipeline as a compiled LangGraph subgraph.

    measure -> END | prune                   (pass through or serve a summary; go on)
    prune -> assemble | partition            (pruning alone fits; go on)
    partition -> summarize -> assemble -> END

When measure serves a summary (the one it holds, or a stored one a restarted worker finds),
assemble's function runs in measure's step and the call ends there: a LangGraph step costs
about as much as the rest of a warm call, so the common call is one step, not two.

Every node returns ``Command(goto=...)`` or a plain update of frozen records, so the drawing
(``graph.get_graph().draw_mermaid()``) shows where work happens. A node that does I/O is a
step of effects run by the sync or the async driver; one class makes both paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.config.settings import Compactor, Settings
from langgraph_compaction.content.tokens import TokenCounter
from langgraph_compaction.nodes.assemble import assemble_node
from langgraph_compaction.nodes.measure import measure_step
from langgraph_compaction.nodes.partition import partition_step
from langgraph_compaction.nodes.prune import prune_node
from langgraph_compaction.nodes.summarize import summarize_step
from langgraph_compaction.pipeline.context import Pipeline, Precompact
from langgraph_compaction.pipeline.effects import Step, adrive, drive
from langgraph_compaction.pipeline.jobs import Jobs
from langgraph_compaction.pipeline.memory import Memory
from langgraph_compaction.pipeline.records import (
    DecisionInput,
    MeasuredInput,
    OutcomeInput,
    WorkingState,
)
from langgraph_compaction.pipeline.state import CompactionInput, CompactionOutput, CompactionState
from langgraph_compaction.precompaction import precompact
from langgraph_compaction.store import SummaryStore

__all__ = ["build_graph", "build_pipeline", "create_compaction_graph", "serving"]

S = TypeVar("S")
T = TypeVar("T")
CompiledCompaction = CompiledStateGraph[CompactionState, None, CompactionInput, CompactionOutput]


def create_compaction_graph(
    config: CompactionConfig | dict[str, Any] | None = None,
    *,
    model: BaseChatModel | str | None = None,
    fallback_model: BaseChatModel | None = None,
    store: SummaryStore | str | None = None,
    token_counter: TokenCounter | None = None,
    tools: Sequence[BaseTool | dict[str, Any]] | None = None,
    system_prompt: str | None = None,
    namespace: str = "default",
    name: str = "compaction",
    summarize: Compactor | None = None,
) -> CompiledStateGraph[CompactionState, None, CompactionInput, CompactionOutput]:
    """Build the compaction subgraph: put it right before the model node.

    It reads ``messages`` and writes only ``llm_input_messages`` (the model input) and
    ``compaction`` (a CompactionReport), both untracked, so nothing it does is checkpointed.

    Args:
        config: a CompactionConfig, a dict of its fields (snake_case or camelCase), or None.
        model: the summarizer, a chat model or a "provider:model" string; None uses
            ``config.model``, else ``fallback_model``.
        fallback_model: the agent's own model: tried once when the summarizer fails, and the
            source of the context window (its profile) when ``context_window`` is not set.
        store: where summaries live: a SummaryStore, or its URL; None opens
            ``SummaryStore(config.store_url)``.
        token_counter: counts a list of messages; default: langchain-core's approximation.
        tools: tool schemas the model node binds itself (counted, never inserted).
        system_prompt: a system prompt the model node adds outside ``messages`` (counted).
        namespace: separates several agents or tenants in one thread.
        name: the subgraph's name in traces and streams.
        summarize: your own compactor, ``fn(messages, previous, instruction) -> str`` (sync
            or async), used instead of the summary model; its reply goes through the same
            checks, caps, events and storage.

    Returns:
        The compiled subgraph (``checkpointer=False``: all durable state is in the store).

    Raises:
        CompactionConfigError: the configuration cannot work (e.g. a ratio trigger without a
            known context window), or ``store`` is neither a SummaryStore nor a URL.
        SummaryStoreError: ``store`` is a URL that cannot name a summary store.
    """
    pipe = build_pipeline(
        config,
        model=model,
        fallback_model=fallback_model,
        store=store,
        token_counter=token_counter,
        tools=tools,
        system_prompt=system_prompt,
        namespace=namespace,
        summarize=summarize,
    )
    return build_graph(pipe, name=name)


def build_pipeline(
    config: CompactionConfig | dict[str, Any] | None = None,
    *,
    model: BaseChatModel | str | None = None,
    fallback_model: BaseChatModel | None = None,
    store: SummaryStore | str | None = None,
    token_counter: TokenCounter | None = None,
    tools: Sequence[BaseTool | dict[str, Any]] | None = None,
    system_prompt: str | None = None,
    namespace: str = "default",
    summarize: Compactor | None = None,
) -> Pipeline:
    """Resolve the settings once and give them fresh memory and jobs."""
    memory = Memory(token_counter)
    settings = Settings.build(
        config,
        model=model,
        fallback_model=fallback_model,
        store=store,
        counter=memory.counter,
        tools=tools,
        system_prompt=system_prompt,
        namespace=namespace,
        summarize=summarize,
    )
    return Pipeline(settings, memory, Jobs())


StepFunction = Callable[[Pipeline, Precompact, S, RunnableConfig], Step[T]]

_SERVING: ContextVar[Pipeline | None] = ContextVar("compaction_serving", default=None)
"""The pipeline one call of a graph runs with when its caller chose it (``serving``)."""


@contextmanager
def serving(pipe: Pipeline) -> Iterator[None]:
    """Run the graphs of ``build_graph`` that share ``pipe.jobs`` with ``pipe`` for this call.

    For ``CompactionMiddleware``: the system prompt and tools come with each request, so
    each call brings its own settings (``fixed_tokens``) over the middleware's one memory and
    one job queue, and one compiled graph serves every prompt. A context variable reaches the
    nodes on both paths (LangGraph runs each node in a copy of the caller's context).
    """
    token = _SERVING.set(pipe)
    try:
        yield
    finally:
        _SERVING.reset(token)


def _served(pipe: Pipeline) -> Pipeline:
    """The pipeline this call runs with: the caller's (``serving``), or the graph's own."""
    chosen = _SERVING.get()
    return chosen if chosen is not None and chosen.jobs is pipe.jobs else pipe


class _StepNode(Runnable[S, T], Generic[S, T]):
    """A node whose step yields effects: the sync driver on ``invoke``, the async on
    ``ainvoke``. A plain Runnable (no callbacks of its own), so a node is one traced run."""

    def __init__(self, name: str, pipe: Pipeline, step: StepFunction[S, T]) -> None:
        self.name = name
        self._pipe, self._step = pipe, step

    def invoke(self, input: S, config: RunnableConfig | None = None, **_: Any) -> T:
        return self._run(_served(self._pipe), input, config)

    async def ainvoke(self, input: S, config: RunnableConfig | None = None, **_: Any) -> T:
        return await self._arun(_served(self._pipe), input, config)

    def _run(self, pipe: Pipeline, input: S, config: RunnableConfig | None) -> T:
        return drive(self._step(pipe, precompact, input, config or {}), pipe.settings.store)

    async def _arun(self, pipe: Pipeline, input: S, config: RunnableConfig | None) -> T:
        return await adrive(self._step(pipe, precompact, input, config or {}), pipe.settings.store)


class _MeasureNode(_StepNode[CompactionInput, Command[str]]):
    """measure; a summary it serves is assembled in the same step (``assemble_node``)."""

    def invoke(
        self, input: CompactionInput, config: RunnableConfig | None = None, **_: Any
    ) -> Command[str]:
        pipe = _served(self._pipe)
        return _assembled(pipe, self._run(pipe, input, config))

    async def ainvoke(
        self, input: CompactionInput, config: RunnableConfig | None = None, **_: Any
    ) -> Command[str]:
        pipe = _served(self._pipe)
        return _assembled(pipe, await self._arun(pipe, input, config))


def _assembled(pipe: Pipeline, command: Command[str]) -> Command[str]:
    """A ``goto="assemble"`` turned into assemble's output and the end of the call."""
    if command.goto != "assemble" or not isinstance(command.update, dict):
        return command
    return Command(goto=END, update=assemble_node(pipe, cast(OutcomeInput, command.update)))


class _PlainNode(Runnable[S, T], Generic[S, T]):
    """A node without I/O: the same function on both paths."""

    def __init__(self, name: str, pipe: Pipeline, func: Callable[[Pipeline, S], T]):
        self.name = name
        self._pipe, self._func = pipe, func

    def invoke(self, input: S, config: RunnableConfig | None = None, **_: Any) -> T:
        return self._func(_served(self._pipe), input)

    async def ainvoke(self, input: S, config: RunnableConfig | None = None, **_: Any) -> T:
        return self._func(_served(self._pipe), input)


def build_graph(pipe: Pipeline, *, name: str = "compaction") -> CompiledCompaction:
    """Wire the five nodes over a resolved pipeline."""
    builder = StateGraph(WorkingState, input_schema=CompactionInput, output_schema=CompactionOutput)
    # Each node declares what it reads (its input schema), as langgraph's prebuilt agent does.
    builder.add_node(
        "measure",
        _MeasureNode("measure", pipe, measure_step),
        input_schema=CompactionInput,
        destinations=("prune", END),
    )
    builder.add_node(
        "prune",
        _PlainNode("prune", pipe, prune_node),
        input_schema=MeasuredInput,
        destinations=("assemble", "partition"),
    )
    builder.add_node(
        "partition", _StepNode("partition", pipe, partition_step), input_schema=MeasuredInput
    )
    builder.add_node(
        "summarize", _StepNode("summarize", pipe, summarize_step), input_schema=DecisionInput
    )
    builder.add_node(
        "assemble", _PlainNode("assemble", pipe, assemble_node), input_schema=OutcomeInput
    )
    builder.add_edge(START, "measure")
    builder.add_edge("partition", "summarize")
    builder.add_edge("summarize", "assemble")
    builder.add_edge("assemble", END)
    graph = builder.compile(checkpointer=False, name=name)
    for node in graph.nodes.values():
        # LangGraph joins a node with its channel writers on first use; done here, a
        # restarted worker's first call does not pay it (about 0.1 ms a node).
        _ = node.node
    return graph  # type: ignore[return-value]  # the working keys are internal
