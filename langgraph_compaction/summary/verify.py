"""A new draft checked for what it must keep, repaired once if asked, its ledger appended.

Every new summary takes this path, whoever made it (the summary model, a custom compactor, a
background pre-compaction, a reviewed draft): the trail of the messages it newly covers is
merged with the previous summary's (``summary.integrity``), the prose is checked, and the
ledger of what it dropped is appended within ``integrity.ledger_tokens`` (and a tenth of the
context that fits, :data:`LEDGER_SHARE`). With
``integrity.repair``, a prose that keeps less than ``integrity.min_kept`` of the user's
identifiers is sent back once to the summary model, naming the missing ones; the ledger still
backs up what the second reply drops. The system prompt's identifiers and the prompts' own
words are never counted: a summary need not repeat them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.config.prompts import REPAIR_PROMPT
from langgraph_compaction.content.identifiers import identifiers_in
from langgraph_compaction.errors import SummarizerError
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.effects import Step
from langgraph_compaction.pipeline.records import Measured, Partition
from langgraph_compaction.pipeline.report import IntegrityReport, SummaryUsage
from langgraph_compaction.store import SummaryRecord
from langgraph_compaction.summary.cap import cap_summary
from langgraph_compaction.summary.checks import not_a_summary
from langgraph_compaction.summary.integrity import (
    Checked,
    Trail,
    check_summary,
    load_items,
    merge_trails,
    summary_trail,
    trail_of,
    user_kept_share,
)
from langgraph_compaction.summary.ledger import split_ledger
from langgraph_compaction.summary.model_call import (
    PromptTooLong,
    SummaryCallFailed,
    bind_summarizer,
    summary_call,
)
from langgraph_compaction.summary.tidy import tidy_reply

__all__ = [
    "LEDGER_SHARE",
    "Verified",
    "covered_trail",
    "ledger_budget",
    "ledger_counter",
    "not_identifiers",
    "previous_trail",
    "recheck",
    "verified",
]

LEDGER_SHARE = 0.1
"""Most of the context the ledger may take: a tenth of the budget (or of the smallest tokens
trigger), so that in a small window it never makes the next compaction come sooner."""

_REPAIR_TAGS = frozenset({"summary"})


@dataclass(frozen=True, slots=True)
class Verified:
    """A summary's text checked, with its ledger, and what a repair call cost (if one ran)."""

    text: str
    report: IntegrityReport
    items: str
    """The trail as JSON, stored with the row."""
    calls: int = 0
    usage: SummaryUsage | None = None


def covered_trail(pipe: Pipeline, measured: Measured, plan: Partition) -> Trail:
    """What the summary of ``plan`` must keep: the previous summary's trail, then the trail
    of the messages it newly covers."""
    exclude = not_identifiers(pipe.settings.config, measured.messages[: measured.lead])
    newly = trail_of(measured.messages, plan.evicted, exclude)
    previous = plan.previous
    return merge_trails(previous_trail(previous, exclude), newly) if previous else newly


def previous_trail(previous: SummaryRecord, exclude: frozenset[str]) -> Trail:
    """The trail a stored summary carries: its items, or what its text holds (a person's edit,
    a row stored before the check)."""
    if previous.integrity_items is not None:
        return load_items(previous.integrity_items)
    return summary_trail(previous.summary, exclude)


def not_identifiers(config: CompactionConfig, system: Sequence[BaseMessage]) -> frozenset[str]:
    """What the system messages and the prompts say: a summary need not repeat it."""
    texts = [config.summary_prompt, config.update_prompt, *(str(m.text) for m in system)]
    if config.summary_instructions:
        texts.append(config.summary_instructions)
    return frozenset().union(*map(_identifiers_of, texts))


@functools.lru_cache(maxsize=256)
def _identifiers_of(text: str) -> frozenset[str]:
    """The same prompts come back on every summary of every thread: read once."""
    return frozenset(found for found, _ in identifiers_in(text))


def ledger_counter(pipe: Pipeline) -> Callable[[str], int]:
    """Tokens of one ledger line as the pipeline's counter counts it inside a message."""
    counter = pipe.settings.counter
    base = counter([HumanMessage(content="")])
    return lambda line: max(counter([HumanMessage(content=line)]) - base, 1)


def ledger_budget(pipe: Pipeline) -> int:
    """``integrity.ledger_tokens``, within :data:`LEDGER_SHARE` of the context that fits."""
    settings = pipe.settings
    limits = [x for x in (settings.fit_limit, settings.token_limit) if x is not None]
    tokens = settings.config.integrity.ledger_tokens
    return min(tokens, int(min(limits) * LEDGER_SHARE)) if limits else tokens


def recheck(pipe: Pipeline, measured: Measured, plan: Partition, text: str) -> Checked:
    """``text`` (a person's edit, a draft read back from the store) checked again, its ledger
    rebuilt from the trail: deterministic, so a draft gets the ledger it was shown."""
    trail = covered_trail(pipe, measured, plan)
    return check_summary(text, trail, ledger_budget(pipe), ledger_counter(pipe))


def verified(
    pipe: Pipeline,
    measured: Measured,
    plan: Partition,
    text: str,
    models: list[BaseChatModel],
    labels: RunnableConfig | None = None,
) -> Step[Verified]:
    """``text`` checked, repaired once when asked and needed, with its ledger appended."""
    rules = pipe.settings.config.integrity
    trail = covered_trail(pipe, measured, plan)
    tokens = ledger_counter(pipe)
    budget = ledger_budget(pipe)
    checked = check_summary(text, trail, budget, tokens)
    share = user_kept_share(checked, trail)
    repaired, calls, usage = False, 0, None
    if rules.repair and models and share is not None and share < rules.min_kept:
        prose, _ = split_ledger(text)
        second_text, usage = yield from _repair(pipe, models, prose, checked, labels)
        calls = 1
        if second_text is not None:
            second = check_summary(second_text, trail, budget, tokens)
            if len(second.missing_user) <= len(checked.missing_user):
                checked, repaired = second, True
    report = replace(checked.report, repaired=repaired)
    return Verified(checked.text, report, checked.items, calls, usage)


def _repair(
    pipe: Pipeline,
    models: list[BaseChatModel],
    prose: str,
    checked: Checked,
    labels: RunnableConfig | None,
) -> Step[tuple[str | None, SummaryUsage | None]]:
    """One repair call: the new prose (None when it failed or is not a summary), its usage."""
    config = pipe.settings.config
    missing = "\n".join(f"- {identifier.text}" for identifier in checked.missing_user)
    prompt = REPAIR_PROMPT.format(summary=prose, missing=missing)
    estimate = pipe.settings.counter([HumanMessage(content=prompt)])
    models = list(models)  # the call drops a model that fails for good: not the caller's list
    bound = [bind_summarizer(m, config, labels) for m in models]
    try:
        reply = yield from summary_call(models, bound, prompt, estimate, config.summary_timeout)
    except SummarizerError as exc:
        spent = exc.usage if isinstance(exc, PromptTooLong | SummaryCallFailed) else None
        return None, spent
    text = tidy_reply(reply.text, _REPAIR_TAGS, reply.stopped_at_cap)
    if config.summary_check == "basic" and not_a_summary(text, prose) is not None:
        return None, reply.usage
    return cap_summary(text, config.max_summary_tokens, pipe.settings.counter), reply.usage
