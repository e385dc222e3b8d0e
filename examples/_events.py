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
    if event.get("type") == "context_compaction_failed":
        # The agent call goes ahead (the usual failure policy); say why, in one line.
        reason = " ".join(str(event.get("error", "")).split())
        line = f"          >> context_compaction_failed: {reason}"
        return line if len(line) <= 100 else line[:99] + "…"
    return f"          >> {event}"
