"""Background pre-compaction: prepare the next summary before the trigger fires.

Past ``precompact_ratio`` of a trigger, a call passes through as usual and starts the summary a
compaction would make now: in a daemon thread on the sync path, in a task on the running event
loop on the async path (the ``Start`` effect). Its cutoff is planned for where the keep window
will be when the trigger fires, and stops a unit or two short of that when this spares a
summary call carrying only a sliver of transcript. It lands in the store like any summary; when
the trigger fires, the lookup finds it and the call only assembles. One job per thread at a time; a
call whose trigger fires while the job runs waits for it instead of starting a second. Nothing
partial is stored (the store writes a summary in one transaction), and a process or loop that
ends simply drops the job: daemon threads stop with the interpreter, and pending tasks are
cancelled. With ``review`` on nothing is prepared: a new summary must be put to a person
(``interrupt``), and a background job runs outside any run, where no one can be asked.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from langchain_core.messages import HumanMessage

from langgraph_compaction.config.settings import emit
from langgraph_compaction.config.triggers import find_keep_start
from langgraph_compaction.content.messages import split_tool_units
from langgraph_compaction.nodes.partition import plan_partition
from langgraph_compaction.nodes.summarize import summarize
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.effects import (
    Effect,
    Start,
    Step,
    adrive,
    drive,
    latest_summaries,
    perform,
    thread_state,
)
from langgraph_compaction.pipeline.jobs import Event, Job
from langgraph_compaction.pipeline.records import Decision, Measured, Outcome, Partition
from langgraph_compaction.store import SummaryRecord
from langgraph_compaction.summary.chunks import plan_chunks, transcript_tokens
from langgraph_compaction.summary.matching import (
    compressed_context,
    find_matching_summaries,
    rescued_positions,
)

__all__ = ["precompact", "precompact_step"]


def precompact_step(
    pipe: Pipeline, measured: Measured, in_use: SummaryRecord | None
) -> Step[Outcome | None]:
    """Prepare the summary a compaction would make now, unless one is prepared already."""
    ns, thread_id = pipe.settings.namespace, measured.thread_id
    state = yield from perform(thread_state(thread_id, ns))
    summaries = yield from perform(latest_summaries(thread_id, ns, 8))
    matching = find_matching_summaries(summaries, measured.messages, measured.scan)
    newest = matching[0] if matching else None
    if newest is not None and (in_use is None or newest.version > in_use.version):
        return None  # another call or worker prepared it
    # Turns keep arriving until the trigger fires (about 1 - precompact_ratio of it): leave
    # room for them, so the prepared summary lands where one made then would.
    config = pipe.settings.config
    headroom = max(config.headroom_ratio - (1 - (config.precompact_ratio or 1)), 0.1)
    plan = plan_partition(
        pipe, measured, in_use, headroom, keep_start_at_trigger(pipe, measured, in_use)
    )
    if plan is None:
        return None
    plan = in_fewer_calls(pipe, measured, in_use, headroom, plan)
    return (yield from summarize(pipe, measured, Decision(state, newest, plan)))


def call_capacity(pipe: Pipeline, previous: SummaryRecord | None) -> int | None:
    """Most transcript tokens one summary call carries, as the summarize step reckons it."""
    settings = pipe.settings
    config = settings.config
    overhead = settings.counter([HumanMessage(content=config.update_prompt)])
    if previous is not None:
        overhead += settings.counter([HumanMessage(content=previous.summary)])
    return pipe.memory.transcript_capacity(
        config.trim_tokens_to_summarize, overhead, config.max_summary_tokens
    )


def summary_calls(
    pipe: Pipeline, measured: Measured, plan: Partition, capacity: int, sizes: dict[int, int]
) -> int:
    """How many calls making ``plan`` takes: its evicted messages chunked as summarize does,
    by their transcript's tokens (``sizes``, by position, filled here and kept by the caller
    across the plans it compares)."""
    messages, counter = measured.messages, pipe.settings.counter
    new = [i for i in plan.evicted if i not in sizes]
    sizes.update(zip(new, transcript_tokens([messages[i] for i in new], counter), strict=True))
    evicted = [messages[i] for i in plan.evicted]
    tokens = [sizes[i] for i in plan.evicted]
    most = pipe.settings.config.max_summary_chunks
    return len(plan_chunks(evicted, tokens, capacity, most, counter).chunks)


def in_fewer_calls(
    pipe: Pipeline,
    measured: Measured,
    in_use: SummaryRecord | None,
    headroom: float,
    plan: Partition,
) -> Partition:
    """The plan, or one that evicts a little less and takes one summary call fewer.

    A prepared summary evicts all it can, so its last call often carries a sliver of
    transcript beside the whole prompt and the previous summary. Stopping at an earlier unit
    saves that call, as long as it still leaves the headroom and leaves out less than one
    call's worth; the messages left out go into the next summary, which reads them anyway.
    """
    capacity = call_capacity(pipe, in_use)
    if capacity is None:
        return plan  # no bound on a call: one call already
    sizes: dict[int, int] = {}
    calls = summary_calls(pipe, measured, plan, capacity, sizes)
    if calls <= 1:
        return plan
    scan, start = measured.scan, in_use.covered_messages if in_use else measured.lead
    for first, _ in reversed(split_tool_units(measured.messages, start)[1:]):
        if first >= plan.cutoff:
            continue
        if scan.tokens_between(first, plan.cutoff) > capacity:
            break  # more than the call it would save
        shorter = plan_partition(pipe, measured, in_use, headroom, first)
        if shorter is None or shorter.cutoff != first:
            break  # evicting less would not leave the headroom
        if summary_calls(pipe, measured, shorter, capacity, sizes) < calls:
            return shorter
    return plan


ARRIVAL_SHARE = 0.5
"""Share of the predicted arrivals a prepared summary counts on (a large tool result may fire
the trigger sooner than the thread's average message size suggests)."""


def arriving_messages(pipe: Pipeline, measured: Measured, in_use: SummaryRecord | None) -> int:
    """Messages expected to arrive before a trigger fires, from the thread's mean message size."""
    messages, scan, settings = measured.messages, measured.scan, pipe.settings
    start = in_use.covered_messages if in_use else measured.lead
    if in_use is None:
        tokens, count = measured.tokens_before, len(messages)
    else:
        summary_tokens = pipe.memory.summary_message(in_use, settings.recall_tool)[1]
        rescued = rescued_positions(pipe, in_use, messages)
        tokens, count, _ = compressed_context(pipe, measured, start, rescued, summary_tokens)
    recent = len(messages) - start
    if recent <= 0:
        return 0
    mean = scan.tokens_between(start, len(messages)) * (measured.ratio or 1.0) / recent
    arrivals: list[float] = []
    for threshold in settings.thresholds:
        if threshold.kind == "tokens":
            arrivals.append((threshold.limit - tokens) / max(mean, 1.0))
        elif threshold.kind == "messages":
            arrivals.append(threshold.limit - count)
        else:  # messages outside the keep window: each arrival pushes one out
            arrivals.append(0)
    return max(int(min(arrivals, default=0) * ARRIVAL_SHARE), 0)


def keep_start_at_trigger(pipe: Pipeline, measured: Measured, in_use: SummaryRecord | None) -> int:
    """Where the keep window will start when the trigger fires, in today's history.

    The prepared summary takes over only then, and by then the messages that have arrived
    push today's oldest kept ones out of the window: a summary made at that moment would
    evict them, so the prepared one does too (never past the newest message).
    """
    messages, scan, settings = measured.messages, measured.scan, pipe.settings
    keep, lead, end = settings.config.keep, measured.lead, len(measured.messages)
    now = find_keep_start(messages, scan, lead, keep, settings.window)
    arriving = arriving_messages(pipe, measured, in_use)
    if arriving <= 0:
        return now
    if keep.type == "messages":
        return max(now, min(end, end + arriving - int(keep.value)))
    limit = keep.value if keep.type == "tokens" else keep.value * (settings.window or 0)
    start = in_use.covered_messages if in_use else lead
    mean = scan.tokens_between(start, end) / max(end - start, 1)
    left = limit - arriving * mean  # what of today's messages the window will still hold
    index = now
    while index < end and scan.tokens_between(index, end) > left:
        index += 1
    return index


def _landed(measured: Measured, outcome: Outcome | None) -> list[Event]:
    """What the thread's next call reports of a finished background job."""
    if outcome is None or outcome.action in ("reused", "kept"):
        return []
    base = {"thread_id": measured.thread_id, "background": True}
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


def _failed(key: tuple[str, str], exc: BaseException) -> Event:
    return {
        "type": "context_compaction_failed",
        "thread_id": key[1],
        "background": True,
        "error": f"{type(exc).__name__}: {exc}",
    }


def _in_thread(pipe: Pipeline, job: Job, run: Callable[[], list[Event]]) -> None:
    def target() -> None:
        events: list[Event] = []
        try:
            events = run()
        except Exception as exc:  # a store error must not kill the thread noisily
            events = [_failed(job.key, exc)]
        finally:
            pipe.jobs.land(job, events)

    threading.Thread(target=target, name=f"compaction-{job.key[1]}", daemon=True).start()


def _on_loop(pipe: Pipeline, job: Job, run: Callable[[], Coroutine[Any, Any, list[Event]]]) -> None:
    async def wrapper() -> None:
        events: list[Event] = []
        try:
            events = await run()
        except asyncio.CancelledError:  # its loop is shutting down: a later call may retry
            pipe.jobs.forget_claim(job.key)
            raise
        except Exception as exc:
            events = [_failed(job.key, exc)]
        finally:
            pipe.jobs.land(job, events)

    # A fresh context: the job belongs to no run, so nothing reaches the caller's stream.
    asyncio.get_running_loop().create_task(wrapper(), context=contextvars.Context())


def precompact(pipe: Pipeline, measured: Measured, in_use: SummaryRecord | None) -> Effect[bool]:
    """The effect that starts the thread's background summary (if none runs for it)."""
    store = pipe.settings.store

    def announce() -> None:
        emit(
            {
                "type": "context_compacting",
                "thread_id": measured.thread_id,
                "namespace": pipe.settings.namespace,
                "background": True,
                "tokens_before": measured.tokens_before,
            }
        )

    def start(use_loop: bool) -> bool:
        if pipe.settings.config.review:  # only a running node can ask a person
            return False
        job = pipe.jobs.claim(measured.key, in_use.id if in_use else "")
        if job is None:
            return False
        if use_loop:

            async def run_async() -> list[Event]:
                outcome = await adrive(precompact_step(pipe, measured, in_use), store)
                return _landed(measured, outcome)

            _on_loop(pipe, job, run_async)
        else:

            def run_sync() -> list[Event]:
                outcome = drive(precompact_step(pipe, measured, in_use), store)
                return _landed(measured, outcome)

            _in_thread(pipe, job, run_sync)
        announce()
        return True

    return Start(lambda: start(False), lambda: start(True))
