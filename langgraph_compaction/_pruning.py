"""LibreChat's pruning rule over plain messages: eligibility, age, and the pruned copies.

``nodes/prune.py`` applies this rule only at crossings (its epochs); `plan_pruning` is the
rule applied once to a model input, as LibreChat does on every call.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ._config import PruningConfig
from ._messages import is_real_user_message

__all__ = [
    "HARD",
    "IMAGE_CHARS",
    "KEEP",
    "SOFT",
    "age_level",
    "first_user_index",
    "is_candidate",
    "plan_pruning",
    "protected_from",
    "prunable_chars",
    "pruned_copy",
    "soft_trim_text",
    "tool_allowed",
]

KEEP, SOFT, HARD = 0, 1, 2
"""Treatment levels, in escalation order."""
IMAGE_CHARS = 340
"""Characters an image counts for eligibility: langchain-core's 85 tokens at 4 characters."""
_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})


def soft_trim_text(text: str, head: int, tail: int) -> str:
    """Keep ``head`` and ``tail`` characters with a marker saying how much was cut."""
    cut = len(text) - head - tail
    if cut <= 0:
        return text
    marker = f"[... {cut} of {len(text)} characters trimmed ...]"
    return f"{text[:head]}\n\n{marker}\n\n{text[len(text) - tail :]}"


def _content_parts(message: BaseMessage) -> tuple[str, list[tuple[str, int]]]:
    """The text of a message and, for each non-text block, a label and its character weight."""
    if isinstance(message.content, str):
        return message.content, []
    texts: list[str] = []
    others: list[tuple[str, int]] = []
    for block in message.content:
        if isinstance(block, str):
            texts.append(block)
        elif block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") in _IMAGE_TYPES:
            others.append(("image", IMAGE_CHARS))
        else:
            others.append((str(block.get("type") or "content"), len(repr(block))))
    return "".join(texts), others


def prunable_chars(message: BaseMessage) -> int:
    text, others = _content_parts(message)
    return len(text) + sum(weight for _, weight in others)


def pruned_copy(message: BaseMessage, level: int, pruning: PruningConfig) -> BaseMessage:
    """The model input copy of a tool result at ``SOFT`` or ``HARD``; the original is untouched.

    Soft trim keeps the text's head and tail and replaces each image (or other non-text
    block) by a one-line placeholder; hard clear replaces everything by the placeholder.
    """
    if level == HARD:
        content = pruning.hard_clear.placeholder
    else:
        text, others = _content_parts(message)
        trim = pruning.soft_trim
        content = soft_trim_text(text, trim.head_chars, trim.tail_chars)
        content += "".join(f"\n[{label} omitted]" for label, _ in others)
    return message.model_copy(update={"content": content}, deep=True)


def tool_allowed(name: str, pruning: PruningConfig) -> bool:
    """Whether a tool's results may be pruned: globs, case-insensitive; deny wins over allow."""
    name = name.lower()
    if any(fnmatch.fnmatchcase(name, p.lower()) for p in pruning.tools_deny):
        return False
    return not pruning.tools_allow or any(
        fnmatch.fnmatchcase(name, p.lower()) for p in pruning.tools_allow
    )


def _tool_name(messages: Sequence[BaseMessage], index: int) -> str:
    """The result's tool name, else the name of the call it answers (paired by position)."""
    message = messages[index]
    if message.name:
        return message.name
    caller = index - 1
    while caller >= 0 and isinstance(messages[caller], ToolMessage):
        caller -= 1
    ai = messages[caller] if caller >= 0 else None
    if isinstance(ai, AIMessage) and isinstance(message, ToolMessage):
        for call in ai.tool_calls:
            if call.get("id") == message.tool_call_id:
                return call["name"]
    return ""


def is_candidate(messages: Sequence[BaseMessage], index: int, pruning: PruningConfig) -> bool:
    """Eligible but for its position: a large tool result of a prunable tool."""
    message = messages[index]
    return (
        isinstance(message, ToolMessage)
        and prunable_chars(message) >= pruning.min_prunable_tool_chars
        and tool_allowed(_tool_name(messages, index), pruning)
    )


def first_user_index(messages: Sequence[BaseMessage], start: int) -> int | None:
    return next((i for i in range(start, len(messages)) if is_real_user_message(messages[i])), None)


def protected_from(messages: Sequence[BaseMessage], start: int, end: int, keep: int) -> int:
    """Where the last ``keep`` assistant messages of ``messages[start:end]`` begin.

    With fewer than ``keep`` of them, the whole range is protected (``start``).
    """
    if keep == 0:
        return end
    seen = 0
    for index in range(end - 1, start - 1, -1):
        if isinstance(messages[index], AIMessage):
            seen += 1
            if seen == keep:
                return index
    return start


def age_level(position: int, size: int, chars: int, pruning: PruningConfig) -> int:
    age = (size - position) / size
    if pruning.hard_clear.enabled and age >= pruning.hard_clear_ratio:
        return HARD
    if age >= pruning.soft_trim_ratio and chars > pruning.soft_trim.max_chars:
        return SOFT
    return KEEP


def plan_pruning(messages: Sequence[BaseMessage], pruning: PruningConfig) -> dict[int, BaseMessage]:
    """LibreChat's treatments of one model input at its own length, by index.

    A single evaluation of the age formula: no epochs and no escalation (the pipeline uses
    `derive_epochs`, which calls this rule only at crossings). Empty when pruning is off.
    """
    if not pruning.enabled or not messages:
        return {}
    first_user = first_user_index(messages, 0)
    if first_user is None:
        return {}
    size = len(messages)
    end = protected_from(messages, 0, size, pruning.keep_last_assistants)
    treated: dict[int, BaseMessage] = {}
    for index in range(first_user + 1, end):
        if is_candidate(messages, index, pruning):
            level = age_level(index, size, prunable_chars(messages[index]), pruning)
            if level != KEEP:
                treated[index] = pruned_copy(messages[index], level, pruning)
    return treated
