"""Token counters: the callable type, a thread's calibration, what the model node adds itself.

One history's counts, cached per thread, are ``history_scan``'s; the default estimate is
``estimate``'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool

__all__ = ["CALIBRATION_BOUNDS", "TokenCounter", "calibrated", "count_fixed_tokens"]

TokenCounter = Callable[[Sequence[BaseMessage]], int]
"""Any callable that counts the tokens of a list of messages (LangChain's convention)."""

CALIBRATION_BOUNDS = (0.5, 2.0)


def calibrated(tokens: int, ratio: float | None) -> int:
    """Scale an estimate by a thread's calibration ratio (clamped)."""
    if ratio is None:
        return tokens
    low, high = CALIBRATION_BOUNDS
    return math.ceil(tokens * min(max(ratio, low), high))


def count_fixed_tokens(
    counter: TokenCounter,
    system_prompt: str | None,
    tools: Sequence[BaseTool | dict[str, Any]] | None,
) -> int:
    """Tokens the model node adds itself: a system prompt outside ``messages``, tool schemas."""

    total = counter([SystemMessage(content=system_prompt)]) if system_prompt else 0
    if tools:
        total += count_tokens_approximately([], tools=list(tools))
    return total
