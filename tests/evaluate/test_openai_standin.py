"""The OpenAI stand-in answers a real ``ChatOpenAI`` over HTTP as the real API would."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from _openai_standin import StandIn, openai_standin
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI

from langgraph_compaction.config.prompts import DEFAULT_SUMMARY_PROMPT
from langgraph_compaction.summary.prompts import fill_prompt, render_transcript


@pytest.fixture
def standin() -> Iterator[StandIn]:
    with openai_standin() as running:
        yield running


def _model(standin: StandIn, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(base_url=standin.url, api_key="x", model="standin", max_retries=0, **kwargs)


def test_a_plain_invoke_gets_a_chat_completion_with_usage(standin: StandIn) -> None:
    reply = _model(standin).invoke("Reply with OK")

    assert reply.content == "OK"
    assert reply.response_metadata["finish_reason"] == "stop"
    assert reply.response_metadata["model_name"] == "standin"
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] == 1
    assert reply.usage_metadata["total_tokens"] == reply.usage_metadata["input_tokens"] + 1
    assert standin.requests == [
        {
            "model": "standin",
            "stream": False,
            "messages": [{"role": "user", "content": "Reply with OK"}],
        }
    ]


def test_the_agent_answers_with_the_sentence_the_question_is_about(standin: StandIn) -> None:
    history = [
        HumanMessage("Мой номер заказа ORD-5512. The deploy target is staging-eu-2."),
        AIMessage("Noted. I will deploy tonight."),
    ]
    model = _model(standin)

    found = model.invoke([*history, HumanMessage("Question: Which deploy target is it?")])
    unknown = model.invoke([*history, HumanMessage("Question: What colour is the boat?")])

    assert found.content == "The deploy target is staging-eu-2."
    assert unknown.content == "I do not know."


def test_a_json_schema_is_filled(standin: StandIn) -> None:
    schema = {
        "title": "verdict",
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "note": {"type": "string"}},
        "required": ["ok", "note"],
        "additionalProperties": False,
    }

    reply = _model(standin).with_structured_output(schema, method="json_schema").invoke("Be brief.")

    assert reply == {"ok": True, "note": "Be brief."}
    assert standin.requests[0]["response_format"]["json_schema"]["name"] == "verdict"


def test_a_summary_request_gets_the_sections_naming_what_it_read(standin: StandIn) -> None:
    transcript = render_transcript(
        [
            HumanMessage("Fix the crash in src/app.py for order ORD-123."),
            AIMessage("I will patch src/app.py and rerun the tests."),
        ]
    )
    prompt = fill_prompt(DEFAULT_SUMMARY_PROMPT, transcript)

    summary = str(_model(standin).invoke(prompt).content)

    headings = [line for line in summary.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ]
    assert "read 2 messages" in summary
    assert "`src/app.py`" in summary and "`ORD-123`" in summary
    assert "Fix the crash in src/app.py for order ORD-123." in summary


def test_streaming_is_refused_and_other_paths_are_not_found(standin: StandIn) -> None:
    with pytest.raises(openai.BadRequestError, match="streaming"):
        _model(standin, streaming=True).invoke("Reply with OK")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{standin.url}/completions", data=b"{}", timeout=5)
    assert missing.value.code == 404
    missing.value.close()
    with urllib.request.urlopen(f"{standin.url}/models", timeout=5) as listed:
        assert json.load(listed)["data"][0]["id"] == "standin"


def test_fail_when_answers_500(standin: StandIn) -> None:
    standin.fail_when = lambda body: True

    with pytest.raises(openai.InternalServerError):
        _model(standin).invoke("Reply with OK")
    assert len(standin.requests) == 1
