"""Prices: genai-prices' table offline, a prices file, and the prompt-cache rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_compaction.evaluate.prices import (
    DEFAULT_PRICE_MODEL,
    cached_prefix,
    price_book,
    read_prices,
)
from langgraph_compaction.evaluate.records import EvaluationInputError


def test_the_table_prices_cache_reads_and_writes_offline() -> None:
    # Claude Sonnet 4.5: $3 input, $0.30 cache read, $3.75 cache write, $15 output per million.
    book = price_book("anthropic:claude-sonnet-4-5", None, None)
    cost = book.agent.cost(100_000, read=50_000, written=10_000, output=1_000)
    assert cost == pytest.approx(40_000 * 3e-6 + 50_000 * 0.3e-6 + 10_000 * 3.75e-6 + 1_000 * 15e-6)
    assert book.agent.cache == "anthropic"
    assert "claude-sonnet-4-5" in book.description


def test_a_local_or_unpriced_summarizer_is_priced_as_the_agent() -> None:
    book = price_book(None, "local", "local")
    assert book.agent.label == DEFAULT_PRICE_MODEL
    assert book.summarizer == book.agent
    priced = price_book(None, "openai:gpt-4.1", "openai:gpt-4.1-mini")
    assert (priced.agent.label, priced.summarizer.label) == (
        "openai:gpt-4.1",
        "openai:gpt-4.1-mini",
    )
    assert priced.agent.cache == "openai"
    assert priced.summarizer.cost(1_000_000) < priced.agent.cost(1_000_000)


def test_an_unknown_price_model_is_named() -> None:
    with pytest.raises(EvaluationInputError, match=r"--price-model openai:no-such-model: not in"):
        price_book("openai:no-such-model", None, None)


def test_a_prices_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(
        "agent: {input: 2.0, output: 8.0, cache_read: 0.5, cache: openai, label: house}\n"
        "summarizer: {input: 0.1, output: 0.4}\n"
    )
    book = read_prices(path)
    assert book.agent.cost(1_000_000, read=400_000, output=1_000_000) == pytest.approx(
        0.6 * 2.0 + 0.4 * 0.5 + 8.0
    )
    assert book.agent.cache == "openai" and book.agent.label == "house"
    assert book.summarizer.cache == "none"
    assert book.summarizer.cost(1_000_000, written=0, output=1_000_000) == pytest.approx(0.5)
    assert str(path) in book.description


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("agent: {input: 1}\n", "agent: 'output' (USD per million tokens) is missing"),
        ("agent: {input: -1, output: 1}\n", "agent: 'input' must be a number >= 0"),
        ("agent: {input: 1, output: 1, price: 3}\n", "agent: unknown keys ['price']"),
        ("agent: {input: 1, output: 1, cache: google}\n", "'cache' must be anthropic"),
        ("summarizer: {input: 1, output: 1}\n", "prices need an 'agent' entry"),
        ("agent: [1, 2\n", "cannot read prices"),
    ],
)
def test_a_bad_prices_file_is_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(EvaluationInputError) as raised:
        read_prices(path)
    assert str(raised.value).startswith(str(path)) and message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_anthropic_reads_the_shared_prefix_and_writes_the_rest() -> None:
    tokens = [600, 600, 300]
    assert cached_prefix("anthropic", None, ["a", "b", "c"], tokens) == (0, 1500)
    assert cached_prefix("anthropic", ["a", "b"], ["a", "b", "c"], tokens) == (1200, 300)
    # A shared prefix under 1,024 tokens is not a read; a call under 1,024 is not cached at all.
    assert cached_prefix("anthropic", ["a", "x"], ["a", "b", "c"], tokens) == (0, 1500)
    assert cached_prefix("anthropic", ["a"], ["a", "b"], [300, 300]) == (0, 0)


def test_openai_reads_in_steps_of_128_from_1024_and_writes_nothing() -> None:
    tokens = [700, 400, 300]
    assert cached_prefix("openai", ["a", "b"], ["a", "b", "c"], tokens) == (1024, 0)
    assert cached_prefix("openai", ["a"], ["a", "b", "c"], tokens) == (0, 0)
    assert cached_prefix("none", ["a", "b"], ["a", "b", "c"], tokens) == (0, 0)
