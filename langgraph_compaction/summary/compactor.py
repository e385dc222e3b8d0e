"""Your own compactor (``summarize=``), called where the summary model would be.

``fn(messages, previous, instruction) -> str`` (or a coroutine function) gets the evicted
messages (the original objects, media and all), the previous summary's text and the joined
instructions, in one call: chunking exists to fit a model's window, and a function has no
window we know of (it may chunk itself). It runs as an effect, so both paths stay off the
event loop and within ``summary_timeout``, as a model call does:

- sync path: on a daemon worker thread with a copy of the caller's context (LangGraph's config
  and stream writer still apply), waited for at most ``summary_timeout``; a coroutine
  function runs to completion on that thread's own event loop;
- async path: a coroutine function is awaited (cancelled past the timeout); a plain function
  runs in a worker thread (``asyncio.to_thread``), never on the loop.

The call runs as one chain run named ``compaction_summary`` with the summary calls' tags and
metadata (a ``RunnableLambda`` given those labels), so callbacks and LangSmith see it where a
summary model's run would be. A function reports no usage: its summaries' usage is null.

A call past the timeout is abandoned and its result discarded. An exception, a timeout, a
reply that is not text, or blank text is a failure (``SummarizerError`` naming the function):
the summarize step then tries the fallback model once, as it would after a summary model.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import Awaitable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.errors import GraphBubbleUp

from langgraph_compaction.config.settings import Compactor
from langgraph_compaction.errors import SummarizerError
from langgraph_compaction.pipeline.effects import ModelCallTimeout, Step
from langgraph_compaction.store import SummaryStore
from langgraph_compaction.summary.model_call import SUMMARY_RUN_NAME

__all__ = ["CompactorCall", "compactor_name", "compactor_reply"]


def compactor_name(fn: Compactor) -> str:
    """The model column of a summary the compactor made: ``custom:<qualified name>``."""
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"custom:{name}"


def _is_async(fn: Compactor) -> bool:
    """A coroutine function, a partial of one, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  # the method itself, not callable()
    )


@dataclass(frozen=True, slots=True)
class CompactorCall:
    """Call the compactor once, within ``timeout`` seconds (None: no bound), as a run
    labelled ``labels`` (``summary.model_call.summary_labels``).

    Raises ``ModelCallTimeout`` past the timeout, or what the function raised.
    """

    fn: Compactor
    messages: tuple[BaseMessage, ...]
    previous: str | None
    instruction: str | None
    timeout: float | None = None
    labels: RunnableConfig | None = None

    def _call(self) -> object:
        return self.fn(list(self.messages), self.previous, self.instruction)

    def _to_completion(self) -> object:
        """The reply on this thread: a coroutine runs on an event loop of its own."""
        reply = self._call()
        if inspect.isawaitable(reply):
            return asyncio.run(_awaited(reply))
        return reply

    async def _awaited_reply(self) -> object:
        """The reply on the loop: a plain function runs in a worker thread, never on it."""
        if _is_async(self.fn):
            reply = self._call()
        else:
            reply = await asyncio.to_thread(self._call)
        if inspect.isawaitable(reply):
            reply = await reply
        return reply

    def _run(self) -> RunnableLambda[dict[str, object], object]:
        """The call as one run, so callbacks see it where a summary model's would be."""

        def sync(_: dict[str, object]) -> object:
            return self._to_completion()

        async def asynchronous(_: dict[str, object]) -> object:
            return await self._awaited_reply()

        return RunnableLambda(sync, afunc=asynchronous, name=SUMMARY_RUN_NAME)

    def _inputs(self) -> dict[str, object]:
        """What the run shows as its input."""
        return {
            "messages": list(self.messages),
            "previous": self.previous,
            "instruction": self.instruction,
        }

    def _traced(self) -> object:
        return self._run().invoke(self._inputs(), self.labels)

    def run(self, store: SummaryStore) -> object:
        reply: Future[object] = Future()
        context = contextvars.copy_context()

        def call() -> None:
            try:
                result = context.run(self._traced)
            except BaseException as exc:  # handed to the waiting step, or dropped with the call
                reply.set_exception(exc)
            else:
                reply.set_result(result)

        # A daemon thread: a compactor that never returns must not hold up the exit.
        threading.Thread(target=call, name="compaction-compactor", daemon=True).start()
        try:
            return reply.result(self.timeout)
        except TimeoutError:
            if reply.done():  # it answered or failed just as the time ran out
                return reply.result()
            assert self.timeout is not None
            raise ModelCallTimeout(self.timeout) from None

    def arun(self, store: SummaryStore) -> Awaitable[object]:
        return self._arun()

    async def _arun(self) -> object:
        scope = asyncio.timeout(self.timeout)
        try:
            async with scope:
                return await self._run().ainvoke(self._inputs(), self.labels)
        except TimeoutError:
            if scope.expired():  # not a TimeoutError the function raised itself
                assert self.timeout is not None
                raise ModelCallTimeout(self.timeout) from None
            raise


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def compactor_reply(
    fn: Compactor,
    messages: Sequence[BaseMessage],
    previous: str | None,
    instruction: str | None,
    timeout: float | None,
    labels: RunnableConfig | None = None,
) -> Step[str]:
    """The compactor's reply, stripped; the call runs labelled ``labels``.

    Raises:
        SummarizerError: it raised, ran past ``timeout``, or returned something other than
            non-blank text; the message names the function.
    """
    name = compactor_name(fn)
    call = CompactorCall(fn, tuple(messages), previous, instruction, timeout, labels)
    try:
        reply = yield call
    except GraphBubbleUp:  # LangGraph's own control flow (an interrupt inside it): let it through
        raise
    except ModelCallTimeout as exc:
        raise SummarizerError(f"{name}: summary_timeout: {exc}") from exc
    except Exception as exc:
        raise SummarizerError(f"{name} raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(reply, str):
        raise SummarizerError(
            f"{name} returned {type(reply).__name__}; a compactor returns the summary text (str)"
        )
    text = reply.strip()
    if not text:
        raise SummarizerError(f"{name} returned blank text")
    return text
