"""STAND-IN models, so the app runs offline and every run gives the same conversation.

- ``TravelDeskModel``, the agent model: it reads the latest user request (never the summary)
  and calls ``get_weather`` when asked about the weather in a city, ``convert_currency`` when
  asked to convert an amount, then answers from the tool's result; other requests get a
  direct answer. Replies are a few hundred characters, so compaction triggers within a few
  turns, and their ids derive from the request's id, so a replayed conversation is identical.
  Asked to "compact the context, focusing on ...", it calls ``compact`` with that focus.
- ``DigestSummarizer``, the summarizer: it lists the user requests of the transcript it is
  given (after those of the previous summary), so each summary is made of the transcript's
  own words. A real summarizer writes better summaries; the plumbing is the same.

Both answer on the event loop without blocking (pure computation), and on the sync path too.
To serve real models, replace them in ``settings.py``, e.g. with ``init_chat_model(...)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

__all__ = ["DigestSummarizer", "TravelDeskModel", "latest_request", "reply_to", "summary_of"]

_WEATHER = re.compile(r"weather in ([A-Z][\w-]*(?: [A-Z][\w-]*)*)")
_COMPACT = re.compile(r"compact the (?:context|conversation)(?:, focusing on (.+?))?\.?$")
_CONVERT = re.compile(r"convert (\d+(?:\.\d+)?) ([A-Za-z]{3}) to ([A-Za-z]{3})")
_USER_LINE = re.compile(r"^(?:user|human): (.+)$", re.MULTILINE)
_REQUESTS = "Requests so far: "
_MAX_REQUESTS = 8
"""A summary lists at most this many requests (the newest), so its size stays bounded."""


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


def latest_request(messages: Sequence[BaseMessage]) -> HumanMessage | None:
    """The newest user message that is not the injected summary."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage) and message.name != "summary":
            return message
    return None


def _answer(request: str, request_id: str, result: ToolMessage | None) -> AIMessage:
    topic = " ".join(request.split()[:12])
    if result is not None:
        body = (
            f"I looked it up for you. {_text(result)} Based on that, here is my advice for "
            f"your request ({topic}): plan the day around it, keep some cash and a light "
            "jacket with you, and tell me if you want me to compare it with another option."
        )
    else:
        body = (
            f"About your request ({topic}): here is what I suggest. Book the trains a few "
            "days ahead, keep one free afternoon for whatever you discover on the way, and "
            "check the opening hours of museums before you go, since many close on Mondays. "
            "Tell me the dates and the budget and I will put a day-by-day plan together."
        )
    return AIMessage(body, id=f"{request_id}-answer")


def _tool_call(request: str, request_id: str) -> AIMessage | None:
    """The tool call a request asks for, if any."""
    call_id = f"{request_id}-call"
    if match := _COMPACT.search(request):  # the graph ``steering`` has the ``compact`` tool
        call = ToolCall(
            name="compact", args={"focus": match[1] or ""}, id=call_id, type="tool_call"
        )
    elif match := _WEATHER.search(request):
        call = ToolCall(name="get_weather", args={"city": match[1]}, id=call_id, type="tool_call")
    elif match := _CONVERT.search(request):
        args = {"amount": float(match[1]), "source": match[2], "target": match[3]}
        call = ToolCall(name="convert_currency", args=args, id=call_id, type="tool_call")
    else:
        return None
    return AIMessage("", tool_calls=[call], id=f"{request_id}-tools")


def reply_to(messages: Sequence[BaseMessage]) -> AIMessage:
    """The agent's next message: a tool call, or an answer (from the tool result, if one)."""
    request = latest_request(messages)
    if request is None:
        return AIMessage("Hello! Where would you like to travel?", id="greeting")
    text, request_id = _text(request), request.id or "request"
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return _answer(text, request_id, last)
    return _tool_call(text, request_id) or _answer(text, request_id, None)


class TravelDeskModel(BaseChatModel):
    """A STAND-IN tool-calling agent model: deterministic replies built by ``reply_to``."""

    model_name: str = "travel-desk-stand-in"

    @property
    def _llm_type(self) -> str:
        return "travel-desk-stand-in"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The replies are decided by the request's words: the tools need no binding."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=reply_to(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=reply_to(messages))])


def summary_of(prompt: str) -> str:
    """A digest of a summary prompt: the previous summary's requests, then the new ones."""
    earlier: list[str] = []
    for line in prompt.splitlines():
        if _REQUESTS in line:  # the previous summary, quoted in an update prompt
            earlier = [r for r in line.split(_REQUESTS, 1)[1].split(" | ") if r]
    new = [" ".join(m.split()[:10]) for m in _USER_LINE.findall(prompt)]
    requests = (earlier + new)[-_MAX_REQUESTS:]
    return (
        f"## Goal\nHelp the user plan a trip.\n## Progress\n{len(new)} more user requests "
        f"answered.\n## Critical Context\n{_REQUESTS}{' | '.join(requests)}"
    )


class DigestSummarizer(BaseChatModel):
    """A STAND-IN summarizer: ``summary_of`` the prompt, so the summary quotes the transcript."""

    model_name: str = "digest-summarizer-stand-in"

    @property
    def _llm_type(self) -> str:
        return "digest-summarizer-stand-in"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = "\n\n".join(_text(m) for m in messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(summary_of(prompt)))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop)
