"""One conversation replayed call by call through a compiled compaction graph.

At each point where the agent would call its model (``calls.model_call_points``) the graph
gets the true history up to there, as a checkpointer would hand it over, on one thread of the
store; what it returns in ``llm_input_messages`` is what the model would have been sent. The
same call without compaction sends the whole history. Both are counted with the package's
default counter (``content.estimate``) and billed under the price book's cache rules.
"""

from __future__ import annotations

import json
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, message_to_dict
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from langgraph_compaction.content.estimate import message_tokens
from langgraph_compaction.evaluate.calls import model_call_points, tool_pair_violations
from langgraph_compaction.evaluate.fates import item_fates
from langgraph_compaction.evaluate.prices import PriceBook, cached_prefix
from langgraph_compaction.evaluate.records import (
    Bill,
    CallFigures,
    Compaction,
    Conversation,
    ConversationResult,
)
from langgraph_compaction.pipeline.report import CompactionReport
from langgraph_compaction.store.records import SummaryRecord
from langgraph_compaction.store.summary_store import SummaryStore

__all__ = ["replay"]


def _rendered(message: BaseMessage) -> str:
    """A message as the provider gets it, for comparing two calls' prefixes."""
    return json.dumps(message_to_dict(message), sort_keys=True, default=str)


def replay(
    conversation: Conversation,
    graph: CompiledStateGraph[Any, Any, Any, Any],
    store: SummaryStore,
    prices: PriceBook,
    *,
    thread_id: str,
    namespace: str = "default",
    recall: bool = False,
    on_call: Any = None,
) -> ConversationResult:
    """Replay ``conversation`` on ``thread_id``; ``on_call()`` runs after each call (progress)."""
    started = time.perf_counter()
    messages = conversation.messages
    tokens = [message_tokens(m) for m in messages]
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    calls: list[CallFigures] = []
    compactions: list[Compaction] = []
    records: dict[int, SummaryRecord] = {}
    counted: set[int] = set()
    covered = 0  # messages the summaries so far cover
    previous_input: list[str] | None = None
    previous_end = 0
    agent_dollars = without_dollars = summary_dollars = 0.0
    model_input: list[BaseMessage] = list(messages)
    report: CompactionReport | None = None
    for index, end in enumerate(model_call_points(messages)):
        history = list(messages[:end])
        out = graph.invoke({"messages": history}, config)
        model_input = list(out.get("llm_input_messages") or history)
        report = out.get("compaction")
        input_tokens = [message_tokens(m) for m in model_input]
        rendered = [_rendered(m) for m in model_input]
        read, written = cached_prefix(prices.agent.cache, previous_input, rendered, input_tokens)
        previous_input = rendered
        plain = [str(k) for k in range(end)]  # the whole history: an append-only prefix
        read_all, written_all = cached_prefix(
            prices.agent.cache, plain[:previous_end] or None, plain, tokens[:end]
        )
        previous_end = end
        reply = messages[end] if end < len(messages) else None
        output = message_tokens(reply) if isinstance(reply, AIMessage) else 0
        new = _new_summary(report, store, records, counted, thread_id, namespace)
        summary_in = summary_out = 0
        if new is not None:
            summary_in, summary_out = new.input_tokens or 0, new.output_tokens or 0
            compactions.append(
                Compaction(
                    index,
                    new.version,
                    covered,
                    new.covered_messages,
                    tuple(model_input),
                    tuple(history),
                )
            )
            covered = new.covered_messages
        calls.append(
            CallFigures(
                index=index,
                messages=end,
                tokens_without=sum(tokens[:end]),
                tokens_with=sum(input_tokens),
                action=report.action if report else "passthrough",
                summary_version=report.summary_version if report else None,
                summary_calls=report.summary_calls if report else 0,
                summary_input_tokens=summary_in,
                summary_output_tokens=summary_out,
                output_tokens=output,
                cached_with=read,
                cache_written_with=written,
                cached_without=read_all,
                cache_written_without=written_all,
                pair_violations=len(tool_pair_violations(model_input)),
                error=report.error if report else None,
                **_integrity(new),
            )
        )
        agent_dollars += prices.agent.cost(sum(input_tokens), read, written, output)
        without_dollars += prices.agent.cost(sum(tokens[:end]), read_all, written_all, output)
        if summary_in or summary_out:
            summary_dollars += prices.summarizer.cost(summary_in, output=summary_out)
        if on_call is not None:
            on_call()
    final = records.get(report.summary_version) if report and report.summary_version else None

    def search(query: str) -> list[str]:
        hits = store.search_messages(thread_id, query, namespace=namespace, limit=5)
        return [hit.text for hit in hits]

    fates = item_fates(
        messages, model_input, final.summary if final else None, search if recall else None
    )
    return ConversationResult(
        name=conversation.name,
        calls=tuple(calls),
        compactions=tuple(compactions),
        fates=fates,
        bill_with=Bill(agent_dollars, summary_dollars),
        bill_without=Bill(without_dollars, 0.0),
        seconds=time.perf_counter() - started,
    )


def _new_summary(
    report: CompactionReport | None,
    store: SummaryStore,
    records: dict[int, SummaryRecord],
    counted: set[int],
    thread_id: str,
    namespace: str,
) -> SummaryRecord | None:
    """The summary this call uses for the first time (made in this call, or landed from a
    background job since the last one), else None."""
    version = report.summary_version if report else None
    if version is None or version in counted:
        return None
    if version not in records:
        records.update((r.version, r) for r in store.list_summaries(thread_id, namespace=namespace))
    counted.add(version)
    return records.get(version)


def _integrity(record: SummaryRecord | None) -> dict[str, Any]:
    if record is None:
        return {}
    return {
        "integrity_identifiers": record.integrity_identifiers,
        "integrity_kept": record.integrity_kept,
        "integrity_appended": record.integrity_appended,
        "integrity_dropped": record.integrity_dropped,
        "integrity_artifacts": record.integrity_artifacts,
    }
