"""How the examples print the compaction's custom stream events as they happen."""

from __future__ import annotations

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
    return f"          >> {event}"
