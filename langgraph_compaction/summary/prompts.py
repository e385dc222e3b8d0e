"""Built-in summary prompts and the transcript they wrap.

Templates follow LangChain's style: ``{messages}`` marks where the transcript goes and the
update prompt may use ``{summary}``. Substitution is literal (no ``str.format``), so braces in
a user's prompt or in the transcript never break it. The instruction comes after the
transcript: small models follow it only there. For the same reason the caller's own
instructions (``summary_instructions``, a run's ``instruction``) are added after the filled
template, built-in or custom, never in place of it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langgraph_compaction.content.blocks import is_reasoning, media_block, tool_call_block

__all__ = [
    "INSTRUCTIONS_HEADING",
    "add_instructions",
    "delimiters_of",
    "escape_for",
    "fill_prompt",
    "render_transcript",
]

_PLACEHOLDER = re.compile(r"\{(messages|summary)\}")
_OPEN = "<conversation>"
_CLOSE = "</conversation>"

INSTRUCTIONS_HEADING = "Additional instructions:"
"""Opens the caller's instructions at the end of a summary prompt."""


def add_instructions(prompt: str, instruction: str | None) -> str:
    """The filled prompt with the caller's instructions after it (None or blank: unchanged).

    They come last, after the transcript and the template's own request, where small models
    still follow them; they add to the template and never replace it.
    """
    if instruction is None or not instruction.strip():
        return prompt
    return f"{prompt}\n\n{INSTRUCTIONS_HEADING}\n{instruction.strip()}"


_TAG = re.compile(r"</?\s*([A-Za-z][\w.:-]*)[^<>]*>")
_FENCES = ("```", '"""', "'''")


def delimiters_of(template: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """The tag names and fences a template uses, which transcript text must not reproduce.

    Any tag of the template counts, not only the pair around ``{messages}``: a transcript that
    closed ``<summary>`` early could inject text as well as one that closes the transcript's own.
    """
    tags = frozenset(match.group(1).lower() for match in _TAG.finditer(template))
    return tags, tuple(fence for fence in _FENCES if fence in template)


def escape_for(text: str, tags: frozenset[str], fences: Sequence[str]) -> str:
    """Text that cannot open or close the given tags (any case, any attributes) or fences.

    A tag keeps its name readable for the summarizer: ``</messages>`` becomes ``<\\/messages>``.
    """
    if tags:
        text = _TAG.sub(
            lambda match: (
                "<\\" + match.group(0)[1:] if match.group(1).lower() in tags else match.group(0)
            ),
            text,
        )
    for fence in fences:
        text = text.replace(fence, f"{fence[0]}\\{fence[1:]}")
    return text


_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
"""Text blocks: LangChain's and Anthropic's ``text``, OpenAI Responses' input and output."""


def _message_text(message: BaseMessage) -> str:
    """What the summarizer reads of a message: its text, a reference for each media block
    (kind, mime type, file name or URL, size: never the data; a text document's text after
    it) and its tool calls.

    Reasoning is left out: it is the model's scratch work (often signed or encrypted), not
    what was said, and it reaches the model only in the messages kept verbatim.
    """
    parts = _content_parts(message.content)
    calls = _tool_calls(message)
    if calls:
        parts.append(f"[tool calls: {'; '.join(calls)}]")
    return "\n".join(parts)


def _content_parts(content: str | list[str | dict[str, Any]]) -> list[str]:
    """Text runs (joined as ``message.text`` joins them) and media references, in order."""
    if isinstance(content, str):
        return [content] if content else []
    parts: list[str] = []
    run: list[str] = []
    for block in content:
        if isinstance(block, str):
            run.append(block)
        elif block.get("type") in _TEXT_BLOCKS and isinstance(block.get("text"), str):
            run.append(block["text"])
        elif is_reasoning(block):
            continue
        elif (media := media_block(block)) is not None:
            parts.append("".join(run))
            run.clear()
            parts.append(media.reference)
            if media.text:  # a text document (plain text, CSV...) is read as the text it is
                parts.append(media.text)
    parts.append("".join(run))
    return [part for part in parts if part]


def _tool_calls(message: BaseMessage) -> list[str]:
    """``name(args)`` of each call: ``tool_calls``, then any call block of the content that
    ``tool_calls`` does not hold (the same call is never shown twice)."""
    calls = message.tool_calls if isinstance(message, AIMessage) else []
    shown = [f"{call['name']}({call['args']})" for call in calls]
    unseen: Counter[object] = Counter(call.get("id") for call in calls)
    blocks = message.content if isinstance(message.content, list) else []
    for call in filter(None, map(tool_call_block, blocks)):
        call_id, name, arguments = call
        if unseen[call_id] > 0:
            unseen[call_id] -= 1
            continue
        shown.append(f"{name or ''}({_arguments(arguments)})")
    return shown


def _arguments(value: object) -> object:
    """Arguments as ``tool_calls`` holds them: a JSON string (OpenAI Responses) parsed."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _role(message: BaseMessage) -> str:
    if isinstance(message, ToolMessage):
        return f"tool {message.name}" if message.name else "tool"
    return {"human": "user", "ai": "assistant"}.get(message.type, message.type)


def render_transcript(messages: Sequence[BaseMessage]) -> str:
    """Render messages as ``role: text`` lines; :func:`fill_prompt` escapes them."""
    return "\n\n".join(f"{_role(m)}: {_message_text(m)}" for m in messages)


def fill_prompt(template: str, transcript: str, summary: str | None = None) -> str:
    """Put the transcript (and a previous summary) into a template, in one pass.

    Both are escaped against the delimiters of the template they go into (its tags, any case,
    and its fences), so no message can close the transcript early, whatever the template.
    A template without ``{messages}`` gets the transcript placed before it; an update
    template without ``{summary}`` gets the previous summary at the head of the transcript.
    """
    if "{messages}" not in template:
        template = f"{_OPEN}\n{{messages}}\n{_CLOSE}\n\n{template}"
    tags, fences = delimiters_of(template)
    escaped_summary = escape_for(summary or "", tags, fences)
    transcript = escape_for(transcript, tags, fences)
    if summary is not None and "{summary}" not in template:
        transcript = f"previous summary: {escaped_summary}\n\n{transcript}"
    values = {"messages": transcript, "summary": escaped_summary}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)
