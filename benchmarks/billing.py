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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PRICES", "Bill", "common_prefix"]

PRICES = {"cache_read": 0.1, "cache_write": 1.25, "summarizer_input": 1.0, "summarizer_output": 5.0}
"""Price per token, relative to the base input price."""


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
    summarizer_input: int = 0
    summarizer_output: int = 0

    @property
    def total(self) -> float:
        """Billed input, in base-input-price tokens."""
        return (
            self.cache_read * PRICES["cache_read"]
            + self.cache_write * PRICES["cache_write"]
            + self.summarizer_input * PRICES["summarizer_input"]
            + self.summarizer_output * PRICES["summarizer_output"]
        )

    @property
    def cached_share(self) -> float:
        """Share of the model-input tokens read from the cache."""
        return self.cache_read / max(self.cache_read + self.cache_write, 1)
