"""State schemas of the compaction subgraph.

The input holds only ``messages`` and the output only the two untracked keys, so embedding
the subgraph never writes the history (or anything else) back into a parent's checkpoint.
"""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import AnyMessage
from langgraph.channels.untracked_value import UntrackedValue
from typing_extensions import TypedDict

from langgraph_compaction.pipeline.report import CompactionReport

__all__ = ["CompactionInput", "CompactionOutput", "CompactionState"]


class CompactionInput(TypedDict):
    """What the subgraph reads: the conversation, never written."""

    messages: list[AnyMessage]


class CompactionOutput(TypedDict, total=False):
    """What the subgraph writes; a parent declares both keys with ``UntrackedValue`` too."""

    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


class CompactionState(CompactionInput, CompactionOutput):
    """The subgraph's state: ``messages`` in, ``llm_input_messages`` and ``compaction`` out."""
