"""Probe questions on each compaction: what the agent can still answer about what was evicted.

DESIGN 6.14, after Factory's probes: the judge writes up to one question of each kind (a fact
the user stated, an artifact a tool acted on, the next step, a decision and its reason) that
only the evicted span answers, with the answer the span gives. The agent answers each from the
compacted input and from the full history (the control: a question the full history cannot
answer is a bad question, not a loss), and the judge grades both with LangChain's openevals.

A model failing (any exception) never stops an evaluation: a failed answer or grade is graded
wrong with the error as its comment; questions that cannot be written leave no probes (logged).

Tool traffic: the answer call carries no tool definitions, which some providers refuse when the
history holds tool calls (Anthropic and Bedrock do; OpenAI and llama.cpp do not). The context is
sent as the agent saw it; if the model refuses it (a 400), it is sent again with the tool calls and
results written as text, as the summary transcript writes them. Calls with no result after them
(no call point ends so; a hand-built record might) go as text at once: every provider refuses
a user message after unanswered calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.exceptions import ModelError, ModelInvalidRequestError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from openevals.llm import create_llm_as_judge

from langgraph_compaction.content.blocks import tool_call_block
from langgraph_compaction.evaluate.records import PROBE_KINDS, Compaction, Probe, ProbeKind
from langgraph_compaction.store import storable
from langgraph_compaction.summary.prompts import (
    delimiters_of,
    escape_for,
    fill_prompt,
    render_transcript,
)

__all__ = [
    "ANSWER_INSTRUCTION",
    "GRADE_PROMPT",
    "QUESTIONS_PROMPT",
    "QUESTIONS_SCHEMA",
    "NoProbesError",
    "answer",
    "grade",
    "probe_compaction",
    "write_questions",
]

logger = logging.getLogger(__name__)


class NoProbesError(Exception):
    """The judge could not write the questions of a compaction (kept with the results)."""


TOOL_RESULT_CHARS = 2_000
"""A tool result is shown to the question writer in its first characters only."""

QUESTIONS_SCHEMA: dict[str, Any] = {
    "title": "probes",
    "description": "Probe questions that only the conversation span answers.",
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": list(PROBE_KINDS)},
                    "question": {"type": "string"},
                    "expected": {"type": "string", "description": "The span's answer, quoted."},
                },
                "required": ["kind", "question", "expected"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["questions"],
    "additionalProperties": False,
}
"""The judge's reply to :data:`QUESTIONS_PROMPT` (strict: every field required)."""

QUESTIONS_PROMPT = """Below is a span of a conversation between a user and an AI assistant.

<transcript>
{messages}
</transcript>

Write questions that only the span above answers, at most one of each kind:
- fact: a fact the user stated;
- artifact: a file, id or other thing a tool call of the span acted on;
- next_step: what the assistant was about to do next;
- decision: a decision taken in the span and its reason.
Leave out a kind the span gives no answer for. Give each question's expected answer as the
span states it, quoting it where you can, with every identifier verbatim. Write in the
language of the conversation."""
"""``{messages}`` is the evicted span as a transcript; the instruction comes after it."""

ANSWER_INSTRUCTION = "Answer in one or two sentences from the conversation above."

GRADE_PROMPT = """You grade an answer to a question about a conversation against the reference \
answer that the conversation gives.

<question>
{inputs}
</question>

<answer>
{outputs}
</answer>

<reference>
{reference_outputs}
</reference>

The answer is right when it states what the reference states (the same identifiers, numbers \
and names; other wording is fine) and contradicts none of it. An answer that does not know, or \
answers something else, is wrong."""
"""openevals fills ``{inputs}`` (the question), ``{outputs}`` (the answer) and
``{reference_outputs}`` (the expected answer)."""

_QUESTION_FIELDS = ("kind", "question", "expected")
_GRADE_TAGS, _GRADE_FENCES = delimiters_of(GRADE_PROMPT)

Grader = Callable[..., Any]


def write_questions(
    judge: BaseChatModel, evicted: Sequence[BaseMessage]
) -> list[tuple[ProbeKind, str, str]]:
    """``(kind, question, expected)`` the judge writes from the evicted span, in the order of
    :data:`PROBE_KINDS`, at most one per kind; a kind the span cannot support is left out.

    Raises whatever the judge raises: the caller decides what a failure costs.
    """
    if not evicted:
        return []
    transcript = render_transcript([_shortened(m) for m in evicted])
    prompt = storable(fill_prompt(QUESTIONS_PROMPT, transcript))  # no NUL or lone surrogate
    writer = judge.with_structured_output(QUESTIONS_SCHEMA, method="json_schema")
    reply = writer.invoke([HumanMessage(content=prompt)])
    items = reply.get("questions") if isinstance(reply, dict) else None
    found: dict[ProbeKind, tuple[ProbeKind, str, str]] = {}
    for item in items if isinstance(items, list) else []:
        fields = [item.get(k) if isinstance(item, dict) else None for k in _QUESTION_FIELDS]
        kind, question, expected = (f.strip() if isinstance(f, str) else "" for f in fields)
        asked = {"", *(q for _, q, _ in found.values())}  # a question written twice counts once
        if kind in PROBE_KINDS and kind not in found and question not in asked and expected:
            found[kind] = (kind, question, expected)
    return [found[kind] for kind in PROBE_KINDS if kind in found]


def answer(agent: BaseChatModel, context: Sequence[BaseMessage], question: str) -> str:
    """The agent's answer to ``question`` asked after ``context``: its text blocks joined.

    The context goes as the agent would see it; when the model refuses tool traffic sent
    without tool definitions, it goes again with that traffic written as text (module doc).
    """
    ask = HumanMessage(content=f"Question: {question}\n{ANSWER_INSTRUCTION}")
    context = [_sendable(m) for m in context]
    if _unanswered_calls(context):
        return _text(agent.invoke([*_tool_traffic_as_text(context), ask]))
    try:
        return _text(agent.invoke([*context, ask]))
    except Exception as error:
        # A refusal is a 400 (or an integration's own error); an outage or overflow is not one.
        refused = isinstance(error, ModelInvalidRequestError) or not isinstance(error, ModelError)
        if not refused or not any(_is_tool_traffic(m) for m in context):
            raise
        logger.info("the agent model refused tool traffic; asking again with it as text")
        return _text(agent.invoke([*_tool_traffic_as_text(context), ask]))


def grade(grader: Grader, question: str, given: str, expected: str) -> tuple[bool, str]:
    """(right, the judge's reasoning) from an openevals evaluator over :data:`GRADE_PROMPT`."""
    result = grader(
        inputs=_escaped(question), outputs=_escaped(given), reference_outputs=_escaped(expected)
    )
    if isinstance(result, list):  # openevals answers a list for a schema with several keys
        result = result[0] if result else {}
    if not isinstance(result, dict):
        raise TypeError(f"the judge's grade is not a dict: {result!r}")
    return result.get("score") is True, str(result.get("comment") or "")


def probe_compaction(
    compaction: Compaction, *, judge: BaseChatModel, agent: BaseChatModel
) -> tuple[Probe, ...]:
    """The probes of one compaction: questions on its evicted span, answered from the
    compacted input and from the full history, each answer graded by the judge."""
    evicted = compaction.history[compaction.start : compaction.end]
    try:
        questions = write_questions(judge, evicted)
    except Exception as error:
        raise NoProbesError(f"call {compaction.call}: {_describe(error)}") from error
    grader = create_llm_as_judge(
        prompt=GRADE_PROMPT,
        judge=judge,
        feedback_key="right",
        structured_output_kwargs={"method": "json_schema"},
    )
    probes = []
    for kind, question, expected in questions:
        compacted = _answer_and_grade(grader, agent, compaction.model_input, question, expected)
        full = _answer_and_grade(grader, agent, compaction.history, question, expected)
        probes.append(
            Probe(
                call=compaction.call,
                kind=kind,
                question=question,
                expected=expected,
                answer_compacted=compacted[0],
                answer_full=full[0],
                right_compacted=compacted[1],
                right_full=full[1],
                comment_compacted=compacted[2],
                comment_full=full[2],
            )
        )
    return tuple(probes)


def _answer_and_grade(
    grader: Grader,
    agent: BaseChatModel,
    context: Sequence[BaseMessage],
    question: str,
    expected: str,
) -> tuple[str, bool, str]:
    """(answer, right, comment); a model's failure is a wrong answer with the error said."""
    try:
        given = answer(agent, context, question)
    except Exception as error:
        return "", False, f"the agent model failed: {_describe(error)}"
    try:
        right, comment = grade(grader, question, given, expected)
    except Exception as error:
        return given, False, f"the judge failed: {_describe(error)}"
    return given, right, comment


def _describe(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__


def _escaped(text: str) -> str:
    """Text that cannot close the grade prompt's tags (openevals fills it in as it is)."""
    return storable(escape_for(text, _GRADE_TAGS, _GRADE_FENCES))


def _text(reply: BaseMessage) -> str:
    return str(reply.text).strip()


def _sendable(message: BaseMessage) -> BaseMessage:
    """The message with NUL and lone surrogates in its text replaced (U+FFFD), as the summary
    call sends them: no provider's JSON carries them, and they are not what a probe asks."""
    content = message.content
    if isinstance(content, str):
        clean: str | list[str | dict[str, Any]] = storable(content)
    else:
        clean = [
            storable(b)
            if isinstance(b, str)
            else {**b, "text": storable(b["text"])}
            if isinstance(b.get("text"), str)
            else b
            for b in content
        ]
    return message if clean == content else message.model_copy(update={"content": clean})


def _shortened(message: BaseMessage) -> BaseMessage:
    """A tool result cut to :data:`TOOL_RESULT_CHARS` for the question writer."""
    if not isinstance(message, ToolMessage):
        return message
    text = str(message.text)
    if len(text) <= TOOL_RESULT_CHARS:
        return message
    cut = f"{text[:TOOL_RESULT_CHARS]} [... {len(text) - TOOL_RESULT_CHARS} characters cut]"
    return message.model_copy(update={"content": cut})


def _calls_of(message: BaseMessage) -> bool:
    if not isinstance(message, AIMessage):
        return False
    blocks = message.content if isinstance(message.content, list) else []
    return bool(message.tool_calls) or any(tool_call_block(b) is not None for b in blocks)


def _is_tool_traffic(message: BaseMessage) -> bool:
    return isinstance(message, ToolMessage) or _calls_of(message)


def _unanswered_calls(context: Sequence[BaseMessage]) -> bool:
    """Whether a tool call of the context has no result after it."""
    answered = {m.tool_call_id for m in context if isinstance(m, ToolMessage)}
    return any(
        call.get("id") not in answered
        for m in context
        if isinstance(m, AIMessage)
        for call in m.tool_calls
    )


def _tool_traffic_as_text(context: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The context with tool calls and results written as text, other messages untouched."""
    written: list[BaseMessage] = []
    for message in context:
        if isinstance(message, ToolMessage):
            written.append(HumanMessage(content=f"[{render_transcript([message])}]"))
        elif _calls_of(message):
            text = render_transcript([message]).removeprefix("assistant: ")
            written.append(AIMessage(content=text, id=message.id))
        else:
            written.append(message)
    return written
