"""The built-in summary prompts: the defaults of ``summary_prompt`` and ``update_prompt``, and
the repair prompt (``integrity.repair``).

``{messages}`` marks where the transcript goes and ``{summary}`` the previous summary
(``summary.prompts`` fills them); the instruction comes after the transcript, which small
models need.
"""

from __future__ import annotations

__all__ = ["DEFAULT_SUMMARY_PROMPT", "DEFAULT_UPDATE_PROMPT", "REPAIR_PROMPT"]

DEFAULT_SUMMARY_PROMPT = """Below is the conversation between a user and an AI assistant so far.

<conversation>
{messages}
</conversation>

Write a checkpoint summary of the conversation above so that the assistant can continue the
work without it. Use exactly these sections:

## Goal
## Constraints & Preferences
## Progress
## Key Decisions
## Next Steps
## Critical Context

Write the summary in the language the user writes in, and keep every identifier verbatim:
file paths, URLs, ids, numbers, names, error messages. Be concise and factual; do not invent
anything. Reply with the summary only."""

DEFAULT_UPDATE_PROMPT = """Here is the checkpoint summary of an earlier part of a conversation:

<summary>
{summary}
</summary>

Below are the messages that came after it.

<conversation>
{messages}
</conversation>

Update the checkpoint summary so that it covers everything: keep what is still true, add what
the new messages say, and drop what they make obsolete. Keep the same sections (Goal,
Constraints & Preferences, Progress, Key Decisions, Next Steps, Critical Context), the
language the user writes in, and every identifier verbatim. Reply with the updated summary
only."""


REPAIR_PROMPT = """Here is a checkpoint summary of a conversation:

<summary>
{summary}
</summary>

It leaves out these identifiers from the user's messages, which the assistant still needs
verbatim:
{missing}

Rewrite the summary so that it states each of them verbatim where it belongs, and keep
everything else it says, its sections and its language. Reply with the summary only."""
