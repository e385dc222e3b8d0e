"""prune: shrink old, large tool results in the model input copy (cheap before expensive).

LibreChat's position-based pruning: a tool result's age is ``(N - i) / N``; at
``soft_trim_ratio`` it keeps its head and tail, at ``hard_clear_ratio`` it is replaced by a
placeholder. Only the model input copy changes; the summarizer always gets the originals.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from .._config import PruningConfig
from .._messages import is_real_user_message
from .._runtime import CallWork, CompactionRuntime
from .._tokens import calibrated
from .measure import fired_triggers

__all__ = ["plan_pruning", "prune", "soft_trim_text"]


def soft_trim_text(text: str, head: int, tail: int) -> str:
    """Keep ``head`` and ``tail`` characters with a marker saying how much was cut."""
    cut = len(text) - head - tail
    if cut <= 0:
        return text
    return f"{text[:head]}\n\n[... {cut} characters trimmed ...]\n\n{text[len(text) - tail :]}"


def _protected_from(messages: Sequence[BaseMessage], keep_last_assistants: int) -> int:
    """Index from which the last ``keep_last_assistants`` assistant turns (and all after) start."""
    seen = 0
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AIMessage):
            seen += 1
            if seen >= keep_last_assistants:
                return index
    return 0


def _tool_allowed(name: str | None, pruning: PruningConfig) -> bool:
    name = name or ""
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in pruning.tools_deny):
        return False
    if pruning.tools_allow:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in pruning.tools_allow)
    return True


def plan_pruning(messages: Sequence[BaseMessage], pruning: PruningConfig) -> dict[int, BaseMessage]:
    """Replacements for old large tool results, by index; empty when pruning is off."""
    if not pruning.enabled or not messages:
        return {}
    first_user = next((i for i, m in enumerate(messages) if is_real_user_message(m)), None)
    if first_user is None:
        return {}
    protected = _protected_from(messages, pruning.keep_last_assistants)
    total = len(messages)
    replacements: dict[int, BaseMessage] = {}
    for index in range(first_user + 1, protected):
        message = messages[index]
        if not isinstance(message, ToolMessage) or not _tool_allowed(message.name, pruning):
            continue
        text = message.text if not isinstance(message.content, str) else message.content
        if len(text) < pruning.min_prunable_tool_chars:
            continue
        age = (total - index) / total
        if pruning.hard_clear.enabled and age >= pruning.hard_clear_ratio:
            content = pruning.hard_clear.placeholder
        elif age >= pruning.soft_trim_ratio and len(text) > pruning.soft_trim.max_chars:
            trim = pruning.soft_trim
            content = soft_trim_text(text, trim.head_chars, trim.tail_chars)
        else:
            continue
        replacements[index] = message.model_copy(update={"content": content})
    return replacements


def prune(runtime: CompactionRuntime, work: CallWork) -> bool:
    """Apply pruning to the work's model input copy; True when the context now fits."""
    replacements = plan_pruning(work.messages, runtime.config.pruning)
    if not replacements:
        return False
    copy = list(work.messages)
    saved = 0
    for index, replacement in replacements.items():
        copy[index] = replacement
        tokens = runtime.counter([replacement])
        work.pruned_tokens[index] = tokens
        saved += work.scan.tokens[index] - tokens
    work.model_messages = copy
    work.pruned_count = len(replacements)
    raw = runtime.fixed_tokens + work.scan.cumulative[-1] - saved
    total = calibrated(raw, work.ratio)
    refine = 0  # pruning does not change which messages lie outside the keep window
    if runtime.needs_refine_count:
        return False
    return not fired_triggers(runtime.thresholds, total, len(copy), refine)
