"""LibreChat's pruning rule over plain messages: eligibility, age, and the pruned copies.

A tool result is eligible when it comes after the first real user message and before the last
``keep_last_assistants`` assistant messages (those and all after them are protected), its tool
passes ``tools_allow``/``tools_deny`` (globs, case-insensitive, deny wins), and it alone has
``min_prunable_tool_chars`` characters (an image counts ``IMAGE_CHARS``). At age ``(N - i) / N``
it is soft trimmed from ``soft_trim_ratio`` (head and tail kept, images replaced by a
placeholder) and hard cleared from ``hard_clear_ratio``. ``pruning.epochs`` applies the rule only
at trigger crossings. A pinned message, and every message of its tool unit (``pruning.pins``), is
never a candidate.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Mapping, Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langgraph_compaction.config.parts import PruningConfig
from langgraph_compaction.content.messages import is_real_user_message, tool_name_of, trim_middle
from langgraph_compaction.pruning.pins import in_pinned_unit

__all__ = [
    "HARD",
    "IMAGE_CHARS",
    "KEEP",
    "SOFT",
    "age_level",
    "age_levels",
    "first_user_index",
    "is_candidate",
    "protected_from",
    "prunable_chars",
    "pruned_copy",
    "tool_allowed",
]

KEEP, SOFT, HARD = 0, 1, 2
"""Treatment levels, in escalation order."""
IMAGE_CHARS = 340
"""Characters an image counts for eligibility: langchain-core's 85 tokens at 4 characters."""
_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})


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
        content = trim_middle(text, trim.head_chars, trim.tail_chars)
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


def is_candidate(
    messages: Sequence[BaseMessage],
    index: int,
    pruning: PruningConfig,
    pins: Collection[str] = (),
) -> bool:
    """Eligible but for its position: a large tool result of a prunable tool, not pinned
    (``pins``: the ids pinned in the store; the ``pinned`` flag counts too)."""
    message = messages[index]
    return (
        isinstance(message, ToolMessage)
        and prunable_chars(message) >= pruning.min_prunable_tool_chars
        and tool_allowed(tool_name_of(messages, index), pruning)
        and not in_pinned_unit(messages, index, pins)
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


def age_levels(
    eligible: Sequence[int],
    size: int,
    shift: int,
    chars: Mapping[int, int],
    pruning: PruningConfig,
) -> dict[int, int]:
    """The age formula over a model input of ``size`` messages: each eligible index's level.

    ``shift`` maps a history index to its model input position (a summary and rescued
    messages sit in front of the kept ones). Indexes left untreated are omitted.
    """
    levels = {}
    for index in eligible:
        level = age_level(index + shift, size, chars[index], pruning)
        if level != KEEP:
            levels[index] = level
    return levels
