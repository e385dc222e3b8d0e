"""create_compaction_graph: the compaction pipeline as a compiled LangGraph subgraph.

    measure -> prune -> partition -> summarize -> assemble

Each node is a thin wrapper over the pure functions of ``nodes/``; the store and model calls
are effects run by a sync or an async driver, so both paths share one implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph._internal._runnable import RunnableCallable
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ._background import start_precompaction
from ._config import CompactionConfig
from ._effects import adrive, drive
from ._exceptions import SummaryStoreError
from ._messages import coerce_messages
from ._runtime import CallWork, CompactionRuntime, Outcome
from ._state import CompactionInput, CompactionOutput, CompactionState, WorkingState
from ._tokens import TokenCounter
from .nodes.assemble import assemble
from .nodes.measure import measure
from .nodes.partition import Partition, compressed_triggers, partition_step, still_serves
from .nodes.prune import apply_pruning, prune
from .nodes.summarize import outage_outcome, summarize_step
from .store import SummaryStore

__all__ = ["build_graph", "create_compaction_graph"]

Update = dict[str, Any]


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

    Returns:
        The compiled subgraph (``checkpointer=False``: all durable state is in the store).

    Raises:
        CompactionConfigError: the configuration cannot work (e.g. a ratio trigger without a
            known context window), or ``store`` is neither a SummaryStore nor a URL.
        SummaryStoreError: ``store`` is a URL that cannot name a summary store.
    """
    runtime = CompactionRuntime.build(
        config,
        model=model,
        fallback_model=fallback_model,
        store=store,
        token_counter=token_counter,
        tools=tools,
        system_prompt=system_prompt,
        namespace=namespace,
    )
    return build_graph(runtime, name=name)


def build_graph(
    runtime: CompactionRuntime, *, name: str = "compaction"
) -> CompiledStateGraph[CompactionState, None, CompactionInput, CompactionOutput]:
    """Wire the five nodes over a resolved runtime."""

    def measured(state: WorkingState, config: RunnableConfig, use_loop: bool) -> Update:
        messages = coerce_messages(state)
        work, report = measure(runtime, messages, config)
        if report is None:
            assert work is not None
            record = still_serves(runtime, work)
            if record is None:
                return {"work": work}
            work.outcome = Outcome("reused", record)  # served from memory: assemble now
            if runtime.precompact_thresholds and compressed_triggers(
                runtime, work, record, runtime.precompact_thresholds
            ):
                start_precompaction(runtime, work, record, use_loop=use_loop)
            apply_pruning(runtime, work)
            return _assembled(runtime, work)
        if work is not None:  # passes through, but nears a trigger
            start_precompaction(runtime, work, None, use_loop=use_loop)
        return {"llm_input_messages": messages, "compaction": report}

    def measure_node(state: WorkingState, config: RunnableConfig) -> Update:
        return measured(state, config, use_loop=False)

    async def ameasure_node(state: WorkingState, config: RunnableConfig) -> Update:
        return measured(state, config, use_loop=True)

    def prune_node(state: WorkingState) -> Update:
        work: CallWork = state["work"]
        if prune(runtime, work):
            return _assembled(runtime, work, pruned_only=True)
        return {"work": work}

    async def aprune_node(state: WorkingState) -> Update:
        return prune_node(state)

    def partition_node(state: WorkingState) -> Update:
        work: CallWork = state["work"]
        try:
            drive(partition_step(runtime, work), runtime.store)
            if isinstance(work.plan, Partition) and runtime.background.running(work.key):
                runtime.background.wait(work.key)  # never a second summary of what is made
                drive(partition_step(runtime, work), runtime.store)
        except SummaryStoreError as exc:  # the agent's call goes ahead without the store
            work.outcome = outage_outcome(runtime, work, exc)
            return {"work": work}
        runtime.note_store_ok()
        if work.precompact_from is not None:
            start_precompaction(runtime, work, work.precompact_from, use_loop=False)
        return {"work": work}

    async def apartition_node(state: WorkingState) -> Update:
        work: CallWork = state["work"]
        try:
            await adrive(partition_step(runtime, work), runtime.store)
            if isinstance(work.plan, Partition) and runtime.background.running(work.key):
                await runtime.background.await_(work.key)
                await adrive(partition_step(runtime, work), runtime.store)
        except SummaryStoreError as exc:
            work.outcome = outage_outcome(runtime, work, exc)
            return {"work": work}
        runtime.note_store_ok()
        if work.precompact_from is not None:
            start_precompaction(runtime, work, work.precompact_from, use_loop=True)
        return {"work": work}

    def summarize_node(state: WorkingState) -> Update:
        work: CallWork = state["work"]
        if work.outcome is None:  # else the store failed in partition: assemble what fits
            try:
                work.outcome = drive(summarize_step(runtime, work), runtime.store)
            except SummaryStoreError as exc:
                work.outcome = outage_outcome(runtime, work, exc)
        return {"work": work}

    async def asummarize_node(state: WorkingState) -> Update:
        work: CallWork = state["work"]
        if work.outcome is None:
            try:
                work.outcome = await adrive(summarize_step(runtime, work), runtime.store)
            except SummaryStoreError as exc:
                work.outcome = outage_outcome(runtime, work, exc)
        return {"work": work}

    def assemble_node(state: WorkingState) -> Update:
        apply_pruning(runtime, state["work"])  # the pruned copy for the summary in use
        return _assembled(runtime, state["work"])

    async def aassemble_node(state: WorkingState) -> Update:
        return assemble_node(state)

    def after_measure(state: WorkingState) -> Literal["prune", "__end__"]:
        return "__end__" if "llm_input_messages" in state else "prune"

    def after_prune(state: WorkingState) -> Literal["partition", "__end__"]:
        return "__end__" if "llm_input_messages" in state else "partition"

    builder = StateGraph(WorkingState, input_schema=CompactionInput, output_schema=CompactionOutput)
    for node_name, func, afunc in (
        ("measure", measure_node, ameasure_node),
        ("prune", prune_node, aprune_node),
        ("partition", partition_node, apartition_node),
        ("summarize", summarize_node, asummarize_node),
        ("assemble", assemble_node, aassemble_node),
    ):
        builder.add_node(node_name, RunnableCallable(func, afunc, name=node_name, trace=False))
    builder.add_edge(START, "measure")
    builder.add_conditional_edges("measure", after_measure)
    builder.add_conditional_edges("prune", after_prune)
    builder.add_edge("partition", "summarize")
    builder.add_edge("summarize", "assemble")
    builder.add_edge("assemble", END)
    graph = builder.compile(checkpointer=False, name=name)
    return graph  # type: ignore[return-value]  # the working key is internal


def _assembled(runtime: CompactionRuntime, work: CallWork, pruned_only: bool = False) -> Update:
    outcome = work.outcome
    if outcome is not None and outcome.record is not None and outcome.action != "failed":
        runtime.remember(runtime.in_use, work.key, (outcome.record, work.epoch))
    messages, report = assemble(runtime, work, outcome, pruned_only=pruned_only)
    return {"llm_input_messages": messages, "compaction": report}
