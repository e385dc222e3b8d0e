"""The default counter: langchain-core's rule, text weighed by script, media priced by type.

langchain-core's ``count_tokens_approximately`` counts a message's characters (content, tool calls,
tool call id, role, name) at four a token, rounded up per message, plus three tokens a message; an
image block is 85 tokens and any other block the length of its ``repr``, so a PDF, an audio clip or
a Responses ``input_image`` counts as its base64 data. This counter keeps that rule and its
rounding, so that counts add up message by message and a message of ASCII prose and tool calls
counts exactly as there, and changes four things: text is measured by
``content.writing_systems.weighted_chars`` (a CJK character costs about a token), a text that
is JSON-shaped (a tool result, mostly) at ``JSON_CHARS_PER_TOKEN`` (o200k packs JSON tool output
at about 2.7 characters a token: at four it was counted a third short, ``benchmarks/scripts.py``),
a media block costs its estimate by type (``content.blocks.block_tokens``, an image inside an
Anthropic ``tool_result`` too), and a reasoning block the length of its text (not its
signature).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langgraph_compaction.content.blocks import is_reasoning, media_block, reasoning_text
from langgraph_compaction.content.writing_systems import weighted_chars

__all__ = [
    "CHARS_PER_TOKEN",
    "EXTRA_TOKENS_PER_MESSAGE",
    "JSON_CHARS_PER_TOKEN",
    "estimate_tokens",
    "looks_like_json",
    "message_tokens",
    "text_chars",
]

CHARS_PER_TOKEN = 4
"""langchain-core's ``chars_per_token`` default, for Latin-equivalent characters."""
EXTRA_TOKENS_PER_MESSAGE = 3
"""langchain-core's ``extra_tokens_per_message`` default: a message's own markers."""
JSON_CHARS_PER_TOKEN = 2.7
"""Characters a token of JSON-shaped text: o200k's median on the tau-bench tool results (their
estimate at four a token was 0.68 of the real count)."""
UNREAD_IMAGE_TOKENS = 85
"""langchain-core's ``tokens_per_image``, for an image block too odd to read."""

_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "function": "function"}
"""Roles by message type; a system message (which may say ``developer``), a chat message and
any other class go through ``_role``."""


_JSON_START = re.compile(r"\s*[\[{]")
_JSON_WEIGHT = CHARS_PER_TOKEN / JSON_CHARS_PER_TOKEN


def looks_like_json(text: str) -> bool:
    """Whether ``text`` opens with ``{`` or ``[`` and closes with ``}`` or ``]`` (whitespace
    around allowed): read from both ends only, never parsed."""
    if _JSON_START.match(text) is None:
        return False
    end = len(text) - 1
    while end > 0 and text[end].isspace():
        end -= 1
    return text[end] in "]}"


def text_chars(text: str) -> int:
    """A message text's length in Latin-equivalent characters (four to a token): by script,
    and JSON-shaped text weighted up to ``JSON_CHARS_PER_TOKEN``."""
    chars = len(text) if text.isascii() else weighted_chars(text)
    return round(chars * _JSON_WEIGHT) if looks_like_json(text) else chars


def estimate_tokens(messages: Sequence[BaseMessage]) -> int:
    """Approximate tokens of ``messages``: the sum of each message's ``message_tokens``."""
    return sum(map(message_tokens, messages))


def message_tokens(message: BaseMessage) -> int:
    """One message's estimate: characters at four a token, rounded up, plus media and 3."""
    content = message.content
    media = 0
    if isinstance(content, str):  # ASCII measured inline: the common case, 10,000 at a time
        chars = text_chars(content)
    elif isinstance(content, list):
        chars, media = _blocks_cost(content)
    else:  # not a type a message holds, but langchain-core counts it so
        chars = weighted_chars(repr(content))
    if isinstance(message, AIMessage):
        if message.tool_calls and not isinstance(content, list):
            chars += weighted_chars(repr(message.tool_calls))
    elif isinstance(message, ToolMessage):
        chars += weighted_chars(message.tool_call_id)
    chars += len(_ROLES.get(message.type) or _role(message))
    if message.name:
        chars += weighted_chars(message.name)
    return -(-chars // CHARS_PER_TOKEN) + EXTRA_TOKENS_PER_MESSAGE + media


def _blocks_cost(blocks: list[Any]) -> tuple[int, int]:
    """(characters, media tokens) of a list of content blocks."""
    chars = media = 0
    for block in blocks:
        if isinstance(block, str):
            chars += text_chars(block)
            continue
        if not isinstance(block, Mapping):
            chars += weighted_chars(repr(block))
            continue
        kind = block.get("type", "")
        if kind == "text":
            text = block.get("text", "")
            chars += text_chars(text) if isinstance(text, str) else len(repr(text))
        elif is_reasoning(block):
            chars += weighted_chars(reasoning_text(block))
        elif (found := media_block(block)) is not None:
            if found.text is not None:
                chars += weighted_chars(found.text)
            else:
                media += found.tokens
        elif kind in ("image", "image_url"):
            media += UNREAD_IMAGE_TOKENS
        elif kind == "tool_result" and _holds_media(block.get("content")):
            # an Anthropic tool result that returns an image or a document
            inner_chars, inner_media = _blocks_cost(block["content"])
            rest = {key: value for key, value in block.items() if key != "content"}
            chars += weighted_chars(repr(rest)) + inner_chars
            media += inner_media
        else:
            chars += weighted_chars(repr(block))
    return chars, media


def _holds_media(content: object) -> bool:
    return isinstance(content, list) and any(
        media_block(part) is not None for part in content if isinstance(part, Mapping)
    )


def _role(message: BaseMessage) -> str:
    """The OpenAI role langchain-core counts (``_get_message_openai_role``'s rule)."""
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, SystemMessage):
        role = message.additional_kwargs.get("__openai_role__", "system")
        return role if isinstance(role, str) else "system"
    if isinstance(message, FunctionMessage):
        return "function"
    if isinstance(message, ChatMessage):
        return message.role
    return message.type
