"""Background pre-compaction: prepare the next summary before the trigger fires.

Past ``precompact_ratio`` of a trigger, a call passes through as usual and starts the summary a
compaction would make now: in a daemon thread on the sync path, in a task on the running event
loop on the async path. It lands in the store like any summary; when the trigger fires, the
lookup finds it and the call only assembles. One job per thread at a time; a call whose trigger
fires while the job runs waits for it instead of starting a second. Nothing partial is stored
(the store writes a summary in one transaction), and a process or loop that ends simply drops
the job: daemon threads stop with the interpreter, and pending tasks are cancelled.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ._effects import Step, StoreCall, adrive, drive
from ._runtime import CallWork, CompactionRuntime, Outcome
from .nodes.partition import find_matching_summaries, plan_partition
from .nodes.summarize import summarize_step
from .store import SummaryRecord

__all__ = ["BackgroundSummaries", "precompact_step", "start_precompaction"]

Key = tuple[str, str]
Event = dict[str, Any]


@dataclass
class _Job:
    done: threading.Event
    task: asyncio.Task[None] | None = None


class BackgroundSummaries:
    """The background jobs of one compaction runtime, at most one per thread."""

    def __init__(self) -> None:
        self._jobs: dict[Key, _Job] = {}
        self._started_over: dict[Key, str] = {}
        """Per thread: the summary in use ("" for none) when the last job was started."""
        self._events: dict[Key, list[Event]] = {}
        self._lock = threading.Lock()

    def _claim(self, key: Key, in_use_id: str) -> _Job | None:
        with self._lock:
            if key in self._jobs or self._started_over.get(key) == in_use_id:
                return None
            job = self._jobs[key] = _Job(threading.Event())
            self._started_over[key] = in_use_id
            return job

    def _finish(self, key: Key, job: _Job, events: list[Event]) -> None:
        with self._lock:
            self._events.setdefault(key, []).extend(events)
            if self._jobs.get(key) is job:
                del self._jobs[key]
        job.done.set()

    def start_thread(self, key: Key, in_use_id: str, run: Callable[[], list[Event]]) -> bool:
        """Run ``run`` in a daemon thread unless this thread already has a job for that summary."""
        job = self._claim(key, in_use_id)
        if job is None:
            return False

        def target() -> None:
            events: list[Event] = []
            try:
                events = run()
            except Exception as exc:  # a store error must not kill the thread noisily
                events = [_failed(key, exc)]
            finally:
                self._finish(key, job, events)

        threading.Thread(target=target, name=f"compaction-{key[1]}", daemon=True).start()
        return True

    def start_task(
        self, key: Key, in_use_id: str, run: Callable[[], Coroutine[Any, Any, list[Event]]]
    ) -> bool:
        """Run ``run`` as a task on the running loop (a fresh context: no parent stream)."""
        job = self._claim(key, in_use_id)
        if job is None:
            return False

        async def wrapper() -> None:
            events: list[Event] = []
            try:
                events = await run()
            except asyncio.CancelledError:  # its loop is shutting down: a later call may retry
                with self._lock:
                    self._started_over.pop(key, None)
                raise
            except Exception as exc:
                events = [_failed(key, exc)]
            finally:
                self._finish(key, job, events)

        loop = asyncio.get_running_loop()
        job.task = loop.create_task(wrapper(), context=contextvars.Context())
        return True

    def running(self, key: Key) -> bool:
        """Whether this thread has a background summary in flight."""
        return key in self._jobs

    def wait(self, key: Key) -> None:
        """Block until this thread's job (if any) has landed."""
        job = self._jobs.get(key)
        if job is not None and job.task is None:
            job.done.wait()

    async def await_(self, key: Key) -> None:
        """Wait on the event loop until this thread's job (if any) has landed."""
        job = self._jobs.get(key)
        if job is None:
            return
        if job.task is not None and job.task.get_loop() is asyncio.get_running_loop():
            await asyncio.shield(job.task)  # our caller's cancellation must not cancel the job
        else:
            await asyncio.to_thread(job.done.wait)

    def take_events(self, key: Key) -> list[Event]:
        """Events of jobs that landed since this thread's last call."""
        if not self._events:
            return []
        with self._lock:
            return self._events.pop(key, [])


def _failed(key: Key, exc: Exception) -> Event:
    return {
        "type": "context_compaction_failed",
        "thread_id": key[1],
        "background": True,
        "error": f"{type(exc).__name__}: {exc}",
    }


def precompact_step(
    runtime: CompactionRuntime, work: CallWork, in_use: SummaryRecord | None
) -> Step[Outcome | None]:
    """Prepare the summary a compaction would make now, unless one is prepared already."""
    ns, thread_id = runtime.namespace, work.thread_id
    work.thread_state = yield StoreCall("thread_state", {"thread_id": thread_id, "namespace": ns})
    summaries = yield StoreCall(
        "latest_summaries", {"thread_id": thread_id, "namespace": ns, "limit": 8}
    )
    matching = find_matching_summaries(summaries, work.messages, work.scan)
    newest = matching[0] if matching else None
    if newest is not None and (in_use is None or newest.version > in_use.version):
        return None  # another call or worker prepared it
    work.matching = newest
    # Turns keep arriving until the trigger fires (about 1 - precompact_ratio of it): leave
    # room for them, so the prepared summary lands where one made then would.
    config = runtime.config
    headroom = max(config.headroom_ratio - (1 - (config.precompact_ratio or 1)), 0.1)
    work.plan = plan_partition(runtime, work, in_use, headroom)
    if work.plan is None:
        return None
    return (yield from summarize_step(runtime, work))


def _landed(work: CallWork, outcome: Outcome | None) -> list[Event]:
    """What the thread's next call reports of a finished background job."""
    if outcome is None or outcome.action in ("reused", "kept"):
        return []
    base = {"thread_id": work.thread_id, "background": True}
    if outcome.action == "failed":
        return [{"type": "context_compaction_failed", **base, "error": outcome.error}]
    record = outcome.record
    assert record is not None
    return [
        {
            "type": "context_compacted",
            **base,
            "summary_id": record.id,
            "version": record.version,
            "summary_tokens": record.summary_tokens,
            "source_tokens": record.source_tokens,
            "calls": outcome.calls,
        }
    ]


def start_precompaction(
    runtime: CompactionRuntime, work: CallWork, in_use: SummaryRecord | None, *, use_loop: bool
) -> None:
    """Start the background summary for this thread (sync: a thread; async: a task)."""
    job_work = dataclasses.replace(work, plan=None, outcome=None, matching=None)
    in_use_id = in_use.id if in_use else ""
    store, background = runtime.store, runtime.background
    if use_loop:

        async def run_async() -> list[Event]:
            outcome = await adrive(precompact_step(runtime, job_work, in_use), store)
            return _landed(job_work, outcome)

        started = background.start_task(work.key, in_use_id, run_async)
    else:

        def run_sync() -> list[Event]:
            outcome = drive(precompact_step(runtime, job_work, in_use), store)
            return _landed(job_work, outcome)

        started = background.start_thread(work.key, in_use_id, run_sync)
    if started:
        runtime.emit(
            {
                "type": "context_compacting",
                "thread_id": work.thread_id,
                "namespace": runtime.namespace,
                "background": True,
                "tokens_before": work.tokens_before,
            }
        )
