"""Where an agent calls its model in a recorded conversation, and whether an input keeps the
provider's tool-pair rule: the two readings of a conversation the replay rests on."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

__all__ = ["model_call_points", "tool_pair_violations"]


def model_call_points(messages: Sequence[BaseMessage]) -> list[int]:
    """Indexes ``i`` where an agent would call its model with ``messages[:i]`` (DESIGN 6.1).

    That is right after a user's turn (a human message not followed by another one: two in a
    row make one turn) and right after the last tool result of a batch (never between the
    results of a parallel batch). ``len(messages)`` is included when the list ends at such a
    point.
    """
    points = []
    for i in range(1, len(messages) + 1):
        last = messages[i - 1]
        following = messages[i] if i < len(messages) else None
        if (isinstance(last, HumanMessage) and not isinstance(following, HumanMessage)) or (
            isinstance(last, ToolMessage) and not isinstance(following, ToolMessage)
        ):
            points.append(i)
    return points


def tool_pair_violations(
    messages: Sequence[BaseMessage], *, allow_trailing_calls: bool = True
) -> list[str]:
    """Breaches of OpenAI's tool-pair rule, checked by position; empty when the list is valid.

    Each AI message's tool calls must be answered, in the messages right after it, by one
    tool message per call id; every tool message must answer a call of that AI message.
    Pairing is positional because real traces reuse ids. With ``allow_trailing_calls`` the
    final AI message may leave its calls unanswered (a run cut off mid-call).
    """
    problems: list[str] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if isinstance(message, ToolMessage):
            problems.append(f"{message.id}: tool result {message.tool_call_id} follows no call")
            i += 1
            continue
        i += 1
        if not isinstance(message, AIMessage) or not message.tool_calls:
            continue
        is_last = i == len(messages)
        pending = [call["id"] for call in message.tool_calls]
        while i < len(messages) and isinstance(result := messages[i], ToolMessage):
            if result.tool_call_id in pending:
                pending.remove(result.tool_call_id)
            else:
                problems.append(
                    f"{result.id}: result {result.tool_call_id} matches no call of {message.id}"
                )
            i += 1
        if pending and not (allow_trailing_calls and is_last):
            problems.append(f"{message.id}: calls {pending} have no result")
    return problems
