"""The replay through a real compaction graph and SQLite store: figures per call, the
compactions and their evicted spans, the bill, and where each item ends."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from _evaluate_support import support_conversation
from fakes import RecordingSummarizer, SummarizerCall

from langgraph_compaction import CompactionConfig, SummaryStore, create_compaction_graph
from langgraph_compaction.content.estimate import message_tokens
from langgraph_compaction.evaluate.calls import model_call_points
from langgraph_compaction.evaluate.prices import Price, PriceBook
from langgraph_compaction.evaluate.records import Conversation, as_json
from langgraph_compaction.evaluate.replay import replay

RATES = {"input": 1.0, "output": 10.0, "cache_read": 0.1, "cache_write": 1.25}
BOOK = PriceBook(Price("agent", "anthropic", rates=RATES), Price("summ", "none", rates=RATES), "t")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SummaryStore]:
    store = SummaryStore(f"sqlite:///{tmp_path / 'summaries.db'}")
    yield store
    store.close()


def _config(recall: bool = False) -> CompactionConfig:
    return CompactionConfig(
        trigger={"type": "tokens", "value": 700},
        keep={"type": "messages", "value": 6},
        recall={"enabled": recall},
    )


def _names_first_order(call: SummarizerCall) -> str:
    """A summary that keeps only the first order id it read, as a terse model might."""
    first = next(w.strip("?.,:") for w in call.transcript.split() if w.startswith("ORD-"))
    return f"## Goal\nThe customer asked about order {first}.\n## Progress\nLooked it up."


def test_every_call_is_counted_with_and_without_compaction(store: SummaryStore) -> None:
    messages = support_conversation(10)
    summarizer = RecordingSummarizer(reply=_names_first_order)
    graph = create_compaction_graph(_config(), model=summarizer, store=store)
    result = replay(Conversation("c", tuple(messages)), graph, store, BOOK, thread_id="t")

    points = model_call_points(messages)
    assert [c.messages for c in result.calls] == points
    for call in result.calls:
        assert call.tokens_without == sum(message_tokens(m) for m in messages[: call.messages])
        assert call.pair_violations == 0
    assert result.tokens_with < result.tokens_without
    assert result.peak_with < result.peak_without
    # Each compaction evicts the span after the previous one's, and the store agrees.
    assert result.compactions, "the 700-token trigger must compact this conversation"
    stored = store.list_summaries("t")
    assert [c.version for c in result.compactions] == [r.version for r in stored]
    assert [c.end for c in result.compactions] == [r.covered_messages for r in stored]
    starts = [c.start for c in result.compactions]
    assert starts == [0, *[c.end for c in result.compactions[:-1]]]
    summarized = [c for c in result.calls if c.summary_version and c.summary_input_tokens]
    assert len(summarized) == len(stored)
    assert sum(c.summary_input_tokens for c in result.calls) == sum(
        r.input_tokens or 0 for r in stored
    )
    assert all(c.integrity_identifiers for c in summarized)
    assert summarizer.call_count >= len(stored)


def test_the_bill_follows_the_cache_rules(store: SummaryStore) -> None:
    messages = support_conversation(10)
    graph = create_compaction_graph(_config(), model=RecordingSummarizer(), store=store)
    result = replay(Conversation("c", tuple(messages)), graph, store, BOOK, thread_id="t")

    def dollars(tokens: int, read: int, written: int, output: int) -> float:
        plain = tokens - read - written
        return (plain + read * 0.1 + written * 1.25 + output * 10.0) / 1e6

    calls = result.calls
    assert result.bill_without.agent == pytest.approx(
        sum(
            dollars(c.tokens_without, c.cached_without, c.cache_written_without, c.output_tokens)
            for c in calls
        )
    )
    assert result.bill_with.agent == pytest.approx(
        sum(
            dollars(c.tokens_with, c.cached_with, c.cache_written_with, c.output_tokens)
            for c in calls
        )
    )
    summary_in = sum(c.summary_input_tokens for c in calls)
    summary_out = sum(c.summary_output_tokens for c in calls)
    assert result.bill_with.summarizer == pytest.approx((summary_in + summary_out * 10.0) / 1e6)
    assert result.bill_without.summarizer == 0
    # Without compaction the history only grows: once over 1,024 tokens, each call reads
    # everything the previous call sent from the cache.
    for before, after in itertools.pairwise(calls):
        if before.tokens_without >= 1024:
            assert after.cached_without == before.tokens_without


def test_items_end_in_the_input_the_summary_recall_or_lost(tmp_path: Path) -> None:
    messages = support_conversation(10)
    fates: dict[bool, dict[tuple[str, str], str]] = {}
    for recall in (False, True):
        store = SummaryStore(f"sqlite:///{tmp_path / f'{recall}.db'}")
        graph = create_compaction_graph(
            _config(recall), model=RecordingSummarizer(reply=_names_first_order), store=store
        )
        result = replay(
            Conversation("c", tuple(messages)), graph, store, BOOK, thread_id="t", recall=recall
        )
        fates[recall] = {(f.kind, f.text): f.place for f in result.fates}
        store.close()
    off, on = fates[False], fates[True]
    assert off[("identifier", "ORD-942")] == "model input"  # the last turns are kept verbatim
    assert off[("identifier", "ORD-041")] == "summary"  # the ledger keeps what prose dropped
    path = ("identifier", "/var/track/ORD-041.json")
    assert off[path] == "lost"  # beyond the ledger's budget, and no recall
    assert on[path] == "recall"  # found in the evicted messages
    assert not [item for item, place in on.items() if place == "lost"]
    assert on[("artifact", "lookup_order ORD-344")] == "summary"
    assert on[("artifact", "lookup_order ORD-942")] == "model input"


def test_the_json_holds_every_figure_and_no_message(store: SummaryStore) -> None:
    messages = support_conversation(6)
    graph = create_compaction_graph(_config(), model=RecordingSummarizer(), store=store)
    result = replay(Conversation("c", tuple(messages)), graph, store, BOOK, thread_id="t")
    data = as_json(result)
    assert data["totals"]["tokens_with"] == result.tokens_with
    assert data["bill_with"]["total"] == pytest.approx(result.bill_with.total)
    assert data["compactions"][0] == {
        "call": result.compactions[0].call,
        "version": 1,
        "evicted": [0, result.compactions[0].end],
    }
    assert len(data["calls"]) == len(result.calls)
