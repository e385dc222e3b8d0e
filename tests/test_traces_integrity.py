"""What survives compaction on real traces (DESIGN 6.13): tau-bench airline, SWE-Gym and LoCoMo
replayed call by call through the graph with a summarizer that names none of the identifiers.
After every new summary, every identifier of the user's messages it covers, and every artifact
that changed or failed something, is in the model input verbatim (the ledger holds what the
prose dropped, within ``ledger_tokens``) unless the row counts it as dropped. Skips without
the shared data.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from conversations import graph_input
from fakes import RecordingSummarizer, SummarizerCall
from langchain_core.messages import AnyMessage, BaseMessage
from traces import (
    concatenate_sessions,
    load_locomo,
    load_swe_gym,
    load_tau_bench_airline,
    model_call_points,
)

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.content.writing_systems import fold_text
from langgraph_compaction.summary.integrity import load_items
from langgraph_compaction.summary.ledger import LEDGER_HEADING, holds


def vague(call: SummarizerCall) -> str:
    """A summary in the conversation's words that names no identifier."""
    words = [w for w in call.transcript.split() if w.isalpha() and w.islower()][:12]
    return "The conversation went on: " + " ".join(words) + "."


def model_input_text(messages: Sequence[AnyMessage]) -> str:
    parts: list[str] = []
    for message in messages:
        parts.append(str(message.text))
        parts.extend(str(call["args"]) for call in getattr(message, "tool_calls", []) or [])
    return fold_text("\n".join(parts))


def replay(
    conversation: list[BaseMessage], trigger_tokens: int, tmp_path: Path, limit: int = 6
) -> tuple[int, int, int]:
    """Replay until ``limit`` summaries: (summaries, user identifiers, artifacts checked)."""
    store = SummaryStore(f"sqlite:///{tmp_path / 'integrity.db'}")
    graph = create_compaction_graph(
        {
            "trigger": {"type": "tokens", "value": trigger_tokens},
            "keep": {"type": "messages", "value": 6},
        },
        model=RecordingSummarizer(reply=vague),
        store=store,
    )
    summaries = users = artifacts = 0
    try:
        for point in model_call_points(conversation):
            result = graph.invoke(
                graph_input(conversation[:point]), {"configurable": {"thread_id": "t"}}
            )
            report = result["compaction"]
            if report.action != "summarized":
                continue
            assert report.integrity is not None
            summaries += 1
            record = store.list_summaries("t")[-1]
            assert record.integrity_items is not None
            trail = load_items(record.integrity_items)
            text = model_input_text(result["llm_input_messages"])
            assert LEDGER_HEADING in text or report.integrity.appended == 0
            missing = [
                i.text for i in trail.identifiers if i.source == "user" and not holds(text, i.text)
            ]
            failed = [
                a.target
                for a in trail.artifacts
                if (a.changes or a.outcome == "error")
                and a.target
                and not holds(text, fold_text(a.target))
            ]
            # What the input lacks was counted as dropped (a full ledger), never lost silently.
            assert len(missing) + len(failed) <= report.integrity.dropped, (missing, failed)
            if report.integrity.dropped == 0:
                assert not missing and not failed
            users += sum(1 for i in trail.identifiers if i.source == "user")
            artifacts += sum(1 for a in trail.artifacts if a.changes or a.outcome == "error")
            if summaries >= limit:
                break
    finally:
        store.close()
    return summaries, users, artifacts


def test_tau_bench_user_identifiers_survive(tmp_path: Path) -> None:
    session = concatenate_sessions(load_tau_bench_airline()[:6], 6)
    summaries, users, artifacts = replay(session, 6000, tmp_path)
    assert summaries >= 3 and users >= 10 and artifacts >= 1


def test_swe_gym_failed_and_writing_artifacts_survive(tmp_path: Path) -> None:
    summaries, _, artifacts = replay(max(load_swe_gym(), key=len), 4000, tmp_path)
    assert summaries >= 2 and artifacts >= 3


def test_locomo_dates_and_names_survive(tmp_path: Path) -> None:
    summaries, users, _ = replay(load_locomo()[0][:300], 3000, tmp_path)
    assert summaries >= 3 and users >= 10
