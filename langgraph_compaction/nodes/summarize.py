"""summarize-or-reuse: serve a stored summary, or make the next one incrementally.

A new summary covers a prefix of the conversation: the update prompt gets the previous
summary and only the messages evicted since. ``trim_tokens_to_summarize`` bounds one call,
never what is summarized: a long eviction is summarized in consecutive chunks, each an update
of the last. A failure stores nothing; the fallback model is tried once, then the failure
policy and the circuit breaker take over.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import Runnable

from .._config import CompactionConfig
from .._effects import ModelCall, Step, StoreCall
from .._exceptions import SummarizerError
from .._messages import make_summary_message
from .._prompts import fill_prompt, render_transcript
from .._runtime import CallWork, CompactionRuntime
from .._tokens import TokenCounter
from ..store import SummaryRecord, ThreadState
from .partition import Partition, Reuse, _message_key

__all__ = [
    "Outcome",
    "breaker_open",
    "plan_chunks",
    "shorten_message",
    "summarize_step",
]

_CHARS_PER_TOKEN = 4
_MARKER_CHARS = 48  # "\n[... N characters shortened ...]\n"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What summarize-or-reuse decided: the summary to assemble with, if any."""

    action: Literal["reused", "summarized", "failed"]
    record: SummaryRecord | None
    calls: int = 0
    shortened: int = 0
    error: str | None = None


def shorten_message(message: BaseMessage, max_tokens: int) -> BaseMessage:
    """Keep the head and tail of a long message so it fits ``max_tokens`` (approximately)."""
    text = message.text if not isinstance(message.content, str) else message.content
    limit = max(max_tokens * _CHARS_PER_TOKEN - _MARKER_CHARS, 32)
    if len(text) <= limit + _MARKER_CHARS:
        return message
    half = limit // 2
    cut = len(text) - 2 * half
    content = f"{text[:half]}\n[... {cut} characters shortened ...]\n{text[len(text) - half :]}"
    return message.model_copy(update={"content": content})


def plan_chunks(
    messages: Sequence[BaseMessage],
    tokens: Sequence[int],
    trim: int | None,
    max_chunks: int,
    counter: TokenCounter = count_tokens_approximately,
) -> tuple[list[list[BaseMessage]], int]:
    """Split evicted messages into at most ``max_chunks`` calls of at most ``trim`` tokens.

    When everything cannot fit, the longest messages are shortened (head and tail kept) to a
    common cap found by water-filling; none is dropped. Returns the chunks and how many
    messages were shortened.
    """
    if trim is None or not messages:
        return ([list(messages)] if messages else []), 0

    def shortened_to(cap: int) -> list[tuple[BaseMessage, int]]:
        sized = []
        for message, size in zip(messages, tokens, strict=True):
            if size > cap:
                message = shorten_message(message, cap)
                size = counter([message])
            sized.append((message, size))
        return sized

    sized = shortened_to(trim)  # one message never exceeds a call on its own
    if _packed_chunks([t for _, t in sized], trim) > max_chunks:
        low, high = 1, trim
        while low < high:  # the largest cap at which everything fits the calls allowed
            middle = (low + high + 1) // 2
            if _packed_chunks([t for _, t in shortened_to(middle)], trim) <= max_chunks:
                low = middle
            else:
                high = middle - 1
        sized = shortened_to(low)
    shortened = sum(
        1 for (m, _), original in zip(sized, messages, strict=True) if m is not original
    )
    chunks: list[list[BaseMessage]] = []
    used = trim + 1
    for message, size in sized:
        if used + size > trim:
            chunks.append([])
            used = 0
        chunks[-1].append(message)
        used += size
    return chunks, shortened


def _packed_chunks(sizes: Sequence[int], trim: int) -> int:
    """How many calls greedy packing needs (a message over ``trim`` gets a call of its own)."""
    count, used = 0, trim + 1
    for size in sizes:
        if used + size > trim:
            count += 1
            used = 0
        used += size
    return count


def breaker_open(state: ThreadState | None, message_count: int, config: CompactionConfig) -> bool:
    """Half-open circuit breaker: after ``max_failures`` wait ``failure_cooldown_messages``."""
    if state is None or state.consecutive_failures < config.max_failures:
        return False
    since = message_count - (state.messages_at_last_failure or 0)
    return since < config.failure_cooldown_messages


def _bind(model: BaseChatModel, config: CompactionConfig) -> Runnable[Any, BaseMessage]:
    """Cap the output, add the configured parameters, and hide the call from parent streams."""
    parameters = {**config.parameters, "max_tokens": config.max_summary_tokens}
    if _is_compatible_server(model):
        # ChatOpenAI sends the cap as max_completion_tokens, which OpenAI-compatible servers
        # such as llama.cpp's ignore; they read max_tokens from the request body.
        extra_body = dict(parameters.get("extra_body") or {})
        extra_body.setdefault("max_tokens", config.max_summary_tokens)
        parameters["extra_body"] = extra_body
    bound = model.bind(**parameters)
    return bound.with_config(tags=["nostream"], run_name="compaction_summary")


def _is_compatible_server(model: BaseChatModel) -> bool:
    """A ChatOpenAI pointed at a server other than OpenAI's own."""
    base_url = getattr(model, "openai_api_base", None)
    return (
        type(model).__name__ == "ChatOpenAI"
        and isinstance(base_url, str)
        and "api.openai.com" not in base_url
    )


def _model_name(model: BaseChatModel) -> str:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _summary_call(models: list[BaseChatModel], config: CompactionConfig, prompt: str) -> Step[str]:
    """One summary call; on failure the fallback model is tried once for the rest."""
    while True:
        try:
            reply = yield ModelCall(_bind(models[0], config), [HumanMessage(content=prompt)])
            text = reply.text.strip() if isinstance(reply, BaseMessage) else ""
            if not text:
                raise SummarizerError("the summarizer returned blank text")
            return text
        except Exception as exc:
            if len(models) < 2:
                raise SummarizerError(f"{type(exc).__name__}: {exc}") from exc
            models.pop(0)


def summarize_step(runtime: CompactionRuntime, work: CallWork) -> Step[Outcome]:
    """Reuse, or summarize incrementally; every I/O is a yielded effect."""
    plan = work.plan
    if isinstance(plan, Reuse):
        return Outcome("reused", plan.record)
    if not isinstance(plan, Partition):  # nothing more can be evicted: assemble truncates
        return Outcome("reused", work.matching)
    ns, thread_id, config = runtime.namespace, work.thread_id, runtime.config
    existing = yield StoreCall(
        "find_summary", {"thread_id": thread_id, "namespace": ns, "prefix_hash": plan.prefix_hash}
    )
    if existing is not None:  # made by another call or process: no model call
        return Outcome("reused", existing)
    if breaker_open(work.thread_state, len(work.messages), config):
        error = "circuit breaker open: too many consecutive summary failures"
        runtime.emit({"type": "context_compaction_failed", "thread_id": thread_id, "error": error})
        return Outcome("failed", plan.previous, error=error)
    models = [m for m in (runtime.summarizer, runtime.fallback_model) if m is not None]
    evicted = [work.messages[i] for i in plan.evicted]
    chunks, shortened = plan_chunks(
        evicted,
        [work.scan.tokens[i] for i in plan.evicted],
        config.trim_tokens_to_summarize,
        config.max_summary_chunks,
        runtime.counter,
    )
    source_tokens = sum(work.scan.tokens[i] for i in plan.evicted)
    runtime.emit(
        {
            "type": "context_compacting",
            "thread_id": thread_id,
            "namespace": ns,
            "messages": len(evicted),
            "source_tokens": source_tokens,
            "chunks": len(chunks),
            "tokens_before": work.tokens_before,
        }
    )
    text = plan.previous.summary if plan.previous else None
    calls = 0
    try:
        if not models:
            raise SummarizerError("no summarizer model: pass model= or fallback_model=")
        for chunk in chunks:
            template = config.update_prompt if text is not None else config.summary_prompt
            prompt = fill_prompt(template, render_transcript(chunk), text)
            calls += 1
            text = yield from _summary_call(models, config, prompt)
    except SummarizerError as exc:
        state = yield StoreCall(
            "record_failure",
            {
                "thread_id": thread_id,
                "namespace": ns,
                "message_count": len(work.messages),
                "error": str(exc),
            },
        )
        runtime.emit(
            {
                "type": "context_compaction_failed",
                "thread_id": thread_id,
                "error": str(exc),
                "consecutive_failures": state.consecutive_failures,
            }
        )
        return Outcome("failed", plan.previous, calls=calls, error=str(exc))
    assert text is not None
    record = yield StoreCall(
        "add_summary",
        {
            "thread_id": thread_id,
            "namespace": ns,
            "parent_id": plan.previous.id if plan.previous else None,
            "boundary_message_id": plan.boundary_message_id,
            "covered_messages": plan.cutoff,
            "prefix_hash": plan.prefix_hash,
            "summary": text,
            "summary_tokens": runtime.counter([make_summary_message(text, "x")]),
            "source_tokens": source_tokens,
            "kind": "update" if plan.previous else "initial",
            "model": _model_name(models[0]),
            "rescued_message_ids": tuple(_message_key(work.messages, i) for i in plan.rescued),
        },
    )
    if work.thread_state is not None and work.thread_state.consecutive_failures:
        yield StoreCall("reset_failures", {"thread_id": thread_id, "namespace": ns})
    runtime.emit(
        {
            "type": "context_compacted",
            "thread_id": thread_id,
            "namespace": ns,
            "summary_id": record.id,
            "version": record.version,
            "summary_tokens": record.summary_tokens,
            "source_tokens": source_tokens,
            "calls": calls,
            "shortened": shortened,
        }
    )
    return Outcome("summarized", record, calls=calls, shortened=shortened)
