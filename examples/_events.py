"""How the examples print the compaction's custom stream events as they happen.

A summary call on a slow model can run for minutes; ``SummaryTicker`` prints a line every
10 s while one runs, so a person watching sees it is working, not hung.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def describe_event(event: dict[str, Any]) -> str:
    """One indented line for a ``context_compacting`` / ``context_compacted`` event."""
    if event.get("type") == "context_compacting":
        return (
            f"          >> context_compacting: summarizing {event['messages']} messages "
            f"({event['source_tokens']:,} tokens) in {event['chunks']} call(s)"
        )
    if event.get("type") == "context_compacted":
        return (
            f"          >> context_compacted: summary v{event['version']}, "
            f"{event['summary_tokens']:,} tokens"
        )
    if event.get("type") == "context_compaction_failed":
        # The agent call goes ahead (the usual failure policy); say why, in one line.
        reason = " ".join(str(event.get("error", "")).split())
        line = f"          >> context_compaction_failed: {reason}"
        return line if len(line) <= 100 else line[:99] + "…"
    return f"          >> {event}"


TICK_SECONDS = 10.0
"""How often a running summary call says it is still running."""


def tick_line(seconds: float) -> str:
    """The line printed while a summary call has been running for ``seconds``."""
    return f"          .. summarizing, {seconds:g} s"


class SummaryTicker:
    """Prints a line every ``interval`` seconds while a summary call runs: slow, not stuck.

    ``observe`` each streamed event: ``context_compacting`` starts the ticking (a background
    one does not: the stream is not waiting for it), ``context_compacted`` or
    ``context_compaction_failed`` stops it, and so does leaving the ``with`` block. The
    ticking runs on a daemon thread; ``stop`` joins it, so no tick follows the event's line.
    """

    def __init__(self, show: Callable[[str], None] = print, interval: float = TICK_SECONDS) -> None:
        self._show = show
        self._interval = interval
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def observe(self, event: dict[str, Any]) -> None:
        """Start or stop ticking on a summary call's first or last event."""
        kind = event.get("type")
        if kind == "context_compacting" and not event.get("background"):
            self.start()
        elif kind in {"context_compacted", "context_compaction_failed"}:
            self.stop()

    def start(self) -> None:
        """Tick from now on, counting from zero (a tick already running is restarted)."""
        self.stop()
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._tick, args=(self._stopped,), name="summary-ticker", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop ticking and wait until the ticker's last line is out."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _tick(self, stopped: threading.Event) -> None:
        ticks = 0
        while not stopped.wait(self._interval):
            ticks += 1
            self._show(tick_line(ticks * self._interval))

    def __enter__(self) -> SummaryTicker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
