"""Errors raised by langgraph-compaction.

CompactionError                 base of everything raised here
├── CompactionConfigError       invalid configuration (also a ValueError)
├── CompactionInputError        the graph's input is not a list of messages (also a TypeError)
├── SummaryStoreError           the summary store cannot be opened, read or written
│   └── ThreadDeletedError      a write for a thread that was deleted since it was read
└── SummarizerError             a summary call failed, timed out or returned blank text
"""

from __future__ import annotations

__all__ = [
    "CompactionConfigError",
    "CompactionError",
    "CompactionInputError",
    "SummarizerError",
    "SummaryStoreError",
    "ThreadDeletedError",
]


class CompactionError(Exception):
    """Base class of every error this package raises."""


class CompactionConfigError(CompactionError, ValueError):
    """The configuration is invalid; the message names the field and what to do."""


class CompactionInputError(CompactionError, TypeError):
    """The input's ``messages`` is missing or not something ``add_messages`` accepts; the
    message names what was given and what is expected."""


class SummaryStoreError(CompactionError):
    """The summary store cannot be opened, read or written."""


class SummarizerError(CompactionError):
    """A summary call failed: it raised, timed out, or returned blank text."""


class ThreadDeletedError(SummaryStoreError):
    """The thread was deleted after the caller read its generation; nothing was written.

    A summary (or failure count, or calibration) computed for the conversation as it was
    before ``delete_thread`` must not bring the thread back: read ``thread_state()`` again
    to start over on the new generation.
    """
