"""Dollars for the replayed calls, under each provider's prompt-cache rules.

Prices come from ``genai-prices`` (pydantic's maintained table, shipped with the package: no
network), which bills cache reads and writes at their own rates, or from ``--prices FILE``.
A replay has one input per call and no provider to ask what it cached, so the cache is
modelled from the inputs themselves (``cached_prefix``):

- ``anthropic``: the agent puts a breakpoint at the end of each call (as Claude Code does);
  the messages a call shares with the previous call of its thread are a cache read, the rest
  is written to the cache. A prefix under 1,024 tokens is not cached. The five-minute lifetime
  is not modelled: reads are an upper bound for threads whose turns are minutes apart.
- ``openai`` (and Google's implicit caching, billed the same way): the shared prefix is read
  from the cache in steps of 128 tokens once it reaches 1,024; nothing is billed for writes.
- ``none``: nothing is cached.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from genai_prices import Usage, calc_price

from langgraph_compaction.evaluate.records import EvaluationInputError

__all__ = [
    "DEFAULT_PRICE_MODEL",
    "CacheRule",
    "Price",
    "PriceBook",
    "cached_prefix",
    "price_book",
    "read_prices",
]

CacheRule = Literal["anthropic", "openai", "none"]
DEFAULT_PRICE_MODEL = "anthropic:claude-sonnet-4-5"
"""What the agent's calls are priced as when no ``--agent-model`` names a priced model."""
MIN_CACHED_TOKENS = 1024
OPENAI_CACHE_STEP = 128
_CACHE_RULES: Mapping[str, CacheRule] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "azure": "openai",
    "google": "openai",
    "google_genai": "openai",
    "google_vertexai": "openai",
    "deepseek": "openai",
}
_GENAI_PROVIDERS = {"google_genai": "google", "google_vertexai": "google", "azure": "azure"}
_RATE_KEYS = ("input", "output", "cache_read", "cache_write")


@dataclass(frozen=True)
class Price:
    """How one model's calls are priced: by the package's table or by per-million rates."""

    label: str
    cache: CacheRule
    model_ref: str | None = None
    provider_id: str | None = None
    rates: Mapping[str, float] | None = None
    """USD per million tokens: input, output, cache_read, cache_write (a file's prices)."""

    def cost(self, input_tokens: int, read: int = 0, written: int = 0, output: int = 0) -> float:
        """Dollars for one call; ``input_tokens`` includes the cached and written ones."""
        if self.rates is not None:
            rates = self.rates
            plain = input_tokens - read - written
            per_token = (
                plain * rates["input"]
                + read * rates.get("cache_read", rates["input"])
                + written * rates.get("cache_write", rates["input"])
                + output * rates["output"]
            )
            return per_token / 1_000_000
        usage = Usage(
            input_tokens=input_tokens,
            cache_read_tokens=read,
            cache_write_tokens=written,
            output_tokens=output,
        )
        model_ref = self.model_ref or self.label
        return float(calc_price(usage, model_ref, provider_id=self.provider_id).total_price)


@dataclass(frozen=True)
class PriceBook:
    """The agent's price, the summarizer's, and a line saying where they came from."""

    agent: Price
    summarizer: Price
    description: str


def _table_price(spec: str, flag: str) -> Price:
    provider, _, name = spec.partition(":")
    provider_id = _GENAI_PROVIDERS.get(provider, provider)
    try:
        calc_price(Usage(input_tokens=1), name, provider_id=provider_id)
    except LookupError:
        raise EvaluationInputError(
            f"{flag} {spec}: not in genai-prices' table; name another model or give "
            "--prices FILE (USD per million tokens)"
        ) from None
    return Price(spec, _CACHE_RULES.get(provider, "none"), name, provider_id)


def _is_priced(spec: str | None) -> bool:
    if not spec or ":" not in spec:
        return False
    provider, _, name = spec.partition(":")
    try:
        calc_price(
            Usage(input_tokens=1), name, provider_id=_GENAI_PROVIDERS.get(provider, provider)
        )
    except LookupError:
        return False
    return True


def price_book(
    price_model: str | None, agent_model: str | None, summarizer: str | None
) -> PriceBook:
    """Prices from genai-prices' table.

    The agent's calls: ``--price-model``, else ``--agent-model`` when the table has it, else
    ``DEFAULT_PRICE_MODEL``; the summary calls: the summarizer when the table has it, else the
    agent's price (a local model is priced as the model it stands in for).
    """
    agent_spec = price_model or DEFAULT_PRICE_MODEL
    if price_model is None and agent_model is not None and _is_priced(agent_model):
        agent_spec = agent_model
    agent = _table_price(agent_spec, "--price-model")
    summary = agent
    if summarizer is not None and _is_priced(summarizer):
        summary = _table_price(summarizer, "--model")
    return PriceBook(
        agent,
        summary,
        f"genai-prices: agent calls as {agent.label} ({agent.cache} cache rules), "
        f"summary calls as {summary.label}",
    )


def read_prices(path: Path) -> PriceBook:
    """``--prices FILE``: YAML or JSON with ``agent`` and optional ``summarizer`` entries.

    Each entry: ``input`` and ``output`` (USD per million tokens), optional ``cache_read`` and
    ``cache_write`` (default: the input price), ``cache`` (anthropic, openai or none; default
    none) and ``label``.

    Raises:
        EvaluationInputError: the file cannot be read or an entry is malformed.
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise EvaluationInputError(f"{path}: cannot read prices: {_first_line(error)}") from None
    if not isinstance(data, dict) or "agent" not in data:
        raise EvaluationInputError(f"{path}: prices need an 'agent' entry (and 'summarizer')")
    agent = _file_price(data["agent"], f"{path}: agent")
    summarizer = (
        _file_price(data["summarizer"], f"{path}: summarizer") if "summarizer" in data else agent
    )
    return PriceBook(agent, summarizer, f"prices from {path}")


def _file_price(entry: Any, where: str) -> Price:
    if not isinstance(entry, dict):
        raise EvaluationInputError(f"{where}: expected a mapping of prices per million tokens")
    unknown = set(entry) - {*_RATE_KEYS, "cache", "label"}
    if unknown:
        raise EvaluationInputError(f"{where}: unknown keys {sorted(unknown)}")
    rates: dict[str, float] = {}
    for key in _RATE_KEYS:
        if key not in entry:
            if key in ("input", "output"):
                raise EvaluationInputError(f"{where}: '{key}' (USD per million tokens) is missing")
            continue
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise EvaluationInputError(f"{where}: '{key}' must be a number >= 0, got {value!r}")
        rates[key] = float(value)
    cache = entry.get("cache", "none")
    if cache not in ("anthropic", "openai", "none"):
        raise EvaluationInputError(f"{where}: 'cache' must be anthropic, openai or none")
    return Price(str(entry.get("label", where.rsplit(": ", 1)[-1])), cache, rates=rates)


def cached_prefix(
    rule: CacheRule, previous: Sequence[str] | None, current: Sequence[str], tokens: Sequence[int]
) -> tuple[int, int]:
    """Tokens of one call read from and written to the cache: (read, written).

    ``previous`` and ``current`` are the two calls' messages as sent (one string each),
    ``tokens`` the current call's tokens per message.
    """
    if rule == "none":
        return 0, 0
    shared = 0
    for before, now in zip(previous or (), current, strict=False):
        if before != now:
            break
        shared += 1
    read = sum(tokens[:shared])
    total = sum(tokens)
    if rule == "openai":
        return (
            read // OPENAI_CACHE_STEP * OPENAI_CACHE_STEP if read >= MIN_CACHED_TOKENS else 0
        ), 0
    if total < MIN_CACHED_TOKENS:
        return 0, 0
    read = read if read >= MIN_CACHED_TOKENS else 0
    return read, total - read


def _first_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:200]
