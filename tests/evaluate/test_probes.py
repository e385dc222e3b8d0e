"""Probe questions written from the evicted span, answered with and without compaction, graded.

Everything runs for real over HTTP: ``ChatOpenAI`` talks to the OpenAI stand-in
(``tests/_openai_standin.py``), which answers as a model would, and the grades go through
openevals' own ``create_llm_as_judge``.
"""

# ruff: noqa: RUF001 (Chinese punctuation and Cyrillic letters in the conversation)
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from _openai_standin import StandIn, openai_standin
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from langgraph_compaction.evaluate.probes import (
    NoProbesError,
    answer,
    probe_compaction,
    write_questions,
)
from langgraph_compaction.evaluate.records import Compaction
from langgraph_compaction.summary.prompts import render_transcript

LEDGER = "src/billing/ledger.py"
HISTORY: tuple[BaseMessage, ...] = (
    HumanMessage("Hi, I need help with the billing service."),
    HumanMessage("The invoice number is INV-2041 and the payment is due on 2026-03-01."),
    AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": LEDGER}, "id": "c1"}]),
    ToolMessage("ledger line\n" * 900 + "TAIL-MARKER-99", tool_call_id="c1", name="read_file"),
    AIMessage(
        "I chose the ledger module because it holds the totals. "
        "Next I will run the tests in tests/test_ledger.py."
    ),
    HumanMessage("Thanks. Also look at the refund queue."),
    AIMessage("Looking at the refund queue now."),
    HumanMessage("Any news?"),
)
START, END = 1, 5
SUMMARY = HumanMessage(f"Summary of the earlier conversation:\n- read_file on {LEDGER}")
"""A summary that kept the artifact and lost the fact, the decision and the next step."""


@pytest.fixture
def standin() -> Iterator[StandIn]:
    with openai_standin() as running:
        yield running


def _model(url: str) -> ChatOpenAI:
    return ChatOpenAI(base_url=url, api_key="x", model="standin", max_retries=0)


def _compaction(history: tuple[BaseMessage, ...] = HISTORY) -> Compaction:
    return Compaction(
        call=3,
        version=1,
        start=START,
        end=END,
        model_input=(SUMMARY, *history[END:]),
        history=history,
    )


def _agent_requests(standin: StandIn) -> list[dict[str, Any]]:
    return [body for body in standin.requests if "response_format" not in body]


def test_questions_are_written_from_the_evicted_span_only(standin: StandIn) -> None:
    span = HISTORY[START:END]

    questions = write_questions(_model(standin.url), span)

    assert [kind for kind, _, _ in questions] == ["fact", "artifact", "next_step", "decision"]
    shown = render_transcript(span)
    for _, _, expected in questions:
        assert expected in shown, expected
        assert expected not in render_transcript([*HISTORY[:START], *HISTORY[END:]])
    assert dict((k, e) for k, _, e in questions)["artifact"] == LEDGER
    [request] = standin.requests
    assert request["response_format"]["json_schema"]["name"] == "probes"
    prompt = request["messages"][-1]["content"]
    assert "INV-2041" in prompt and "read_file({'path': 'src/billing/ledger.py'})" in prompt
    assert "billing service" not in prompt and "refund queue" not in prompt
    assert "TAIL-MARKER-99" not in prompt and "characters cut]" in prompt


def test_kinds_the_span_cannot_support_are_left_out(standin: StandIn) -> None:
    judge = _model(standin.url)

    only_user = write_questions(judge, [HumanMessage("My locker code is 4471.")])
    nothing = write_questions(judge, [])

    assert only_user == [
        ("fact", "What did the user say about locker code?", "My locker code is 4471.")
    ]
    assert nothing == []
    assert len(standin.requests) == 1


def test_a_weak_judges_repeats_and_malformed_items_are_left_out(standin: StandIn) -> None:
    # What SmolLM2-135M wrote here: one question under three kinds; plus what a schema allows.
    same = {"question": "What is the user's order number?", "expected": "INV-2041"}
    items = [
        {"kind": "fact", **same},
        {"kind": "artifact", **same},
        {"kind": "decision", **same},
        {"kind": "summary", "question": "What happened?", "expected": "things"},
        {"kind": "next_step", "question": " What next? ", "expected": "  "},
        {"kind": "next_step", "question": "", "expected": "tests/b.py"},
        "not an item",
        {"kind": "next_step", "question": " Which tests run next? ", "expected": " tests/a.py "},
    ]
    standin.reply_with = lambda body: json.dumps({"questions": items})

    questions = write_questions(_model(standin.url), HISTORY[START:END])

    assert questions == [
        ("fact", "What is the user's order number?", "INV-2041"),
        ("next_step", "Which tests run next?", "tests/a.py"),
    ]


def test_a_compacted_input_missing_the_fact_answers_wrong_and_the_full_history_right(
    standin: StandIn,
) -> None:
    model = _model(standin.url)

    probes = probe_compaction(_compaction(), judge=model, agent=model)

    by_kind = {probe.kind: probe for probe in probes}
    assert list(by_kind) == ["fact", "artifact", "next_step", "decision"]
    assert all(probe.call == 3 and probe.right_full for probe in probes)
    assert by_kind["fact"].answer_full == HISTORY[1].content
    assert by_kind["fact"].answer_compacted == "I do not know."
    assert not by_kind["fact"].right_compacted
    assert "misses" in by_kind["fact"].comment_compacted
    assert "2041" in by_kind["fact"].comment_full
    # The summary kept the artifact: that one the compacted input still answers.
    assert by_kind["artifact"].right_compacted
    assert by_kind["artifact"].answer_compacted == f"- read_file on {LEDGER}"
    assert not by_kind["next_step"].right_compacted and not by_kind["decision"].right_compacted
    # Each question went to the agent twice: after the summary, and after the whole history.
    contexts = [body["messages"][0]["content"] for body in _agent_requests(standin)]
    assert contexts == [SUMMARY.content, HISTORY[0].content] * 4


def test_an_agent_failing_on_one_context_grades_those_answers_wrong(standin: StandIn) -> None:
    def carries_the_span(body: dict[str, Any]) -> bool:
        agent = "response_format" not in body
        return agent and any("INV-2041" in str(m.get("content")) for m in body["messages"])

    standin.fail_when = carries_the_span
    model = _model(standin.url)

    probes = probe_compaction(_compaction(), judge=model, agent=model)

    assert len(probes) == 4
    for probe in probes:
        assert (probe.answer_full, probe.right_full) == ("", False)
        assert probe.comment_full == (
            "the agent model failed: OpenAIAPIError: Error code: 500 - "
            "the stand-in was told to fail with 500"
        )
    assert [p.right_compacted for p in probes] == [False, True, False, False]
    assert len(_agent_requests(standin)) == 8  # an outage is not a refusal: no second try


def test_a_judge_failing_to_grade_or_to_write_costs_the_probe_not_the_run(
    standin: StandIn,
) -> None:
    model = _model(standin.url)

    def grades(body: dict[str, Any]) -> bool:
        return bool(body.get("response_format", {}).get("json_schema", {}).get("name") == "score")

    standin.fail_when = grades

    graded = probe_compaction(_compaction(), judge=model, agent=model)

    assert len(graded) == 4
    assert all(p.answer_full and not p.right_full for p in graded)
    assert all(p.comment_compacted.startswith("the judge failed: OpenAIAPIError") for p in graded)

    standin.fail_when = lambda body: True
    asked = len(standin.requests)

    with pytest.raises(NoProbesError, match=r"^call \d+: OpenAIAPIError"):
        probe_compaction(_compaction(), judge=model, agent=model)
    assert len(standin.requests) == asked + 1  # the questions only: nothing was answered


def test_an_unreachable_agent_is_graded_wrong(standin: StandIn) -> None:
    nowhere = ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x", model="m", max_retries=0)

    probes = probe_compaction(_compaction(), judge=_model(standin.url), agent=nowhere)

    assert len(probes) == 4
    assert not any(p.right_full or p.right_compacted for p in probes)
    assert {p.comment_compacted for p in probes} == {
        "the agent model failed: OpenAIConnectionError: Connection error."
    }


def test_a_context_ending_with_a_tool_result_is_sent_as_it_is(standin: StandIn) -> None:
    context = HISTORY[START : START + 3]

    said = answer(_model(standin.url), context, "Which path did the read_file call act on?")

    assert said == f'read_file({{"path": "{LEDGER}"}})'
    roles = [m["role"] for m in standin.requests[0]["messages"]]
    assert roles == ["user", "assistant", "tool", "user"]


def test_unanswered_tool_calls_are_sent_as_text(standin: StandIn) -> None:
    context = HISTORY[START : START + 2]

    said = answer(_model(standin.url), context, "Which path did the read_file call act on?")

    [request] = standin.requests
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    assert "tool_calls" not in request["messages"][1]
    written = f"[tool calls: read_file({{'path': '{LEDGER}'}})]"
    assert said == request["messages"][1]["content"] == written


def test_a_model_refusing_tool_traffic_is_asked_again_with_it_as_text(standin: StandIn) -> None:
    standin.fail_when = lambda body: any(m["role"] == "tool" for m in body["messages"])
    standin.fail_status = 400  # Anthropic's "tool_use blocks must define tools" is a 400

    said = answer(_model(standin.url), HISTORY, "What did the user say about the invoice number?")

    assert said == HISTORY[1].content
    first, second = standin.requests
    assert "tool" in [m["role"] for m in first["messages"]]
    assert "tool" not in [m["role"] for m in second["messages"]]
    assert second["messages"][3]["content"].startswith("[tool read_file: ledger line")


def test_a_span_in_several_languages_with_a_nul_and_a_lone_surrogate(standin: StandIn) -> None:
    history: tuple[BaseMessage, ...] = (
        HumanMessage("你好"),
        HumanMessage("我的订单号是 ORD-7781，请在周五之前发货。"),
        HumanMessage("رقم الفاتورة هو INV-3300 وسأدفع غدا."),
        AIMessage(
            "", tool_calls=[{"name": "read_file", "args": {"path": "журнал/отчёт.txt"}, "id": "r1"}]
        ),
        ToolMessage("строка\x00один \ud800 конец", tool_call_id="r1", name="read_file"),
        AIMessage("Сервер db-prod-7 перезагружается ночью, поэтому я решил перенести бэкап."),
        HumanMessage("Спасибо."),
    )
    compaction = Compaction(
        call=1, version=1, start=1, end=6, model_input=(SUMMARY, history[6]), history=history
    )
    model = _model(standin.url)

    probes = probe_compaction(compaction, judge=model, agent=model)

    shown = render_transcript(history[1:6])
    assert [p.kind for p in probes] == ["fact", "artifact", "next_step", "decision"]
    assert all(p.expected in shown and p.right_full for p in probes), probes
    assert not any(p.right_compacted for p in probes)
    assert {p.expected for p in probes} >= {"журнал/отчёт.txt", history[5].content}
    prompt = standin.requests[0]["messages"][-1]["content"]
    assert "строка\ufffdодин \ufffd конец" in prompt
    assert "ORD-7781" in prompt and "INV-3300" in prompt
