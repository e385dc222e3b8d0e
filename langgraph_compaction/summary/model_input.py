"""The model input a summary in use gives, before anything is dropped to fit.

``[leading system] + [summary] + [rescued, in order] + [kept]``, with the kept messages'
pruned copies when pruning is on, and old media replaced by references. It lives here, below
the nodes, because two readers build it: the assemble node (which then fits it to the budget)
and the summary call of ``summary_context: "conversation"`` (which sends the input the agent's
call would send without a new summary, byte for byte, so that it rides the prompt cache).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage

from langgraph_compaction.content.messages import answered_calls, keep_tool_calls
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.records import Measured
from langgraph_compaction.pruning.epochs import (
    PrunedInput,
    pruned_input,
    summary_phase,
    whole_history_phase,
)
from langgraph_compaction.store import SummaryRecord
from langgraph_compaction.summary.matching import rescued_positions

__all__ = ["ModelInput", "model_input", "split_rescued_caller"]


@dataclass(frozen=True, slots=True)
class ModelInput:
    """The input built from a summary in use (or none), and what fitting it needs to know."""

    body: list[BaseMessage]
    """The messages, in order (a fresh list: the caller may fit it in place)."""
    tokens: list[int]
    """Each message's tokens, as ``body`` (a fresh list too)."""
    kept_at: int
    """Where the kept messages start in ``body``."""
    kept_from: int
    """Where the kept messages start in the history."""
    summary_tokens: int
    """The summary message's tokens (0: no summary)."""
    rescued: tuple[int, ...]
    """History indexes of the summary's rescued messages."""
    pruned: PrunedInput
    """What pruning did to the copies."""


def split_rescued_caller(
    messages: Sequence[BaseMessage], index: int, rescued: set[int]
) -> BaseMessage:
    """An AI message keeps only the calls whose results were rescued with it (by position).

    The other calls, answered or not, went to the summary with the whole message; the copy
    drops them in every form they take (``content.messages.keep_tool_calls``).
    """
    message = messages[index]
    if not isinstance(message, AIMessage) or not message.tool_calls:
        return message
    answered = answered_calls(messages, index)
    return keep_tool_calls(message, [call for r, call in answered.items() if r in rescued])


def model_input(pipe: Pipeline, measured: Measured, record: SummaryRecord | None) -> ModelInput:
    """The input with ``record`` as the summary in use (None: the whole history)."""
    settings = pipe.settings
    messages, scan, lead = measured.messages, measured.scan, measured.lead
    rescued = rescued_positions(pipe, record, messages) if record is not None else ()
    phase = (
        summary_phase(pipe, measured, record, rescued)
        if record is not None
        else whole_history_phase(pipe, measured)
    )
    pruned = pruned_input(pipe, measured, phase, rescued)
    source = pruned.apply(messages)

    def size(index: int) -> int:
        return pruned.tokens(index, scan.token(index))

    body: list[BaseMessage] = list(source[:lead])
    tokens: list[int] = [size(i) for i in range(lead)]
    kept_from, summary_tokens = lead, 0
    if record is not None:
        summary, summary_tokens = pipe.memory.summary_message(
            record, settings.recall_tool, settings.config.cache_breakpoint
        )
        rescued_set = set(rescued)
        body.append(summary)
        tokens.append(summary_tokens)
        for index in rescued:
            body.append(split_rescued_caller(source, index, rescued_set))
            tokens.append(size(index))
        kept_from = record.covered_messages
    kept_at = len(body)
    body.extend(source[kept_from:])
    if pruned.copies:
        tokens.extend(size(i) for i in range(kept_from, len(source)))
    else:  # nothing treated: the kept messages' counts are one slice of the scan's
        tokens.extend(scan.tokens_of(kept_from, len(source)))
    return ModelInput(body, tokens, kept_at, kept_from, summary_tokens, rescued, pruned)
