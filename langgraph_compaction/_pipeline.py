"""What a node of one compaction graph works with: its settings, its memory, its jobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ._call import Measured
from ._effects import Effect
from ._jobs import Jobs
from ._memory import Memory
from ._settings import Settings
from .store import SummaryRecord

__all__ = ["Pipeline", "Precompact"]


@dataclass(frozen=True, slots=True)
class Pipeline:
    """Settings fixed at build time, per-process memory, and the background jobs."""

    settings: Settings
    memory: Memory
    jobs: Jobs


class Precompact(Protocol):
    """Starts the background summary a call nearing a trigger asks for (see ``_background``)."""

    def __call__(
        self, pipe: Pipeline, measured: Measured, in_use: SummaryRecord | None
    ) -> Effect[bool]: ...
