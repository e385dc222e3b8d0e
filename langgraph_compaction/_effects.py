"""I/O at the edges: pipeline steps yield effects, and a sync or async driver runs them.

A step is a generator that yields an effect (a store call or a model call) and receives its
result, so the decision logic is written once and the sync and async paths differ only in
the few lines of the drivers below.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from .store import SummaryStore

__all__ = ["Effect", "ModelCall", "Step", "StoreCall", "adrive", "drive"]

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


Effect = StoreCall | ModelCall
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
