"""The agent's model that also summarizes, for ``summary_context: "conversation"`` tests.

It binds tools as a provider's chat model does (``bind_tools`` returns ``self.bind(tools=...,
tool_choice=...)``), so each call records the tool schemas and settings it was sent with, and
it tells its summary calls (tagged ``compaction``) from the agent's own calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fakes import FakeToolCallingModel, message_text
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr, SkipValidation

__all__ = ["AgentSummarizerModel", "BoundCall"]


@dataclass(frozen=True)
class BoundCall:
    """One call of `AgentSummarizerModel`: the messages and what was bound, as a provider gets
    them (the tools as the schemas its binding would send, ``tool_choice``, ``max_tokens``)."""

    messages: tuple[BaseMessage, ...]
    kwargs: dict[str, Any]
    tags: tuple[str, ...]

    @property
    def is_summary(self) -> bool:
        """A summary call: the package tags each with ``compaction``."""
        return "compaction" in self.tags


class AgentSummarizerModel(FakeToolCallingModel):
    """The agent's model that also summarizes (``summary_context: "conversation"``).

    ``bind_tools`` binds as a provider's does (``self.bind(tools=..., tool_choice=...)``), so
    every call records the tool schemas and ``tool_choice`` it was sent with. A summary call
    (tagged ``compaction``) is answered with a summary naming what it read; the agent's calls
    go to `FakeToolCallingModel`'s script and echo.
    """

    summary_reply: SkipValidation[AIMessage | None] = None
    """Answer every summary call with this message instead (a tool call, say)."""
    refuse_tool_choice_none: bool = False
    """Raise on ``tool_choice="none"``, as a provider without it would."""

    _bound_calls: list[BoundCall] = PrivateAttr(default_factory=list)

    @property
    def bound_calls(self) -> list[BoundCall]:
        """Every call so far, agent's and summary's, oldest first (a copy)."""
        with self._lock:
            return list(self._bound_calls)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        if tool_choice == "none" and self.refuse_tool_choice_none:
            raise ValueError("tool_choice 'none' is not supported by this provider")
        self._tools = list(tools)
        bound = {"tools": [convert_to_openai_tool(t) for t in tools], **kwargs}
        if tool_choice is not None:
            bound["tool_choice"] = tool_choice
        return self.bind(**bound)

    def _summary(self, messages: list[BaseMessage]) -> ChatResult:
        if self.summary_reply is not None:
            return ChatResult(generations=[ChatGeneration(message=self.summary_reply)])
        # The conversation, without the closing request (a transcript prompt is all read).
        shown = messages[:-1] if len(messages) > 1 else messages
        read = [message_text(m) for m in shown if m.type in ("human", "ai", "tool")]
        words = dict.fromkeys(w for text in read for w in re.findall(r"[\w./-]{4,40}", text))
        text = "Summary of what was read: " + ", ".join(list(words)[:12])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _route(
        self, messages: list[BaseMessage], tags: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatResult:
        call = BoundCall(tuple(messages), dict(kwargs), tuple(tags or ()))
        with self._lock:
            self._bound_calls.append(call)
        return self._summary(messages) if call.is_summary else self._reply(messages)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._route(messages, run_manager.tags if run_manager else None, kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._route(messages, run_manager.tags if run_manager else None, kwargs)
