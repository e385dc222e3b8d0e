"""prune: shrink the model input copy (cheap before expensive).

Two layers, both on the model input copy only (state, checkpoint and summarizer keep the
originals): old, large tool results treated by the pruning epochs of the whole history
(``pruning.epochs``: decided at trigger crossings and frozen in between), and media older than the
last ``pruning.media_keep_last`` user turns replaced by a text reference (``pruning.old_media``).
The same history always gives the same bytes. When the shrunk context no longer fires a
trigger, no summary is needed.

    prune -> assemble (the shrunk copy fits) | partition
"""

from __future__ import annotations

from langgraph.types import Command

from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.records import Measured, MeasuredInput, Outcome
from langgraph_compaction.pruning.epochs import (
    input_shrinks,
    pruned_triggers,
    refine_count,
    whole_history_phase,
)

__all__ = ["prune_node", "pruning_fits"]


def pruning_fits(pipe: Pipeline, measured: Measured) -> bool:
    """Whether shrinking the whole history's model input copy makes the context fit."""
    if not input_shrinks(pipe):
        return False
    phase = whole_history_phase(pipe, measured)
    refine = refine_count(pipe, measured, measured.lead)
    return not pruned_triggers(pipe, measured, phase, len(measured.messages), refine)


def prune_node(pipe: Pipeline, state: MeasuredInput) -> Command[str]:
    """The node (no I/O): assemble the shrunk copy, or go on to summarize (always when the
    call is forced: pruning fitting is no reason to skip a compaction asked for)."""
    measured = state["measured"]
    if not measured.control.force and pruning_fits(pipe, measured):
        return Command(goto="assemble", update={"outcome": Outcome("pruned", None)})
    return Command(goto="partition")
