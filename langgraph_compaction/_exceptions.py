"""Errors raised by langgraph-compaction.

CompactionError                 base of everything raised here
├── CompactionConfigError       invalid configuration (also a ValueError)
├── SummaryStoreError           the summary store cannot be opened, read or written
└── SummarizerError             a summary call failed, timed out or returned blank text
"""

from __future__ import annotations

__all__ = [
    "CompactionConfigError",
    "CompactionError",
    "SummarizerError",
    "SummaryStoreError",
]


class CompactionError(Exception):
    """Base class of every error this package raises."""


class CompactionConfigError(CompactionError, ValueError):
    """The configuration is invalid; the message names the field and what to do."""


class SummaryStoreError(CompactionError):
    """The summary store cannot be opened, read or written."""


class SummarizerError(CompactionError):
    """A summary call failed: it raised, timed out, or returned blank text."""
