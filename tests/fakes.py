"""Fake chat models shared by every test: a recording summarizer and a scripted agent model.

Like langgraph prebuilt's fake tool-calling model, these live in one helper module so that
each test states only what differs. Both are real ``BaseChatModel`` subclasses, so they run
through LangChain's callback machinery (tags, ``stream_mode="messages"``) exactly as a
provider model would; nothing in the package needs to know it is talking to a fake.

Import them as ``from fakes import RecordingSummarizer`` (pytest puts ``tests/`` on
``sys.path`` because the folder has no ``__init__.py``).

Example:
    ```python
    summarizer = RecordingSummarizer()
    capped = summarizer.bind(max_tokens=256).with_config(tags=["nostream"])
    capped.invoke("<conversation>\\nuser: hi\\n</conversation>")
    assert summarizer.calls[0].max_tokens == 256
    assert "nostream" in summarizer.calls[0].tags
    ```
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolCall,
    UsageMetadata,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr, SkipValidation

__all__ = [
    "FakeToolCallingModel",
    "RecordingSummarizer",
    "SummarizerCall",
    "ai_tool_call",
    "message_text",
]

_TRANSCRIPT_OPEN = "<conversation>"
_TRANSCRIPT_CLOSE = "</conversation>"


def message_text(message: BaseMessage) -> str:
    """Plain text of a message, whether its content is a string or a list of blocks."""
    return message.content if isinstance(message.content, str) else message.text


def ai_tool_call(
    name: str, args: dict[str, Any], call_id: str, *, content: str = "", msg_id: str | None = None
) -> AIMessage:
    """An assistant message making one tool call, for scripting `FakeToolCallingModel`."""
    call = ToolCall(name=name, args=args, id=call_id, type="tool_call")
    return AIMessage(content=content, tool_calls=[call], id=msg_id)


@dataclass(frozen=True)
class SummarizerCall:
    """One call that reached `RecordingSummarizer`, recorded before it succeeds or fails."""

    index: int
    """1-based position of the call, counting failed attempts too."""
    messages: tuple[BaseMessage, ...]
    """The prompt messages exactly as the model received them."""
    max_tokens: int | None
    """The ``max_tokens`` kwarg that reached ``_generate`` (set with ``.bind(max_tokens=N)``)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Every bound or call-time kwarg, ``max_tokens`` included."""
    tags: tuple[str, ...] = ()
    """The run's tags, as LangChain's callback manager saw them (e.g. ``nostream``)."""
    stop: tuple[str, ...] | None = None

    @property
    def prompt(self) -> str:
        """All prompt messages' text, joined by blank lines."""
        return "\n\n".join(message_text(m) for m in self.messages)

    @property
    def transcript(self) -> str:
        """The text between ``<conversation>`` delimiters, or the whole prompt without them."""
        prompt = self.prompt
        start = prompt.find(_TRANSCRIPT_OPEN)
        end = prompt.rfind(_TRANSCRIPT_CLOSE)
        if start == -1 or end <= start:
            return prompt
        return prompt[start + len(_TRANSCRIPT_OPEN) : end].strip("\n")


def _default_summary(call: SummarizerCall) -> str:
    """Deterministic text that changes with the input: call number, digest, head, line count."""
    transcript = call.transcript
    digest = hashlib.sha256(call.prompt.encode()).hexdigest()[:8]
    head = " ".join(transcript.split())[:40]
    lines = len(transcript.splitlines())
    # A few words of the transcript, so the reply is about the conversation, as a summary is.
    words = dict.fromkeys(w.lower() for w in re.findall(r"[A-Za-z0-9_]{5,24}", transcript))
    about = ", ".join(list(words)[:3])
    return f"SUMMARY#{call.index} [{digest}]: {head} ... ({lines} transcript lines; {about})"


class RecordingSummarizer(BaseChatModel):
    """A summarizer that records every call and answers with a deterministic summary.

    Attribute options make it misbehave the ways DESIGN 6.5 counts as failures: raise,
    answer blank, or be slow (to test timeouts and background pre-compaction).
    """

    model_name: str = "recording-summarizer"
    """Reported to the store as the summary's model."""
    fail_with: Exception | None = None
    """Raise this exception instead of answering."""
    fail_times: int | None = None
    """With `fail_with`: fail only the first N calls, then answer. None: fail every call."""
    blank: bool = False
    """Answer with empty text (a failure the pipeline must not store)."""
    delay: float = 0.0
    """Seconds to wait before answering (``time.sleep`` sync, ``asyncio.sleep`` async)."""
    reply: Callable[[SummarizerCall], str] | None = None
    """Custom answer built from the recorded call; default: `SUMMARY#<n> [digest]: ...`."""

    _calls: list[SummarizerCall] = PrivateAttr(default_factory=list)
    # Background pre-compaction calls the model from a worker thread.
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "recording-summarizer"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    @property
    def calls(self) -> list[SummarizerCall]:
        """Every call so far, oldest first (a copy)."""
        with self._lock:
            return list(self._calls)

    @property
    def call_count(self) -> int:
        """How many calls reached the model, failed ones included."""
        with self._lock:
            return len(self._calls)

    def reset(self) -> None:
        """Forget the recorded calls (and so restart `fail_times`)."""
        with self._lock:
            self._calls.clear()

    def _record(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        tags: list[str] | None,
        kwargs: dict[str, Any],
    ) -> SummarizerCall:
        with self._lock:
            max_tokens = kwargs.get("max_tokens")
            call = SummarizerCall(
                index=len(self._calls) + 1,
                messages=tuple(messages),
                max_tokens=int(max_tokens) if max_tokens is not None else None,
                kwargs=dict(kwargs),
                tags=tuple(tags or ()),
                stop=tuple(stop) if stop is not None else None,
            )
            self._calls.append(call)
            return call

    def _answer(self, call: SummarizerCall) -> ChatResult:
        if self.fail_with is not None and (
            self.fail_times is None or call.index <= self.fail_times
        ):
            raise self.fail_with
        text = "" if self.blank else (self.reply or _default_summary)(call)
        tokens_in = count_tokens_approximately(call.messages)
        tokens_out = count_tokens_approximately([AIMessage(content=text)])
        usage = UsageMetadata(
            input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out
        )
        message = AIMessage(
            content=text, id=f"{self.model_name}-{call.index}", usage_metadata=usage
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._record(messages, stop, run_manager.tags if run_manager else None, kwargs)
        if self.delay:
            time.sleep(self.delay)
        return self._answer(call)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._record(messages, stop, run_manager.tags if run_manager else None, kwargs)
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._answer(call)


ToolLike: TypeAlias = dict[str, Any] | type | Callable[..., Any] | BaseTool


class FakeToolCallingModel(BaseChatModel):
    """A scripted agent model that records what it was called with.

    It answers with the next item of `script` (an ``AIMessage``, e.g. from `ai_tool_call`,
    or plain text); once the script is used up it echoes the last user message. Replies get
    a deterministic id when they have none, so replayed graphs produce identical histories.
    """

    # SkipValidation: AIMessage's own validator chokes on a str while pydantic tries the union.
    script: SkipValidation[list[AIMessage | str]] = Field(default_factory=list)
    """Replies in order; afterwards, ``"echo #<n>: <last user text>"``."""
    model_name: str = "fake-agent"
    report_usage: bool = False
    """Attach ``usage_metadata`` (input counted over messages and bound tools, like a provider)."""
    usage_scale: float = 1.0
    """Multiply the reported input tokens: a provider tokenizer that disagrees with the estimate."""

    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tools: list[ToolLike] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "fake-tool-calling-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The message list of every call, oldest first (a copy)."""
        with self._lock:
            return [list(messages) for messages in self._calls]

    @property
    def call_count(self) -> int:
        with self._lock:
            return len(self._calls)

    @property
    def last_messages(self) -> list[BaseMessage]:
        """What the latest call received; fails loudly when the model was never called."""
        calls = self.calls
        assert calls, "FakeToolCallingModel was never called"
        return calls[-1]

    @property
    def bound_tools(self) -> list[ToolLike]:
        """The tools last passed to `bind_tools`."""
        return list(self._tools)

    def saw_summary(self, call: int = -1) -> bool:
        """Whether the given call's input held a summary message (a human message ``summary``)."""
        return any(isinstance(m, HumanMessage) and m.name == "summary" for m in self.calls[call])

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Remember the tools (for usage counting) and return this same model."""
        self._tools = list(tools)
        return self

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        with self._lock:
            self._calls.append(list(messages))
            n = len(self._calls)
        if n <= len(self.script):
            item = self.script[n - 1]
            reply = AIMessage(content=item) if isinstance(item, str) else item.model_copy()
        else:
            users = [m for m in messages if isinstance(m, HumanMessage) and m.name != "summary"]
            last = " ".join(message_text(users[-1]).split())[:80] if users else ""
            reply = AIMessage(content=f"echo #{n}: {last}")
        if reply.id is None:
            reply.id = f"{self.model_name}-{n}"
        if self.report_usage and reply.usage_metadata is None:
            tools: list[BaseTool | dict[str, Any]] = [
                dict(convert_to_openai_tool(t)) for t in self._tools
            ]
            tokens_in = round(
                count_tokens_approximately(messages, tools=tools or None) * self.usage_scale
            )
            tokens_out = count_tokens_approximately([reply])
            reply.usage_metadata = UsageMetadata(
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                total_tokens=tokens_in + tokens_out,
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply(messages)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply(messages)
