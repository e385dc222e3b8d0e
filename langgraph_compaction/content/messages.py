"""Message helpers: tool-call units, the tool-pair rule, the summary message.

Pairing is by position, not by id alone: real traces reuse tool-call ids, so a tool result
belongs to the AI message it directly follows. A call lives in up to three forms (``tool_calls``,
the provider's raw ``additional_kwargs["tool_calls"]``, content call blocks), trimmed together.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import convert_to_messages

from langgraph_compaction.content.blocks import tool_call_block
from langgraph_compaction.errors import CompactionInputError

__all__ = [
    "RECALL_LINE",
    "SUMMARY_NAME",
    "SUMMARY_PREFIX",
    "answered_calls",
    "caller_index",
    "coerce_messages",
    "count_leading_system",
    "ensure_tool_pairs",
    "find_latest_user_index",
    "has_unanswered_call",
    "is_real_user_message",
    "keep_tool_calls",
    "make_summary_message",
    "split_tool_units",
    "tool_name_of",
    "trim_middle",
]

SUMMARY_NAME = "summary"
SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
RECALL_LINE = (
    "\n\nEarlier messages of this conversation are not shown; search their exact text "
    "with the `{tool}` tool."
)
_MISSING_RESULT = "[no tool result was recorded for this call]"


_EXPECTED = (
    "a list of messages: BaseMessage objects, message dicts such as "
    '{"role": "user", "content": "..."}, or (role, content) tuples, as add_messages accepts'
)


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def coerce_messages(state: object) -> list[BaseMessage]:
    """The input's ``messages`` as message objects, converted like ``add_messages`` does.

    Raises:
        CompactionInputError: the key is missing, or the value or one item is not a message.
    """
    if not isinstance(state, dict) or "messages" not in state:
        raise CompactionInputError(
            f"the compaction input has no 'messages' key; expected {_EXPECTED}"
        )
    value = state["messages"]
    if not isinstance(value, list | tuple):
        raise CompactionInputError(f"'messages' is {_shown(value)}; expected {_EXPECTED}")
    if all(issubclass(kind, BaseMessage) for kind in set(map(type, value))):  # the usual case
        return value if isinstance(value, list) else list(value)
    converted: list[BaseMessage] = []
    for index, item in enumerate(value):
        if isinstance(item, BaseMessage):
            converted.append(item)
            continue
        if not isinstance(item, dict | tuple | list | str):
            raise CompactionInputError(
                f"'messages'[{index}] is {_shown(item)}; expected {_EXPECTED}"
            )
        try:
            converted.extend(convert_to_messages([item]))
        except (ValueError, TypeError, NotImplementedError, KeyError) as exc:
            raise CompactionInputError(
                f"'messages'[{index}] is {_shown(item)}, which is not a message ({exc}); "
                f"expected {_EXPECTED}"
            ) from exc
    return converted


def trim_middle(text: str, head: int, tail: int) -> str:
    """Keep ``head`` and ``tail`` characters with a marker saying how much was cut.

    The one head-and-tail trimmer: pruning's soft trim, a summary call's shortened messages
    and an oversized newest turn all read the same way.
    """
    cut = len(text) - head - tail
    if cut <= 0:
        return text
    marker = f"[... {cut} of {len(text)} characters cut ...]"
    return f"{text[:head]}\n\n{marker}\n\n{text[len(text) - tail :]}"


def caller_index(messages: Sequence[BaseMessage], index: int) -> int:
    """The AI message a tool result belongs to: the one its batch directly follows (-1: none).

    Paired by position, since real traces reuse tool-call ids.
    """
    caller = index - 1
    while caller >= 0 and isinstance(messages[caller], ToolMessage):
        caller -= 1
    return caller


def tool_name_of(messages: Sequence[BaseMessage], index: int) -> str:
    """A message's name; for a tool result without one, the name of the call it answers."""
    message = messages[index]
    if message.name or not isinstance(message, ToolMessage):
        return message.name or ""
    caller = caller_index(messages, index)
    ai = messages[caller] if caller >= 0 else None
    if isinstance(ai, AIMessage):
        for call in ai.tool_calls:
            if call.get("id") == message.tool_call_id:
                return call["name"]
    return ""


def count_leading_system(messages: Sequence[BaseMessage]) -> int:
    """Number of system messages at the head of the history (they always stay)."""
    count = 0
    for message in messages:
        if message.type != "system":
            break
        count += 1
    return count


def is_real_user_message(message: BaseMessage) -> bool:
    """A user turn, not a summary this package injected."""
    return isinstance(message, HumanMessage) and message.name != SUMMARY_NAME


def find_latest_user_index(messages: Sequence[BaseMessage], start: int = 0) -> int | None:
    """Index of the newest real user message at or after ``start``, if any."""
    for index in range(len(messages) - 1, start - 1, -1):
        if is_real_user_message(messages[index]):
            return index
    return None


def split_tool_units(messages: Sequence[BaseMessage], start: int = 0) -> list[tuple[int, int]]:
    """Split ``messages[start:]`` into units ``(first, end)`` that must not be cut apart.

    An AI message with tool calls forms one unit with every tool result directly after it
    (a parallel batch is one unit); every other message is a unit of its own.
    """
    units: list[tuple[int, int]] = []
    index, count = start, len(messages)
    while index < count:
        end = index + 1
        message = messages[index]
        if isinstance(message, AIMessage) and message.tool_calls:
            while end < count and isinstance(messages[end], ToolMessage):
                end += 1
        units.append((index, end))
        index = end
    return units


def answered_calls(messages: Sequence[BaseMessage], index: int) -> dict[int, int]:
    """Which call of the AI message at ``index`` each tool result directly after it answers.

    Maps the result's index to the call's position in ``tool_calls``. A result answers the
    first unanswered call of its id (real traces reuse ids); a call at no position among the
    values has no recorded result.
    """
    message = messages[index]
    if not isinstance(message, AIMessage):
        return {}
    pending: list[str | None] = [call.get("id") or "" for call in message.tool_calls]
    answered: dict[int, int] = {}
    position = index + 1
    while position < len(messages) and isinstance(result := messages[position], ToolMessage):
        if result.tool_call_id in pending:
            call = pending.index(result.tool_call_id)
            pending[call] = None
            answered[position] = call
        position += 1
    return answered


def has_unanswered_call(messages: Sequence[BaseMessage], index: int) -> bool:
    """Whether the AI message at ``index`` made a call that no result directly after answers."""
    message = messages[index]
    if not isinstance(message, AIMessage) or not message.tool_calls:
        return False
    return len(answered_calls(messages, index)) < len(message.tool_calls)


_NOT_A_CALL = object()


def _call_keys(ids: Sequence[object]) -> list[tuple[object, int]]:
    """Each id with how many times it came before: the n-th block of an id is the n-th call."""
    seen: dict[object, int] = {}
    keys = []
    for call_id in ids:
        keys.append((call_id, seen.get(call_id, 0)))
        seen[call_id] = seen.get(call_id, 0) + 1
    return keys


def _block_call_id(block: object) -> object:
    """The call id of a content block that is a tool call, else ``_NOT_A_CALL``."""
    call = tool_call_block(block)
    return _NOT_A_CALL if call is None else call[0]


def keep_tool_calls(message: AIMessage, positions: Collection[int]) -> AIMessage:
    """A copy that makes only the calls at ``positions`` of ``tool_calls``.

    The calls' three forms stay in step: ``tool_calls``, the provider's raw
    ``additional_kwargs["tool_calls"]`` (OpenAI) and the call blocks of the content
    (Anthropic ``tool_use``, Responses ``function_call``, LangChain ``tool_call``), matched by
    id and, for a repeated id, by order. Everything else (text, reasoning with its signature)
    is kept byte for byte. With every call kept, the message itself comes back.
    """
    calls = message.tool_calls
    if len(set(positions) & set(range(len(calls)))) == len(calls):
        return message
    keys = _call_keys([call.get("id") for call in calls])
    wanted = {keys[p] for p in positions}
    update: dict[str, object] = {"tool_calls": [c for p, c in enumerate(calls) if p in positions]}
    raw = message.additional_kwargs.get("tool_calls")
    if isinstance(raw, list):
        raw_keys = _call_keys([c.get("id") if isinstance(c, dict) else None for c in raw])
        kwargs = dict(message.additional_kwargs)
        kwargs["tool_calls"] = [c for c, key in zip(raw, raw_keys, strict=True) if key in wanted]
        update["additional_kwargs"] = kwargs
    if isinstance(message.content, list):
        block_keys = _call_keys([_block_call_id(block) for block in message.content])
        update["content"] = [
            block
            for block, key in zip(message.content, block_keys, strict=True)
            if key[0] is _NOT_A_CALL or key in wanted
        ]
    return message.model_copy(update=update)


def ensure_tool_pairs(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], int]:
    """Enforce OpenAI's tool-pair rule on a model input; return it and the repairs made.

    Every tool result must directly follow the AI message that called it, and every call
    must be answered. A valid input comes back unchanged (same objects, zero repairs):
    this is a safety net, and its repairs are counted in the report. A call without a result
    normally goes to the summary with its message (partition); only one still in the input
    (the newest message, the kept side of a reused summary) gets the placeholder result.
    """
    output: list[BaseMessage] = []
    repairs = 0
    index, count = 0, len(messages)
    while index < count:
        message = messages[index]
        if isinstance(message, ToolMessage):
            repairs += 1  # an orphan result: no call directly before it
            index += 1
            continue
        output.append(message)
        index += 1
        if not (isinstance(message, AIMessage) and message.tool_calls):
            continue
        pending = [call.get("id") or "" for call in message.tool_calls]
        while index < count and isinstance(messages[index], ToolMessage):
            result = messages[index]
            assert isinstance(result, ToolMessage)
            if result.tool_call_id in pending:
                pending.remove(result.tool_call_id)
                output.append(result)
            else:
                repairs += 1
            index += 1
        for call_id in pending:
            repairs += 1
            output.append(ToolMessage(content=_MISSING_RESULT, tool_call_id=call_id))
    return output, repairs


def make_summary_message(
    summary_text: str,
    record_id: str,
    recall_tool: str | None = None,
    *,
    cache_breakpoint: bool = False,
) -> HumanMessage:
    """The injected summary: identical bytes on every call until the next summary.

    Marked as LangChain's and deepagents' summaries are (``name``, ``lc_source``), so tools that
    know those recognise it, and hidden from chat UIs. With recall on, it ends with one line
    telling the model how to get the originals back. With ``cache_breakpoint`` the same text is
    one text block marked ``cache_control: {"type": "ephemeral"}``: Anthropic then caches the
    request's prefix up to and including the summary, which every reused turn repeats.
    """
    text = SUMMARY_PREFIX + summary_text
    if recall_tool:
        text += RECALL_LINE.format(tool=recall_tool)
    content: str | list[str | dict[str, object]] = text
    if cache_breakpoint:
        content = [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]
    return HumanMessage(
        content=content,
        name=SUMMARY_NAME,
        id=f"compaction-summary-{record_id}",
        additional_kwargs={"hide_from_ui": True, "lc_source": "summarization"},
    )
