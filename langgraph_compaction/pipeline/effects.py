"""I/O at the edges: pipeline steps yield typed effects, and a sync or async driver runs them.

A step is a generator, as httpx's ``Auth.auth_flow`` is: it yields an effect (a store call, a
model call, a pause, a wait for another call's summary, starting background work) and is sent
back the effect's result; ``yield from perform(effect)`` gives that result its type. So the
decision logic is written once, and the two paths differ only in each effect's two runners,
``run`` and ``arun``; the async runners never block the event loop.

A model call may be bounded in time (``ModelCall.timeout``). Async, the call is cancelled when
the time is up. Sync, a chat model's ``invoke`` cannot be interrupted, so it runs on a daemon
worker thread (with a copy of the caller's context, so LangChain callbacks, LangGraph's config
and its stream writer still apply) and the step stops waiting for it: the abandoned call
finishes on its own, and its result is discarded, never used or stored.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from langgraph_compaction.pipeline.flights import Flight
from langgraph_compaction.store import (
    CompactionRequest,
    Lease,
    SummaryRecord,
    SummaryStore,
    ThreadControls,
    ThreadState,
)
from langgraph_compaction.store.summary_store import plumbing

__all__ = [
    "Effect",
    "ModelCall",
    "ModelCallTimeout",
    "Sleep",
    "Start",
    "Step",
    "StoreCall",
    "WaitFlight",
    "acquire_lease",
    "add_summary",
    "adrive",
    "drive",
    "find_summary",
    "latest_summaries",
    "next_version",
    "perform",
    "record_failure",
    "release_lease",
    "reset_failures",
    "set_calibration",
    "thread_state",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Effect(Protocol[T_co]):
    """Something a step asks its driver to do, on the calling thread or on the event loop."""

    def run(self, store: SummaryStore) -> T_co: ...

    def arun(self, store: SummaryStore) -> Awaitable[T_co]: ...


Step = Generator["Effect[Any]", Any, T]
"""A pipeline step: yields effects, is sent their results, returns ``T``."""


def perform(effect: Effect[T]) -> Generator[Effect[Any], Any, T]:
    """``result = yield from perform(effect)``: the effect's result, typed."""
    return cast(T, (yield effect))


@dataclass(frozen=True, slots=True)
class StoreCall(Generic[T]):
    """One SummaryStore method, as its sync and its async twin."""

    sync: Callable[[SummaryStore], T]
    asynchronous: Callable[[SummaryStore], Awaitable[T]]

    def run(self, store: SummaryStore) -> T:
        return self.sync(store)

    def arun(self, store: SummaryStore) -> Awaitable[T]:
        return self.asynchronous(store)


class ModelCallTimeout(TimeoutError):
    """A model call gave no reply within its time bound."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"no reply within {timeout:g} s; the call was abandoned")
        self.timeout = timeout


@dataclass(frozen=True, slots=True)
class ModelCall:
    """Invoke a chat model (already bound and tagged) on a prompt, within ``timeout`` seconds.

    Raises ``ModelCallTimeout`` past the timeout (None: no bound).
    """

    model: Runnable[Any, BaseMessage]
    prompt: Sequence[BaseMessage]
    timeout: float | None = None

    def run(self, store: SummaryStore) -> BaseMessage:
        if self.timeout is None:
            return self.model.invoke(list(self.prompt))
        return _invoke_within(self.model, list(self.prompt), self.timeout)

    def arun(self, store: SummaryStore) -> Awaitable[BaseMessage]:
        if self.timeout is None:
            return self.model.ainvoke(list(self.prompt))
        return _ainvoke_within(self.model, list(self.prompt), self.timeout)


def _invoke_within(
    model: Runnable[Any, BaseMessage], prompt: list[BaseMessage], timeout: float
) -> BaseMessage:
    """``model.invoke`` on a daemon thread, waited for at most ``timeout`` seconds."""
    reply: Future[BaseMessage] = Future()
    context = contextvars.copy_context()

    def call() -> None:
        try:
            result = context.run(model.invoke, prompt)
        except BaseException as exc:  # handed to the waiting step, or dropped with the call
            reply.set_exception(exc)
        else:
            reply.set_result(result)

    # A daemon thread: a call that never returns must not hold up the interpreter's exit.
    threading.Thread(target=call, name="compaction-summary-call", daemon=True).start()
    try:
        return reply.result(timeout)
    except TimeoutError:
        if reply.done():  # it answered or failed just as the time ran out
            return reply.result()
        raise ModelCallTimeout(timeout) from None


async def _ainvoke_within(
    model: Runnable[Any, BaseMessage], prompt: list[BaseMessage], timeout: float
) -> BaseMessage:
    """``model.ainvoke``, cancelled after ``timeout`` seconds."""
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            return await model.ainvoke(prompt)
    except TimeoutError:
        if scope.expired():  # not a TimeoutError the model raised itself
            raise ModelCallTimeout(timeout) from None
        raise


@dataclass(frozen=True, slots=True)
class Sleep:
    """Pause before a retry or the next look at another worker's lease."""

    seconds: float

    def run(self, store: SummaryStore) -> None:
        time.sleep(self.seconds)

    def arun(self, store: SummaryStore) -> Awaitable[None]:
        return asyncio.sleep(self.seconds)


@dataclass(frozen=True, slots=True)
class WaitFlight:
    """Wait until another call (or a background job) has landed; False on timeout."""

    flight: Flight
    timeout: float

    def run(self, store: SummaryStore) -> bool:
        return self.flight.wait(self.timeout)

    def arun(self, store: SummaryStore) -> Awaitable[bool]:
        return self.flight.await_(self.timeout)


@dataclass(frozen=True, slots=True)
class Start:
    """Start background work: a daemon thread on the sync path, a task on the running loop.

    Each callable only starts the work (it returns at once) and says whether it did.
    """

    in_thread: Callable[[], bool]
    on_loop: Callable[[], bool]

    def run(self, store: SummaryStore) -> bool:
        return self.in_thread()

    def arun(self, store: SummaryStore) -> Awaitable[bool]:
        return _now(self.on_loop())


async def _now(value: T) -> T:
    return value


# -- the store calls the pipeline makes ------------------------------------------------------


def thread_state(thread_id: str, namespace: str) -> StoreCall[ThreadState]:
    return StoreCall(
        lambda s: s.thread_state(thread_id, namespace),
        lambda s: s.athread_state(thread_id, namespace),
    )


def latest_summaries(thread_id: str, namespace: str, limit: int) -> StoreCall[list[SummaryRecord]]:
    return StoreCall(
        lambda s: s.latest_summaries(thread_id, namespace, limit),
        lambda s: s.alatest_summaries(thread_id, namespace, limit),
    )


def find_summary(
    thread_id: str, namespace: str, prefix_hash: str
) -> StoreCall[SummaryRecord | None]:
    return StoreCall(
        lambda s: plumbing(s).find_summary(thread_id, namespace, prefix_hash),
        lambda s: plumbing(s).afind_summary(thread_id, namespace, prefix_hash),
    )


def set_calibration(
    thread_id: str, namespace: str, ratio: float, generation: int
) -> StoreCall[None]:
    return StoreCall(
        lambda s: plumbing(s).set_calibration(thread_id, namespace, ratio, generation=generation),
        lambda s: plumbing(s).aset_calibration(thread_id, namespace, ratio, generation=generation),
    )


def record_failure(
    thread_id: str, namespace: str, message_count: int, error: str, generation: int | None
) -> StoreCall[ThreadState]:
    kwargs = {"message_count": message_count, "error": error, "generation": generation}
    return StoreCall(
        lambda s: plumbing(s).record_failure(thread_id, namespace, **kwargs),  # type: ignore[arg-type]
        lambda s: plumbing(s).arecord_failure(thread_id, namespace, **kwargs),  # type: ignore[arg-type]
    )


def reset_failures(thread_id: str, namespace: str, generation: int | None) -> StoreCall[None]:
    return StoreCall(
        lambda s: plumbing(s).reset_failures(thread_id, namespace, generation=generation),
        lambda s: plumbing(s).areset_failures(thread_id, namespace, generation=generation),
    )


def acquire_lease(thread_id: str, namespace: str, prefix_hash: str) -> StoreCall[Lease | None]:
    return StoreCall(
        lambda s: plumbing(s).acquire_lease(thread_id, namespace, prefix_hash),
        lambda s: plumbing(s).aacquire_lease(thread_id, namespace, prefix_hash),
    )


def release_lease(lease: Lease) -> StoreCall[None]:
    return StoreCall(
        lambda s: plumbing(s).release_lease(lease), lambda s: plumbing(s).arelease_lease(lease)
    )


def add_summary(**fields: Any) -> StoreCall[SummaryRecord]:
    """``Plumbing.add_summary`` with these keyword arguments."""
    return StoreCall(
        lambda s: plumbing(s).add_summary(**fields), lambda s: plumbing(s).aadd_summary(**fields)
    )


def thread_controls(thread_id: str, namespace: str) -> StoreCall[ThreadControls]:
    """``Plumbing.thread_controls``: the thread's control version, one cheap read."""
    return StoreCall(
        lambda s: plumbing(s).thread_controls(thread_id, namespace),
        lambda s: plumbing(s).athread_controls(thread_id, namespace),
    )


def pending_request(thread_id: str, namespace: str) -> StoreCall[CompactionRequest | None]:
    """The thread's pending compaction request, left pending."""
    return StoreCall(
        lambda s: plumbing(s).pending_request(thread_id, namespace),
        lambda s: plumbing(s).apending_request(thread_id, namespace),
    )


def consume_request(thread_id: str, namespace: str, request: CompactionRequest) -> StoreCall[bool]:
    """Consume ``request`` when its call settled without storing a summary."""
    return StoreCall(
        lambda s: plumbing(s).consume_request(thread_id, namespace, request),
        lambda s: plumbing(s).aconsume_request(thread_id, namespace, request),
    )


def pinned_messages(thread_id: str, namespace: str) -> StoreCall[frozenset[str]]:
    """``SummaryStore.pinned_messages``: ids of the thread's pinned messages."""
    return StoreCall(
        lambda s: s.pinned_messages(thread_id, namespace=namespace),
        lambda s: s.apinned_messages(thread_id, namespace=namespace),
    )


def save_review(**fields: Any) -> StoreCall[None]:
    """``Plumbing.save_review`` with these keyword arguments."""
    return StoreCall(
        lambda s: plumbing(s).save_review(**fields), lambda s: plumbing(s).asave_review(**fields)
    )


def drop_review(
    thread_id: str, namespace: str, prefix_hash: str, request: CompactionRequest | None = None
) -> StoreCall[None]:
    """Forget the draft of this prefix (accepted or rejected); with ``request``, consume it in
    the same transaction (a rejection answers the request)."""
    return StoreCall(
        lambda s: plumbing(s).drop_review(thread_id, namespace, prefix_hash, request),
        lambda s: plumbing(s).adrop_review(thread_id, namespace, prefix_hash, request),
    )


def next_version(thread_id: str, namespace: str) -> StoreCall[int]:
    """``SummaryStore.next_version``: the version the thread's next summary gets."""
    return StoreCall(
        lambda s: plumbing(s).next_version(thread_id, namespace),
        lambda s: plumbing(s).anext_version(thread_id, namespace),
    )


# -- drivers ---------------------------------------------------------------------------------


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
        return cast(T, stop.value)
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
        return cast(T, stop.value)
    finally:
        step.close()
