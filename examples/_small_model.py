"""Prompts for the demo's 135M local model, which cannot follow the built-in ones.

SmolLM2-135M-Instruct answers the built-in six-section checkpoint prompt with "I'm ready to
continue the conversation. Please go ahead and share...", with code it makes up, or with the
instruction read back. ``benchmarks/local_summaries.py`` measured these shorter prompts (three
sections, the instruction alone after the transcript) against it on the demo's windows: every
reply passed ``not_a_summary`` (3 in 4 with the built-in prompts) and about half had the
section headings (none with the built-in prompts). A one-shot example made it copy the example,
and a temperature of 0.2 lost the headings, so neither is used. A real model should keep the
built-in prompts: they ask for more (constraints, decisions, critical context).
"""

from __future__ import annotations

__all__ = ["SMALL_MODEL_SUMMARY_PROMPT", "SMALL_MODEL_UPDATE_PROMPT"]

SMALL_MODEL_SUMMARY_PROMPT = """<conversation>
{messages}
</conversation>

Summarize the conversation above in these sections:

## Goal
## Progress
## Next Steps

Keep file paths, ids, numbers and error messages exactly as written."""

SMALL_MODEL_UPDATE_PROMPT = """<summary>
{summary}
</summary>

<conversation>
{messages}
</conversation>

Rewrite the summary above so that it also covers the conversation after it. Use the same
sections (## Goal, ## Progress, ## Next Steps). Keep file paths, ids, numbers and error
messages exactly as written."""
