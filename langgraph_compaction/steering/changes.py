"""What people and agents changed about a thread, seen by its next call in any process.

A request to compact (``SummaryStore.request_compaction``, the ``compact`` tool), a pin, an
edit or a revoke is written to the store by whoever makes it, and bumps the thread's control
version. Every call with a thread id reads that version (one cheap lookup); only when it
changed does the call read the pins again and drop the summary it holds (it may have been
edited or revoked), and only when a request is pending does it consume it (exactly once
across processes: the store takes it in one statement). The request forces the call, with its
instruction.

A summary made on request (a forced call) is made while the conversation is under every
trigger, where a call would otherwise pass the whole conversation through: so a process keeps
serving the summary it holds there, and a process that sees a steered thread for the first
time (or after a change) looks its summaries up once, so that every worker sends the same.

The control version's row also holds the thread's stored calibration ratio, so a process
that first sees a thread adopts it in the same read; over a trigger, such a process (a
restarted worker) looks the thread's summaries up once in measure (:func:`stored_summary`).

The store failing here never fails the call: it goes on with what this process last saw, and
the reads pause for a few seconds so that an outage does not cost every passing call a
connection attempt.
"""

from __future__ import annotations

import logging
import time

from langgraph_compaction.config.run_control import RunControl
from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.effects import (
    Step,
    latest_summaries,
    pending_request,
    perform,
    pinned_messages,
    thread_controls,
)
from langgraph_compaction.pipeline.records import Measured
from langgraph_compaction.store import SummaryRecord
from langgraph_compaction.summary.matching import find_matching_summaries, summary_fits

__all__ = ["CONTROL_PAUSE_S", "FORCED", "steering", "still_asked", "stored_summary"]

FORCED = "force"
"""The trigger label of a call compacted because it was asked to (``triggers_fired``)."""

CONTROL_PAUSE_S = 5.0
"""After a failed control read, how long calls go on without asking the store again."""

logger = logging.getLogger("langgraph_compaction")


def steering(
    pipe: Pipeline, key: tuple[str, str], control: RunControl
) -> Step[tuple[RunControl, frozenset[str], bool]]:
    """The call's control with a pending store request merged in, the thread's pins, and
    whether the thread was steered since this process last looked (then its summaries are
    worth a look even under the triggers: see :func:`stored_summary`)."""
    namespace, thread_id = key
    memory = pipe.memory
    known = memory.controls(key)
    pins = known[1] if known is not None else frozenset()
    now = time.monotonic()
    fresh = False
    if not thread_id or memory.controls_paused(now):
        return control, pins, fresh
    try:
        current = yield from perform(thread_controls(thread_id, namespace))
        if known is None or current.version != known[0]:
            memory.forget_held(key)  # edited or revoked since: look in the store again
            memory.load_ratio(key, current.calibration)  # a thread first seen: its ratio
            pins = frozenset()
            if current.version:  # version 0: never steered, nothing was ever pinned
                pins = yield from perform(pinned_messages(thread_id, namespace))
                fresh = True
            memory.note_controls(key, current.version, pins)
        if current.requested:  # served, not taken: its summary's transaction consumes it
            request = yield from perform(pending_request(thread_id, namespace))
            if request is not None:  # another call or worker may have served it since
                control = control.with_request(request)
    except SummaryStoreError as exc:
        memory.pause_controls(now, CONTROL_PAUSE_S)
        logger.debug("could not read the thread's controls: %s", exc)
    return control, pins, fresh


def stored_summary(
    pipe: Pipeline, measured: Measured, *, oldest: bool
) -> Step[tuple[SummaryRecord, bool] | None]:
    """A stored summary that matches and fits this call, read in one lookup, and whether it
    is the newest matching one; None when none does or the store fails (the call then goes
    on as it would have).

    ``oldest``: the oldest that fits, as partition chooses over a trigger (the input keeps its
    bytes; a restarted worker's first call goes straight to assemble); else the newest, for a
    summary made on request that serves under the triggers.
    """
    ns, thread_id = pipe.settings.namespace, measured.thread_id
    try:
        summaries = yield from perform(latest_summaries(thread_id, ns, 8))
    except SummaryStoreError as exc:
        logger.debug("could not read the thread's summaries: %s", exc)
        return None
    pipe.memory.note_store_ok(pipe.settings.store)
    matching = find_matching_summaries(summaries, measured.messages, measured.scan)
    order = reversed(matching) if oldest else iter(matching)
    record = next((r for r in order if summary_fits(pipe, measured, r)), None)
    return None if record is None else (record, record is matching[0])


def still_asked(pipe: Pipeline, measured: Measured) -> Step[bool]:
    """Whether the store request this call serves is still pending, read just before paying
    for its summary (under the prefix's lease): a worker that served the same request first
    consumed it, and then this call is no longer forced. True for a call no request forces."""
    request = measured.control.request
    if request is None:
        return True
    pending = yield from perform(pending_request(measured.thread_id, pipe.settings.namespace))
    return pending is not None and pending.requested_at == request.requested_at
