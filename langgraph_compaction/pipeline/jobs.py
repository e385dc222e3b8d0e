"""The background summaries of one compaction graph: at most one job per thread at a time.

This module only keeps the books (claim, land, wait, events); ``precompaction`` decides what
a job does and starts it. A call whose trigger fires while its thread's job runs waits for the
job's flight (a ``WaitFlight`` effect) instead of starting a second summary.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from langgraph_compaction.pipeline.flights import Flight

__all__ = ["Event", "Job", "Jobs"]

Key = tuple[str, str]
Event = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Job:
    """One background summary in flight."""

    key: Key
    flight: Flight = field(default_factory=Flight)


class Jobs:
    """Claims, in-flight jobs and the events of landed ones, per thread."""

    def __init__(self) -> None:
        self._jobs: dict[Key, Job] = {}
        self._started_over: dict[Key, str] = {}
        """Per thread: the summary in use ("" for none) when the last job was started."""
        self._events: dict[Key, list[Event]] = {}
        self._lock = threading.Lock()

    def claim(self, key: Key, in_use_id: str) -> Job | None:
        """A new job, unless the thread has one running or had one over this summary."""
        with self._lock:
            if key in self._jobs or self._started_over.get(key) == in_use_id:
                return None
            job = self._jobs[key] = Job(key)
            self._started_over[key] = in_use_id
            return job

    def forget_claim(self, key: Key) -> None:
        """A cancelled job may be retried by a later call."""
        with self._lock:
            self._started_over.pop(key, None)

    def land(self, job: Job, events: list[Event]) -> None:
        with self._lock:
            self._events.setdefault(job.key, []).extend(events)
            if self._jobs.get(job.key) is job:
                del self._jobs[job.key]
        job.flight.land()

    def running(self, key: Key) -> Job | None:
        """This thread's job in flight, if any."""
        return self._jobs.get(key)

    def take_events(self, key: Key) -> list[Event]:
        """Events of jobs that landed since this thread's last call."""
        if not self._events:
            return []
        with self._lock:
            return self._events.pop(key, [])
