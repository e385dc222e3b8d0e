"""The summary call: binding, errors by kind, and what the summarizer's replies teach us.

Errors are read through langchain-core's ``ModelError`` family. A retryable one (rate limit,
timeout, connection, server error) is retried with a short bounded backoff before the next
model is tried; a call past ``summary_timeout`` moves on to the next model at once (a retry
would only multiply the wait); a prompt over the summarizer's context
(``ContextOverflowError``, or a server's 400 saying so in its own words: OpenAI's, vLLM's,
llama.cpp's, Ollama's) is handed back to the caller as ``PromptTooLong``, to be summarized
again in smaller chunks; anything else moves on to the next model.

Every call runs as ``compaction_summary`` with the tags ``compaction`` and ``nostream`` and
metadata naming the thread and the summary version (:func:`summary_labels`), bound on the
call itself, so callbacks and LangSmith tell it apart from the agent's calls and nothing
leaks into the parent's config. What each answered call reports as usage is summed
(:func:`add_usage`): a model that reports nothing leaves the fields None, never 0. A reply
carries whether the provider stopped it at ``max_tokens``, so that its cut sentence is trimmed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.exceptions import ContextOverflowError, ModelError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.errors import SummarizerError
from langgraph_compaction.pipeline.effects import ModelCall, ModelCallTimeout, Sleep, Step
from langgraph_compaction.pipeline.remembered import Overflow
from langgraph_compaction.pipeline.report import SummaryUsage
from langgraph_compaction.store import storable
from langgraph_compaction.summary.tidy import stopped_at_max_tokens

__all__ = [
    "RETRY_DELAYS",
    "SUMMARY_RUN_NAME",
    "SUMMARY_TAGS",
    "PromptTooLong",
    "SummaryCallFailed",
    "SummaryReply",
    "add_usage",
    "bind_summarizer",
    "distinct_models",
    "is_retryable",
    "keeps_tool_choice",
    "model_name",
    "overflow_of",
    "summary_call",
    "summary_call_messages",
    "summary_labels",
    "usage_columns",
    "usage_of",
]

RETRY_DELAYS = (0.5, 1.5)
"""Pauses before the second and third try of a retryable error (then the next model)."""

SUMMARY_RUN_NAME = "compaction_summary"
"""The run name of every summary call (and of a custom compactor's call)."""
SUMMARY_TAGS = ("compaction", "nostream")
"""The run tags of every summary call: ``nostream`` keeps it out of the parent's streams."""

# The window and the prompt's tokens, as each server words them (first match wins):
#   OpenAI, DeepSeek, older vLLM: "This model's maximum context length is W tokens. However, you
#     requested T tokens (P in the messages, C in the completion)."
#   vLLM: "... maximum context length is W tokens. However, your request has P input tokens.",
#     "... However, you requested C output tokens and your prompt contains at least P input
#     tokens, ...", "'max_tokens' ... is too large: C. This model's maximum context length is W
#     tokens and your request has P input tokens (C > W - P).", "You passed P input tokens and
#     requested C output tokens. However, the model's context length is only W tokens, resulting
#     in a maximum input length of M tokens.", "The decoder prompt (length P) is longer than the
#     maximum model length of W."
#   llama.cpp's server: "request (P tokens) exceeds the available context size (W tokens), try
#     increasing it", "input (P tokens) is larger than the max context size (W tokens)"
#   Ollama: "input length (P tokens) exceeds the model's maximum context length (W tokens)";
#     "the input length exceeds the context length" and "prompt too long; exceeded max context
#     length by N tokens" give no window.
_WINDOW = re.compile(
    r"maximum context length is (\d+)|context window of (\d+)|context length of (\d+)"
    r"|available context size \((\d+) tokens\)|max context size \((\d+) tokens\)"
    r"|context length is only (\d+) tokens|maximum model length of (\d+)"
    r"|maximum context length \((\d+)",
    re.I,
)
_PROMPT = re.compile(
    r"\((\d+) in the messages|\((\d+) in your prompt|requested tokens \((\d+)\)"
    r"|request \((\d+) tokens\) exceeds|input \((\d+) tokens\) is larger"
    r"|request has (\d+) input tokens|contains at least (\d+) input tokens"
    r"|you passed (\d+) input tokens|prompt \(length (\d+)\) is longer"
    r"|input length \((\d+)(?: tokens)?\) exceeds",
    re.I,
)
_OVERFLOW_WORDS = re.compile(
    r"maximum context length|exceeds? (the )?context|context window|context_length_exceeded"
    r"|prompt is too long|too many tokens|input tokens exceed"
    r"|exceeds the available context size|larger than the max context size"
    r"|exceed_context_size_error|context size has been exceeded"
    r"|longer than the maximum model length|maximum input length of"
    r"|prompt too long|exceeded max context length",
    re.I,
)


class PromptTooLong(SummarizerError):
    """The summarizer refused the prompt as longer than its context."""

    def __init__(
        self, message: str, overflow: Overflow, estimate: int, usage: SummaryUsage | None = None
    ) -> None:
        super().__init__(message)
        self.overflow = overflow
        self.estimate = estimate
        """Our own estimate of the refused prompt's tokens."""
        self.usage = usage
        """What earlier models' answers of this call cost (a blank reply is paid for too)."""


class SummaryCallFailed(SummarizerError):
    """Every model failed this summary call; ``usage``: what the ones that answered cost."""

    def __init__(self, message: str, usage: SummaryUsage | None) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass(frozen=True, slots=True)
class SummaryReply:
    """A summary call that answered."""

    text: str
    estimate: int
    """Our estimate of the prompt's tokens."""
    input_tokens: int | None
    """The prompt's tokens as the summarizer reported them (usage), when it did."""
    usage: SummaryUsage
    """What this call cost as reported: this reply and any blank one before it."""
    stopped_at_cap: bool = False
    """The provider says it stopped the reply at ``max_tokens``: its last sentence may be cut
    (``summary.tidy.stopped_at_max_tokens``)."""


def summary_labels(thread_id: str, namespace: str, version: int) -> RunnableConfig:
    """The run config of one summary's calls: its name, tags and metadata (DESIGN 6.12).

    ``version`` is the one the summary will get: the thread's highest stored version + 1.
    """
    return RunnableConfig(
        run_name=SUMMARY_RUN_NAME,
        tags=list(SUMMARY_TAGS),
        metadata={
            "lc_source": "summarization",
            "thread_id": thread_id,
            "namespace": namespace,
            "summary_version": version,
        },
    )


def _count(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def usage_of(reply: object) -> SummaryUsage:
    """What a reply's ``usage_metadata`` reports; a field it leaves out is None."""
    usage = getattr(reply, "usage_metadata", None) or {}
    details = usage.get("input_token_details") or {}
    return SummaryUsage(
        _count(usage.get("input_tokens")),
        _count(usage.get("output_tokens")),
        _count(details.get("cache_read")),
    )


def _plus(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


def add_usage(a: SummaryUsage | None, b: SummaryUsage | None) -> SummaryUsage | None:
    """The sum of two calls' usage; a field stays None only when neither reported it.

    None (no call at all) is the neutral element.
    """
    if a is None or b is None:
        return b if a is None else a
    return SummaryUsage(
        _plus(a.input_tokens, b.input_tokens),
        _plus(a.output_tokens, b.output_tokens),
        _plus(a.cache_read_tokens, b.cache_read_tokens),
    )


def _first_int(pattern: re.Pattern[str], text: str) -> int | None:
    match = pattern.search(text)
    if match is None:
        return None
    return int(next(group for group in match.groups() if group is not None))


def overflow_of(exc: BaseException) -> Overflow | None:
    """The overflow an error reports, or None when it is another kind of failure."""
    text = str(exc)
    status = getattr(exc, "status_code", None)
    reported = isinstance(exc, ModelError) or status == 400
    if not isinstance(exc, ContextOverflowError) and not (
        reported and _OVERFLOW_WORDS.search(text)
    ):
        return None
    return Overflow(_first_int(_WINDOW, text), _first_int(_PROMPT, text))


def is_retryable(exc: BaseException) -> bool:
    """Whether the same request may succeed if sent again shortly."""
    if isinstance(exc, ModelError):
        return bool(exc.is_retryable)
    return isinstance(exc, TimeoutError | ConnectionError)


def distinct_models(*models: BaseChatModel | None) -> list[BaseChatModel]:
    """The models to try in order, each once (the summarizer may be the fallback itself)."""
    seen: list[BaseChatModel] = []
    for model in models:
        if model is not None and all(model is not other for other in seen):
            seen.append(model)
    return seen


def usage_columns(usage: SummaryUsage | None) -> dict[str, int | None]:
    """The usage as the store's columns and the ``context_compacted`` event name it."""
    usage = usage or SummaryUsage()
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
    }


def bind_summarizer(
    model: BaseChatModel,
    config: CompactionConfig,
    labels: RunnableConfig | None = None,
    tools: Sequence[BaseTool | dict[str, Any]] = (),
    model_settings: Mapping[str, Any] | None = None,
) -> Runnable[Any, BaseMessage]:
    """Cap the output, add the configured parameters, and label the call with ``labels``
    (:func:`summary_labels`; None: the run name and tags alone). The ``nostream`` tag hides
    the call from parent streams. ``tools`` (the agent's, for a conversation summary call)
    are bound with tool use switched off where the model takes ``tool_choice="none"``, bound
    as they are where it refuses that or where switching it off would lose the provider's cache
    (``keeps_tool_choice``; a reply with a tool call then fails the summary), and
    ``model_settings`` (what the agent's model node binds, its cache settings say) under the
    configured parameters."""
    base: Runnable[Any, BaseMessage] = model
    if tools and keeps_tool_choice(model):
        base = model.bind_tools(tools)
    elif tools:
        try:
            base = model.bind_tools(tools, tool_choice="none")
        except (NotImplementedError, ValueError, TypeError, KeyError):
            base = model.bind_tools(tools)
    parameters = {
        **(model_settings or {}),
        **config.parameters,
        "max_tokens": config.max_summary_tokens,
    }
    if _is_compatible_server(model):
        # ChatOpenAI sends the cap as max_completion_tokens, which OpenAI-compatible servers
        # such as llama.cpp's ignore; they read max_tokens from the request body.
        extra_body = dict(parameters.get("extra_body") or {})
        extra_body.setdefault("max_tokens", config.max_summary_tokens)
        parameters["extra_body"] = extra_body
    labels = labels or RunnableConfig(run_name=SUMMARY_RUN_NAME, tags=list(SUMMARY_TAGS))
    return base.bind(**parameters).with_config(labels)


_ANTHROPIC_CLASSES = frozenset({"ChatAnthropic", "ChatAnthropicVertex", "ChatAnthropicMessages"})


def keeps_tool_choice(model: BaseChatModel) -> bool:
    """Whether a conversation summary call must leave ``tool_choice`` as the agent sent it.

    Anthropic's cache-invalidation table: "Changes to tool_choice parameter only affect message
    blocks" — switching tool use off would bill the whole conversation as new input, the cost
    this mode exists to avoid. Its models get the tools as the agent binds them, and a reply
    with a tool call fails the summary instead.
    """
    return any(cls.__name__ in _ANTHROPIC_CLASSES for cls in type(model).__mro__)


def _is_compatible_server(model: BaseChatModel) -> bool:
    """A ChatOpenAI pointed at a server other than OpenAI's own."""
    base_url = getattr(model, "openai_api_base", None)
    return (
        type(model).__name__ == "ChatOpenAI"
        and isinstance(base_url, str)
        and "api.openai.com" not in base_url
    )


def model_name(model: BaseChatModel) -> str:
    """The name stored with a summary."""
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def summary_call(
    models: list[BaseChatModel],
    bound: list[Runnable[Any, BaseMessage]],
    prompt: str,
    estimate: int,
    timeout: float | None = None,
) -> Step[SummaryReply]:
    """One summary call of a prompt (one user message): :func:`summary_call_messages`."""
    # A lone surrogate from a message cannot be encoded as UTF-8 for the provider's API (the
    # request would fail on every turn): the prompt carries U+FFFD there, as the store does.
    message: list[BaseMessage] = [HumanMessage(content=storable(prompt))]
    return (yield from summary_call_messages(models, bound, message, estimate, timeout))


def summary_call_messages(
    models: list[BaseChatModel],
    bound: list[Runnable[Any, BaseMessage]],
    messages: Sequence[BaseMessage],
    estimate: int,
    timeout: float | None = None,
) -> Step[SummaryReply]:
    """One summary call of ``messages``: each model in turn, retryable errors retried first.

    ``models`` and ``bound`` (the same models, bound) shrink in place when a model fails for
    good, so the next chunk of the same compaction starts with the model that worked. Each
    attempt gets ``timeout`` seconds (``summary_timeout``); a model past it is not retried.
    A reply that holds a tool call is a failure of that model, as a blank one is.

    Raises:
        PromptTooLong: the current model refused the prompt as too long.
        SummaryCallFailed: every model failed (the last error is named).
    """
    message = list(messages)
    errors: list[str] = []
    spent: SummaryUsage | None = None  # a blank reply was paid for too
    while models:
        for attempt in range(len(RETRY_DELAYS) + 1):
            try:
                reply = yield ModelCall(bound[0], message, timeout)
            except ModelCallTimeout as exc:
                errors.append(f"summary_timeout: {exc}")
                break
            except Exception as exc:
                overflow = overflow_of(exc)
                if overflow is not None:
                    raise PromptTooLong(_describe(exc), overflow, estimate, spent) from exc
                if is_retryable(exc) and attempt < len(RETRY_DELAYS):
                    yield Sleep(RETRY_DELAYS[attempt])
                    continue
                errors.append(_describe(exc))
                break
            used = usage_of(reply)
            spent = add_usage(spent, used)
            text = reply.text.strip() if isinstance(reply, BaseMessage) else ""
            if isinstance(reply, AIMessage) and (reply.tool_calls or reply.invalid_tool_calls):
                # Tools are bound to a conversation summary call: a call is no summary.
                errors.append("the summarizer replied with a tool call, not a summary")
                break
            if not text:
                errors.append("the summarizer returned blank text")
                break
            assert spent is not None
            stopped = stopped_at_max_tokens(getattr(reply, "response_metadata", None) or {})
            return SummaryReply(text, estimate, used.input_tokens or None, spent, stopped)
        models.pop(0)
        del bound[0]
    raise SummaryCallFailed("; then ".join(errors) or "no summarizer model", spent)
