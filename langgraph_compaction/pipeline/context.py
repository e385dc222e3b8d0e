"""What a node of one compaction graph works with: its settings, its memory, its jobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from langgraph_compaction.config.settings import Settings
from langgraph_compaction.pipeline.effects import Effect
from langgraph_compaction.pipeline.jobs import Jobs
from langgraph_compaction.pipeline.memory import Memory
from langgraph_compaction.pipeline.records import Measured
from langgraph_compaction.store import SummaryRecord

__all__ = ["Pipeline", "Precompact"]


@dataclass(frozen=True, slots=True)
class Pipeline:
    """Settings fixed at build time, per-process memory, and the background jobs."""

    settings: Settings
    memory: Memory
    jobs: Jobs


class Precompact(Protocol):
    """Starts the background summary a call nearing a trigger asks for (see ``precompaction``)."""

    def __call__(
        self, pipe: Pipeline, measured: Measured, in_use: SummaryRecord | None
    ) -> Effect[bool]: ...
