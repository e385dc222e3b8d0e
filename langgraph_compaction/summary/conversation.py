"""The input of a ``summary_context: "conversation"`` summary call (DESIGN 6.15).

A provider's prompt cache bills a repeated prefix at a tenth to a half of the input price, and
the agent's calls share one long prefix. So this summary call sends what the agent's own call
would send without a new summary, byte for byte: the system prompt the model node adds, the
input the thread's last call sent exactly as it went (its shortened and pruned copies too:
``Memory.last_input``) and the messages that came after it — or, when this process has not
served the thread's last call with the same summary, the input the summary in use gives before
anything is dropped to fit (``summary.model_input``), with the tool-pair rule applied as the
assemble node applies it — then ONE user message asking
for the summary: which messages stay verbatim after it, the user's language, the update of
the summary in use, and the caller's instructions last. The agent's tools are bound with tool
use switched off (``summary.model_call.bind_summarizer``). An input that would not fit the
window with the reply's cap gives None: that call falls back to the transcript.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langgraph_compaction.content.messages import ensure_tool_pairs
from langgraph_compaction.content.tokens import calibrated
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.records import Measured, Partition
from langgraph_compaction.store import storable
from langgraph_compaction.summary.model_input import model_input
from langgraph_compaction.summary.prompts import add_instructions

__all__ = [
    "CONVERSATION_REQUEST_OPENING",
    "ConversationRequest",
    "conversation_instruction",
    "conversation_request",
    "sendable",
]

CONVERSATION_REQUEST_OPENING = (
    "Stop the task here: do not answer the last message and do not call any tool."
)
"""The first words of the summary request that closes a conversation summary call."""

_SECTIONS = """Write a checkpoint summary of the conversation above so that the assistant can
continue the work without it. Use exactly these sections:

## Goal
## Constraints & Preferences
## Progress
## Key Decisions
## Next Steps
## Critical Context

Write the summary in the language the user writes in, and keep every identifier verbatim:
file paths, URLs, ids, numbers, names, error messages. Be concise and factual; do not invent
anything. Reply with the summary only."""


@dataclass(frozen=True, slots=True)
class ConversationRequest:
    """One conversation summary call: its messages and what the reply is checked against."""

    messages: tuple[BaseMessage, ...]
    """The agent's input without a new summary (system prompt first), then the request."""
    instruction: str
    """The request's text (its tags are stripped from an echoing reply)."""
    estimate: int
    """Our count of the input's tokens, calibrated as the agent's calls are."""


def _named(messages: Sequence[BaseMessage], indexes: Sequence[int]) -> str:
    """Messages by id (``None``: by position from the end, as the model sees them)."""
    size = len(messages)
    return ", ".join(
        f"`{messages[i].id}`" if messages[i].id else f"the message {size - i} from the end"
        for i in indexes
    )


def conversation_instruction(
    messages: Sequence[BaseMessage],
    plan: Partition,
    instruction: str | None,
) -> str:
    """The summary request: what stays verbatim after the summary, the update of the one in
    use, the built-in sections and language, then the caller's instructions."""
    stay = len(messages) - plan.cutoff
    if stay:
        first = messages[plan.cutoff]
        start = f" (from the message with id `{first.id}` on)" if first.id else ""
        verbatim = (
            f"The last {stay} message{'s' if stay != 1 else ''} of the conversation above"
            f"{start} stay verbatim after your summary: leave them out of it, and summarize "
            "everything before them."
        )
    else:
        verbatim = "Summarize the whole conversation above."
    if plan.rescued:
        verbatim += (
            " These earlier messages stay verbatim too, so leave them out: "
            f"{_named(messages, plan.rescued)}."
        )
    parts = [CONVERSATION_REQUEST_OPENING, verbatim]
    if plan.previous is not None:
        parts.append(
            "The conversation above opens with the summary of its earlier part; yours replaces "
            "it: keep what is still true in it, add what came after it, and drop what later "
            "messages make obsolete."
        )
    parts.append(_SECTIONS)
    return add_instructions("\n\n".join(parts), instruction)


def _cleaned(value: object) -> object:
    """``value`` with every string's lone surrogates (and NULs) replaced, as ``storable`` does."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list):
        return [_cleaned(v) for v in value]
    if isinstance(value, dict):
        return {k: _cleaned(v) for k, v in value.items()}
    return value


def sendable(message: BaseMessage) -> BaseMessage:
    """``message`` as it is, or a copy without lone surrogates when it holds one.

    A lone surrogate (from a tool's output) cannot be encoded as UTF-8 for the provider's API,
    so the agent's own call could not have sent it either: the copy costs no cache hit, and it
    keeps the summary call from failing on every turn (the transcript is cleaned the same way).
    """
    try:
        message.model_dump_json()
    except (UnicodeEncodeError, ValueError):
        update: dict[str, object] = {"content": _cleaned(message.content)}
        if isinstance(message, AIMessage) and message.tool_calls:
            update["tool_calls"] = _cleaned(list(message.tool_calls))
        return message.model_copy(update=update)
    return message


def conversation_request(
    pipe: Pipeline, measured: Measured, plan: Partition, instruction: str | None
) -> ConversationRequest | None:
    """The call's messages, or None when they and the reply's cap would not fit the window
    (``settings.window``; no window known: no limit)."""
    settings = pipe.settings
    messages = measured.messages
    summary_id = plan.previous.id if plan.previous is not None else None
    last = pipe.memory.last_input(measured.key, messages, summary_id)
    if last is not None:  # the input the thread sent last, exactly, and what came after it
        body, _ = ensure_tool_pairs([*last.messages, *messages[last.history :]])
        tokens = settings.counter(body)
    else:
        built = model_input(pipe, measured, plan.previous)
        body, _ = ensure_tool_pairs(built.body)
        tokens = sum(built.tokens)
    body = [sendable(m) for m in body]
    text = conversation_instruction(messages, plan, instruction)
    request = HumanMessage(content=text)
    head = [settings.system_message] if settings.system_message is not None else []
    raw = settings.fixed_tokens + tokens + settings.counter([request])
    estimate = calibrated(raw, measured.ratio)
    window = settings.window
    if window is not None and estimate + settings.config.max_summary_tokens > window:
        return None
    return ConversationRequest((*head, *body, request), text, estimate)
