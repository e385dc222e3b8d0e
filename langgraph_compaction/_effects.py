"""I/O at the edges: pipeline steps yield effects, and a sync or async driver runs them.

A step is a generator that yields an effect (a store call, a model call, a pause, a wait for
another call's summary) and receives its result, so the decision logic is written once and
the sync and async paths differ only in the few lines of each effect's two runners: the
async runners never block the event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from ._flights import Flight
from .store import SummaryStore

__all__ = [
    "Effect",
    "ModelCall",
    "Sleep",
    "Step",
    "StoreCall",
    "WaitFlight",
    "adrive",
    "drive",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StoreCall:
    """Call ``SummaryStore.<method>`` (or its ``a``-prefixed async twin)."""

    method: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def run(self, store: SummaryStore) -> Any:
        return getattr(store, self.method)(**self.kwargs)

    async def arun(self, store: SummaryStore) -> Any:
        return await getattr(store, "a" + self.method)(**self.kwargs)


@dataclass(frozen=True, slots=True)
class ModelCall:
    """Invoke a chat model (already bound and tagged) on a prompt."""

    model: Runnable[Any, BaseMessage]
    prompt: list[BaseMessage]

    def run(self, store: SummaryStore) -> BaseMessage:
        return self.model.invoke(self.prompt)

    async def arun(self, store: SummaryStore) -> BaseMessage:
        return await self.model.ainvoke(self.prompt)


@dataclass(frozen=True, slots=True)
class Sleep:
    """Pause before a retry or the next look at another worker's lease."""

    seconds: float

    def run(self, store: SummaryStore) -> None:
        time.sleep(self.seconds)

    async def arun(self, store: SummaryStore) -> None:
        await asyncio.sleep(self.seconds)


@dataclass(frozen=True, slots=True)
class WaitFlight:
    """Wait until another call of this process has made the summary; False on timeout."""

    flight: Flight
    timeout: float

    def run(self, store: SummaryStore) -> bool:
        return self.flight.wait(self.timeout)

    async def arun(self, store: SummaryStore) -> bool:
        return await self.flight.await_(self.timeout)


Effect = StoreCall | ModelCall | Sleep | WaitFlight
Step = Generator[Effect, Any, T]


def drive(step: Step[T], store: SummaryStore) -> T:
    """Run a step on the calling thread; an effect's exception is thrown into the step."""
    try:
        effect = next(step)
        while True:
            try:
                result = effect.run(store)
            except Exception as exc:  # the step decides what a failure means
                effect = step.throw(exc)
            else:
                effect = step.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        step.close()  # a step abandoned midway (cancelled, interrupted) runs its cleanup


async def adrive(step: Step[T], store: SummaryStore) -> T:
    """Run a step on the running event loop; the async twin of ``drive``."""
    try:
        effect = next(step)
        while True:
            try:
                result = await effect.arun(store)
            except Exception as exc:
                effect = step.throw(exc)
            else:
                effect = step.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        step.close()
