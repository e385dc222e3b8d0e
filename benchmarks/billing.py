"""What a team pays: model input billed under provider prompt caching, plus the summarizer.

Prices are relative to the provider's base input price per token (1x):

- the tokens a call shares as a common prefix with the previous call of its thread (whole
  messages, as OpenAI receives them) are a cache read at 0.1x;
- the rest of the call's input is written to the cache at 1.25x (the first call of a thread is
  all written);
- summarizer input is billed at 1x (it is never a prefix of the agent's calls), its output at
  5x.

Anthropic's cache (reads 0.1x, five-minute writes 1.25x) works this way once each call puts a
cache breakpoint at its end; OpenAI bills no writes and reads at 0.1x-0.5x, so its figures sit
lower still for the systems that keep a stable prefix.

``BreakpointCache`` bills the other way Anthropic works: explicit breakpoints only, none at the
end of a call. The prefix up to and including the last message that carries ``cache_control``
(the summary, with ``cache_breakpoint``) is a cache read when an earlier call of the thread
wrote that same prefix, else a write; everything after it, and all of a call without a
breakpoint, is uncached input at 1x (Anthropic caches nothing it is not asked to). A prefix under
``MIN_CACHEABLE_TOKENS`` is never cached. The replay has no clock: the five-minute lifetime is
not modelled, so reads are an upper bound for threads whose turns are minutes apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

__all__ = ["MIN_CACHEABLE_TOKENS", "PRICES", "Bill", "BreakpointCache", "common_prefix"]

PRICES = {"cache_read": 0.1, "cache_write": 1.25, "summarizer_input": 1.0, "summarizer_output": 5.0}
"""Price per token, relative to the base input price."""
MIN_CACHEABLE_TOKENS = 1024
"""Anthropic caches no shorter prefix (Claude Sonnet and Opus; some models need more)."""


def common_prefix(previous: Sequence[str] | None, current: Sequence[str]) -> int:
    """How many leading messages ``current`` shares with ``previous`` (rendered messages)."""
    if not previous:
        return 0
    count = 0
    for before, now in zip(previous, current, strict=False):
        if before != now:
            break
        count += 1
    return count


@dataclass
class Bill:
    """Tokens of one system over one workload, by price class."""

    cache_read: int = 0
    cache_write: int = 0
    uncached: int = 0
    """Model input neither read from nor written to the cache: billed at the base price."""
    summarizer_input: int = 0
    summarizer_output: int = 0

    @property
    def total(self) -> float:
        """Billed input, in base-input-price tokens."""
        return (
            self.uncached
            + self.cache_read * PRICES["cache_read"]
            + self.cache_write * PRICES["cache_write"]
            + self.summarizer_input * PRICES["summarizer_input"]
            + self.summarizer_output * PRICES["summarizer_output"]
        )

    @property
    def cached_share(self) -> float:
        """Share of the model-input tokens read from the cache."""
        return self.cache_read / max(self.cache_read + self.cache_write + self.uncached, 1)


def last_breakpoint(messages: Sequence[BaseMessage]) -> int | None:
    """Index of the last message with a content block marked ``cache_control``, if any."""
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index].content
        if isinstance(content, list) and any(
            isinstance(block, dict) and "cache_control" in block for block in content
        ):
            return index
    return None


@dataclass
class BreakpointCache:
    """One thread's prompt cache when only explicit breakpoints ask for caching."""

    written: set[tuple[str, ...]] = field(default_factory=set)

    def bill(
        self,
        bill: Bill,
        messages: Sequence[BaseMessage],
        rendered: Sequence[str],
        count: Callable[[Sequence[BaseMessage]], int],
    ) -> None:
        """Add one call's model input (``rendered``: its messages as sent) to ``bill``."""
        tokens = count(messages)
        marked = last_breakpoint(messages)
        cached = count(messages[: marked + 1]) if marked is not None else 0
        if marked is None or cached < MIN_CACHEABLE_TOKENS:
            bill.uncached += tokens
            return
        prefix = tuple(rendered[: marked + 1])
        if prefix in self.written:
            bill.cache_read += cached
        else:
            bill.cache_write += cached
            self.written.add(prefix)
        bill.uncached += tokens - cached
