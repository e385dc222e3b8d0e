"""What the demo's local model (SmolLM2-135M-Instruct) writes as a summary, prompt by prompt.

The demo's 36-turn conversation is replayed offline once (the agent loop with its stand-in
summarizer) to get its 96 messages. Each prompt variant then summarizes the same windows of
that history, as the pipeline would send them (one user message, ``fill_prompt`` over
``render_transcript``): the first window with the initial prompt, each later window with the
update prompt and the variant's own previous reply, as the demo chains them. Per variant:

- ``accepted``: share of replies `not_a_summary` lets through (not an echo of the instruction,
  not a request for input, some of the transcript's terms);
- ``headings``: mean share of the prompt's section headings the reply has;
- ``ids kept``: mean share of the window's identifiers (file paths, ids, numbers, error names)
  the reply repeats verbatim;
- ``cut off``: share of replies that hit the output cap (``finish_reason == "length"``);
- mean output tokens and seconds per call.

Variants: ``baseline`` (the built-in prompts), ``full-v2`` (the same six sections, reworded,
no framing sentence), ``short`` (three sections: what the demo gives its local model, see
``examples/_small_model.py``), ``plain`` (``short`` asking for prose, not code), ``oneshot`` /
``plain-oneshot`` (an example summary before the transcript), ``short-t0.2`` (temperature 0.2).
It needs the local model server (``COMPACTION_LOCAL_MODEL_URL``)::

    source scripts/_local_model.sh && start_local_model .venv/bin/python
    python benchmarks/local_summaries.py [--variants baseline,short] [--max-tokens 96] [--show]
    stop_local_model

Figures of 2026-12-01 (4 windows each; 2 busy shared cores, so the seconds are rough)::

    --max-tokens 96   accepted headings ids kept cut off copied tokens s/call
    baseline              75%       0%       0%     75%     0%     80   22.0
    full-v2               75%       0%       1%      0%     0%     34   24.4
    short                100%      58%       2%    100%     0%     96   21.9
    plain                 75%      25%       3%     75%     0%     75   17.6
    --max-tokens 128
    short                100%      50%       2%     50%     0%    101   16.9
    plain                100%      33%       6%     25%     0%     90   13.4
    oneshot              100%      17%       1%     25%   100%    102   15.1
    plain-oneshot        100%      33%       5%     25%     0%     92   23.7
    short-t0.2           100%       8%       4%     25%     0%     76   20.5

The built-in prompts' "accepted" replies are code the model made up (``<script>`` ...) or a
copy of a transcript line; ``short`` gets replies shaped like summaries, poor ones. A 135M
model shows the plumbing, not the quality: the aim is replies that are summaries at all.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_openai import ChatOpenAI

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from _small_model import SMALL_MODEL_SUMMARY_PROMPT, SMALL_MODEL_UPDATE_PROMPT
from agent_loop import MAX_SUMMARY_TOKENS, ReplayAgent, Summarizer, open_demo, run_turn
from demo_data import DEMO_THREAD_ID, DEMO_TURNS
from quickstart import TranscriptDigestSummarizer

from langgraph_compaction.config.prompts import DEFAULT_SUMMARY_PROMPT, DEFAULT_UPDATE_PROMPT
from langgraph_compaction.summary.checks import not_a_summary
from langgraph_compaction.summary.prompts import fill_prompt, render_transcript

WINDOW_STARTS = (0, 25, 49, 73)
"""Where each window of the 96 messages starts: the demo's two cuts, then two more."""
WINDOW_MESSAGES = 24
IDENTIFIER = re.compile(r"[\w./:#-]*(?:\d|_|\.py|/|-)[\w./:#-]*")

_EXAMPLE = """Here is an example of a good summary of a different conversation:

## Goal
Find why the weekly invoice email stopped on 2024-05-02.
## Progress
- Read mailer/send.py: SMTP_HOST was changed to smtp2.example.org in PR #77.
- The job log shows ConnectionRefusedError at 06:00 UTC.
## Next Steps
- Revert SMTP_HOST and rerun the job.

Now the conversation to summarize:

"""
_EXAMPLE_TERMS = ("invoice", "smtp", "mailer", "connectionrefused")
"""Words of the example: a reply with them copied the example instead of summarizing."""

_PLAIN_SUMMARY = """<conversation>
{messages}
</conversation>

Summarize the conversation above in plain English sentences, not code, in these sections:

## Goal
## Progress
## Next Steps

Keep file paths, ids, numbers and error messages exactly as written."""

_PLAIN_UPDATE = """<summary>
{summary}
</summary>

<conversation>
{messages}
</conversation>

Rewrite the summary above so that it also covers the conversation after it, in plain English
sentences, not code, in the same sections (## Goal, ## Progress, ## Next Steps). Keep file
paths, ids, numbers and error messages exactly as written."""


_FULL_V2_SUMMARY = """<conversation>
{messages}
</conversation>

Summarize the conversation above as a checkpoint, in these sections:

## Goal
## Constraints & Preferences
## Progress
## Key Decisions
## Next Steps
## Critical Context

Keep every identifier exactly as written: file paths, URLs, ids, numbers, names, error
messages. Be concise and factual; do not invent anything. Reply with the summary only."""

_FULL_V2_UPDATE = """<summary>
{summary}
</summary>

<conversation>
{messages}
</conversation>

Rewrite the checkpoint summary above so that it also covers the conversation after it: keep
what is still true, add what the conversation says, drop what it makes obsolete. Use the same
sections (Goal, Constraints & Preferences, Progress, Key Decisions, Next Steps, Critical
Context) and keep every identifier exactly as written. Reply with the summary only."""


@dataclass(frozen=True)
class Variant:
    """One way to ask: the two templates, the temperature and the output cap."""

    summary_prompt: str
    update_prompt: str
    temperature: float = 0.0
    max_tokens: int = MAX_SUMMARY_TOKENS


_SHORT_SUMMARY, _SHORT_UPDATE = SMALL_MODEL_SUMMARY_PROMPT, SMALL_MODEL_UPDATE_PROMPT

VARIANTS = {
    "baseline": Variant(DEFAULT_SUMMARY_PROMPT, DEFAULT_UPDATE_PROMPT),
    "short": Variant(_SHORT_SUMMARY, _SHORT_UPDATE),
    "short-t0.2": Variant(_SHORT_SUMMARY, _SHORT_UPDATE, temperature=0.2),
    "plain": Variant(_PLAIN_SUMMARY, _PLAIN_UPDATE),
    "oneshot": Variant(_EXAMPLE + _SHORT_SUMMARY, _EXAMPLE + _SHORT_UPDATE),
    "plain-oneshot": Variant(_EXAMPLE + _PLAIN_SUMMARY, _EXAMPLE + _PLAIN_UPDATE),
    "full-v2": Variant(_FULL_V2_SUMMARY, _FULL_V2_UPDATE),
}


@dataclass(frozen=True)
class Reply:
    """One summary call's reply and what the measures found in it."""

    text: str
    rejected: str | None
    headings: float
    ids_kept: float
    cut_off: bool
    copied_example: bool
    tokens: int
    seconds: float


def demo_history() -> list[BaseMessage]:
    """The demo's 96 messages, replayed offline once."""
    with tempfile.TemporaryDirectory() as tmp:
        stand_in = Summarizer(TranscriptDigestSummarizer(), "stand-in", {})
        graph, _, close = open_demo(Path(tmp), stand_in, ReplayAgent(DEMO_TURNS))
        try:
            for number, turn in enumerate(DEMO_TURNS, start=1):
                run_turn(graph, number, turn.user, show=lambda _: None)
            config: Any = {"configurable": {"thread_id": DEMO_THREAD_ID}}
            return list(graph.get_state(config).values["messages"])
        finally:
            close()


def headings_of(template: str) -> list[str]:
    return re.findall(r"^## (.+)$", template, flags=re.MULTILINE)


def identifiers(text: str) -> set[str]:
    return {m.strip(".:,") for m in IDENTIFIER.findall(text) if len(m.strip(".:,")) >= 3}


def measure(model: ChatOpenAI, variant: Variant, history: Sequence[BaseMessage]) -> list[Reply]:
    """Summarize each window in turn, chaining updates on the variant's own replies."""
    bound = model.bind(
        temperature=variant.temperature,
        max_tokens=variant.max_tokens,
        extra_body={"max_tokens": variant.max_tokens},
    )
    replies: list[Reply] = []
    previous: str | None = None
    for start in WINDOW_STARTS:
        transcript = render_transcript(history[start : start + WINDOW_MESSAGES])
        template = variant.summary_prompt if previous is None else variant.update_prompt
        prompt = fill_prompt(template, transcript, previous)
        began = time.perf_counter()
        message = bound.invoke([HumanMessage(prompt)])
        seconds = time.perf_counter() - began
        text = message.text.strip()
        covered = transcript if previous is None else f"{previous}\n\n{transcript}"
        wanted = headings_of(template) or headings_of(variant.summary_prompt)
        ids = identifiers(transcript)
        usage = message.usage_metadata or {}
        replies.append(
            Reply(
                text=text,
                rejected=not_a_summary(text, covered),
                headings=sum(f"## {h}".lower() in text.lower() for h in wanted) / len(wanted),
                ids_kept=len({i for i in ids if i in text}) / len(ids) if ids else 1.0,
                cut_off=message.response_metadata.get("finish_reason") == "length",
                copied_example=any(term in text.lower() for term in _EXAMPLE_TERMS),
                tokens=int(usage.get("output_tokens", 0)),
                seconds=seconds,
            )
        )
        # A rejected reply is not stored: the next update starts from the last good one.
        previous = text if replies[-1].rejected is None else previous
    return replies


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument(
        "--max-tokens", type=int, default=MAX_SUMMARY_TOKENS, help="the output cap (the demo's)"
    )
    parser.add_argument("--show", action="store_true", help="print every reply")
    args = parser.parse_args(argv)
    url = os.environ.get("COMPACTION_LOCAL_MODEL_URL")
    if not url:
        parser.error("start the local model first (COMPACTION_LOCAL_MODEL_URL is not set)")
    model = ChatOpenAI(base_url=url, api_key="local", model="smollm2", timeout=300)  # type: ignore[arg-type]
    history = demo_history()
    print(f"{len(history)} messages, windows of {WINDOW_MESSAGES} from {WINDOW_STARTS}")
    header = (
        f"{'variant':<16} {'accepted':>8} {'headings':>8} {'ids kept':>8} {'cut off':>7} "
        f"{'copied':>6} {'tokens':>6} {'s/call':>6}"
    )
    print(header)
    for name in args.variants.split(","):
        variant = dataclasses.replace(VARIANTS[name], max_tokens=args.max_tokens)
        replies = measure(model, variant, history)
        print(
            f"{name:<16} {sum(r.rejected is None for r in replies) / len(replies):>8.0%} "
            f"{statistics.mean(r.headings for r in replies):>8.0%} "
            f"{statistics.mean(r.ids_kept for r in replies):>8.0%} "
            f"{sum(r.cut_off for r in replies) / len(replies):>7.0%} "
            f"{sum(r.copied_example for r in replies) / len(replies):>6.0%} "
            f"{statistics.mean(r.tokens for r in replies):>6.0f} "
            f"{statistics.mean(r.seconds for r in replies):>6.1f}",
            flush=True,
        )
        if args.show:
            for number, reply in enumerate(replies, start=1):
                verdict = reply.rejected or "accepted"
                body = reply.text.replace("\n", "\n    ")
                print(f"  [{number}] {verdict}\n    {body}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
