"""measure: triggers, keep windows, threshold-first passthrough, token counting."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from conversations import chat, graph_input, tool_batch
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import CompactionConfig, SummaryStore, create_compaction_graph
from langgraph_compaction.config.parts import ContextSize, KeepSize
from langgraph_compaction.config.triggers import find_keep_start, fired_triggers, resolve_thresholds
from langgraph_compaction.content.history_scan import HistoryIndex, HistoryScan
from langgraph_compaction.errors import CompactionConfigError

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}


def _sizes(*pairs: tuple[str, float]) -> list[ContextSize]:
    return [ContextSize(type=t, value=v) for t, v in pairs]


def test_every_trigger_type_resolves_against_the_window() -> None:
    thresholds = resolve_thresholds(
        _sizes(
            ("tokens", 1000),
            ("messages", 50),
            ("fraction", 0.5),
            ("token_ratio", 0.25),
            ("remaining_tokens", 300),
            ("messages_to_refine", 7),
        ),
        window=8000,
        budget=7600,
    )
    assert [(t.kind, t.limit) for t in thresholds] == [
        ("tokens", 1000),
        ("messages", 50),
        ("tokens", 4000),
        ("tokens", 2000),
        ("tokens", 7300),
        ("refine", 7),
    ]


@pytest.mark.parametrize(
    ("tokens", "messages", "refine", "fired"),
    [
        (999, 49, 6, ()),
        (1000, 0, 0, ("tokens>=1000",)),
        (0, 50, 0, ("messages>=50",)),
        (0, 0, 7, ("messages_to_refine>=7",)),
        (1000, 50, 7, ("tokens>=1000", "messages>=50", "messages_to_refine>=7")),
    ],
)
def test_triggers_fire_on_any_one(
    tokens: int, messages: int, refine: int, fired: tuple[str, ...]
) -> None:
    thresholds = resolve_thresholds(
        _sizes(("tokens", 1000), ("messages", 50), ("messages_to_refine", 7)), None, None
    )
    assert fired_triggers(thresholds, tokens, messages, refine) == fired


def test_null_trigger_fires_when_the_budget_is_reached() -> None:
    (threshold,) = resolve_thresholds(None, window=10000, budget=9500)
    assert threshold.limit == 9500
    assert fired_triggers([threshold], 9499, 0, 0) == ()
    assert fired_triggers([threshold], 9500, 0, 0) != ()


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"trigger": None}, "trigger is null"),
        ({"trigger": {"type": "fraction", "value": 0.5}}, "trigger fraction"),
        ({"trigger": {"type": "token_ratio", "value": 0.5}}, "trigger token_ratio"),
        ({"trigger": {"type": "remaining_tokens", "value": 100}}, "trigger remaining_tokens"),
        (
            {
                "trigger": {"type": "tokens", "value": 100},
                "keep": {"type": "fraction", "value": 0.2},
            },
            "keep",
        ),
    ],
)
def test_missing_window_fails_when_the_graph_is_built(
    config: dict[str, object], match: str, tmp_path: Path
) -> None:
    store = SummaryStore(f"sqlite:///{tmp_path / 's.db'}")
    with pytest.raises(CompactionConfigError, match=match):
        create_compaction_graph(config, model=RecordingSummarizer(), store=store)


def test_window_comes_from_the_fallback_models_profile(tmp_path: Path) -> None:
    agent_model = RecordingSummarizer(profile={"max_input_tokens": 4000})
    store = SummaryStore(f"sqlite:///{tmp_path / 's.db'}")
    graph = create_compaction_graph(
        {"trigger": {"type": "fraction", "value": 0.5}}, fallback_model=agent_model, store=store
    )
    report = graph.invoke(graph_input(chat(1)), THREAD)["compaction"]
    assert report.gauge.context_window == 4000
    assert report.gauge.budget == 3800  # reserve_ratio 0.05, applied once


def _scan(messages: list[BaseMessage]) -> HistoryScan:
    return HistoryIndex().scan(("ns", "t"), messages)


def test_keep_messages_widens_to_whole_tool_units() -> None:
    messages = chat(2) + tool_batch("b", 3) + [AIMessage("done", id="done")]
    # the last 3 messages start inside the batch: the window widens to its AI message
    start = find_keep_start(messages, _scan(messages), 1, KeepSize(type="messages", value=3), None)
    assert messages[start].id == "b-ai"


def test_keep_tokens_and_fraction() -> None:
    messages = chat(10)
    scan = _scan(messages)
    per_message = scan.token(len(messages) - 1)
    start = find_keep_start(messages, scan, 1, KeepSize(type="tokens", value=per_message * 4), None)
    assert len(messages) - start == 4
    start = find_keep_start(
        messages, scan, 1, KeepSize(type="fraction", value=per_message * 2 / 10000), 10000
    )
    assert len(messages) - start == 2
    # at least the newest unit, however small the keep
    start = find_keep_start(messages, scan, 1, KeepSize(type="tokens", value=1), None)
    assert start == len(messages) - 1


def test_passthrough_touches_neither_store_nor_model(tmp_path: Path) -> None:
    path = tmp_path / "never-created.db"
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(
        {"trigger": {"type": "tokens", "value": 100_000}},
        model=summarizer,
        store=SummaryStore(f"sqlite:///{path}"),
    )
    messages = chat(20)
    result = graph.invoke(graph_input(messages), THREAD)
    assert result["compaction"].action == "passthrough"
    assert result["llm_input_messages"] == messages
    assert summarizer.call_count == 0
    assert not path.exists()


def test_disabled_passes_messages_through_untouched(store: SummaryStore) -> None:
    graph = create_compaction_graph(
        {"enabled": False, "trigger": {"type": "tokens", "value": 10}}, store=store
    )
    messages = chat(30)
    result = graph.invoke(graph_input(messages), THREAD)
    assert result["llm_input_messages"] == messages
    assert result["compaction"].action == "passthrough"


def test_system_prompt_and_tools_count_toward_the_context(store: SummaryStore) -> None:
    messages = chat(3)
    base = count_tokens_approximately(messages)
    tool = {"name": "lookup", "description": "d" * 400, "parameters": {"type": "object"}}
    graph = create_compaction_graph(
        {"trigger": {"type": "tokens", "value": 100_000}},
        model=RecordingSummarizer(),
        store=store,
        tools=[tool],
        system_prompt="s" * 800,
    )
    report = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert report.tokens_before >= base + 200 + 100
    assert report.tokens_before == report.tokens_after


def test_steady_state_counts_only_new_messages(store: SummaryStore) -> None:
    counted: list[int] = []

    def counter(messages: Sequence[BaseMessage]) -> int:
        counted.append(len(messages))
        return count_tokens_approximately(messages)

    graph = create_compaction_graph(
        {"trigger": {"type": "tokens", "value": 1_000_000}},
        model=RecordingSummarizer(),
        store=store,
        token_counter=counter,
    )
    messages = chat(50)
    graph.invoke(graph_input(messages), THREAD)
    first = len(counted)
    # a fresh copy of the same history plus one message, as a checkpointer would load it
    fresh = [m.model_copy(deep=True) for m in messages] + [HumanMessage("next", id="next")]
    graph.invoke(graph_input(fresh), THREAD)
    assert first == len(messages)
    assert len(counted) - first == 1


def test_an_edited_message_is_counted_again(store: SummaryStore) -> None:
    graph = create_compaction_graph(
        {"trigger": {"type": "tokens", "value": 1_000_000}},
        model=RecordingSummarizer(),
        store=store,
    )
    messages = chat(5)
    before = graph.invoke(graph_input(messages), THREAD)["compaction"].tokens_before
    edited = list(messages)
    edited[2] = edited[2].model_copy(update={"content": "x" * 4000})
    after = graph.invoke(graph_input(edited), THREAD)["compaction"].tokens_before
    assert after > before + 900


def test_calibration_from_reported_usage(store: SummaryStore) -> None:
    graph = create_compaction_graph(
        CompactionConfig(trigger=ContextSize(type="tokens", value=1_000_000)),
        model=RecordingSummarizer(),
        store=store,
    )
    messages = chat(5)
    estimate = graph.invoke(graph_input(messages), THREAD)["compaction"].tokens_after
    reply = AIMessage(
        "reply",
        id="r",
        usage_metadata={"input_tokens": estimate * 2, "output_tokens": 5, "total_tokens": 0},
    )
    after = graph.invoke(graph_input([*messages, reply]), THREAD)["compaction"]
    raw = estimate + count_tokens_approximately([reply])
    assert after.tokens_before == pytest.approx(raw * 2, abs=2)
