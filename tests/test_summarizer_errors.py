"""Summarizer errors handled by their kind, with langchain-core's own types (DESIGN 6.9).

A retryable ``ModelError`` (rate limit, timeout, connection, server error) is retried with a
short bounded backoff before the fallback is tried; a prompt over the summarizer's context
(``ContextOverflowError``, or an OpenAI-compatible server's 400 saying so) is summarized again
in smaller chunks, and the summarizer's own counts calibrate the next plan; a summarizer that
is also the fallback model is tried once, not twice.
"""

from __future__ import annotations

import pytest
from conversations import chat, graph_input
from fakes import RecordingSummarizer, SummarizerCall
from langchain_core.exceptions import (
    ContextOverflowError,
    ModelInvalidRequestError,
    ModelRateLimitError,
)
from langchain_core.messages import AIMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatResult
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryStore, _model_calls, create_compaction_graph

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
CONFIG = {"trigger": {"type": "tokens", "value": 2000}, "keep": {"type": "messages", "value": 6}}


@pytest.fixture(autouse=True)
def _short_backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(_model_calls, "RETRY_DELAYS", (0.01, 0.02))
    return slept


def test_the_same_model_as_summarizer_and_fallback_is_tried_once(store: SummaryStore) -> None:
    model = RecordingSummarizer(fail_with=RuntimeError("bad request"))
    graph = create_compaction_graph(CONFIG, model=model, fallback_model=model, store=store)
    report = graph.invoke(graph_input(chat(20)), THREAD)["compaction"]
    assert report.action == "failed"
    assert model.call_count == 1


def test_a_retryable_error_is_retried_before_the_fallback(store: SummaryStore) -> None:
    flaky = RecordingSummarizer(fail_with=ModelRateLimitError("429 slow down"), fail_times=2)
    fallback = RecordingSummarizer(model_name="agent-model")
    graph = create_compaction_graph(CONFIG, model=flaky, fallback_model=fallback, store=store)
    report = graph.invoke(graph_input(chat(20)), THREAD)["compaction"]
    assert report.action == "summarized"
    assert (flaky.call_count, fallback.call_count) == (3, 0)  # two retries, then it answered
    assert store.list_summaries("t")[0].model == "recording-summarizer"


def test_retries_are_bounded_then_the_fallback_answers(store: SummaryStore) -> None:
    down = RecordingSummarizer(fail_with=ModelRateLimitError("429 slow down"))
    fallback = RecordingSummarizer(model_name="agent-model")
    graph = create_compaction_graph(CONFIG, model=down, fallback_model=fallback, store=store)
    report = graph.invoke(graph_input(chat(20)), THREAD)["compaction"]
    assert report.action == "summarized"
    assert (down.call_count, fallback.call_count) == (1 + len(_model_calls.RETRY_DELAYS), 1)


def test_a_non_retryable_model_error_goes_straight_to_the_fallback(store: SummaryStore) -> None:
    refused = RecordingSummarizer(fail_with=ModelInvalidRequestError("400 bad parameter"))
    fallback = RecordingSummarizer(model_name="agent-model")
    graph = create_compaction_graph(CONFIG, model=refused, fallback_model=fallback, store=store)
    assert graph.invoke(graph_input(chat(20)), THREAD)["compaction"].action == "summarized"
    assert (refused.call_count, fallback.call_count) == (1, 1)


class SmallWindowSummarizer(RecordingSummarizer):
    """Counts tokens ``scale`` times our estimate and refuses prompts over ``window``,
    saying so as llama-cpp-python's OpenAI-compatible server does (a 400)."""

    window: int = 1500
    scale: float = 2.5
    as_bad_request: bool = True

    def _answer(self, call: SummarizerCall) -> ChatResult:
        counted = int(count_tokens_approximately(list(call.messages)) * self.scale)
        if counted + 100 > self.window:
            message = (
                f"This model's maximum context length is {self.window} tokens. However, you "
                f"requested {counted + 100} tokens ({counted} in the messages, 100 in the "
                "completion). Please reduce the length of the messages or completion."
            )
            if self.as_bad_request:
                raise ModelInvalidRequestError(message)
            raise ContextOverflowError(message)
        result = super()._answer(call)
        reply = result.generations[0].message
        assert isinstance(reply, AIMessage) and reply.usage_metadata is not None
        reply.usage_metadata["input_tokens"] = counted
        return result


@pytest.mark.parametrize("as_bad_request", [True, False], ids=["server-400", "overflow-error"])
def test_a_prompt_over_the_summarizers_window_is_summarized_in_smaller_chunks(
    store: SummaryStore, as_bad_request: bool
) -> None:
    small = SmallWindowSummarizer(as_bad_request=as_bad_request)
    config = {**CONFIG, "max_summary_tokens": 100}  # the default trim: 4,000 tokens per call
    graph = create_compaction_graph(config, model=small, store=store)
    messages = chat(20)
    report = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert report.action == "summarized"
    refused = [c for c in small.calls if "SUMMARY" not in c.prompt or c.index == 1]
    assert refused and small.call_count > 2  # refused once, then several smaller calls
    seen = "\n".join(call.transcript for call in small.calls[1:])
    assert all(str(m.content)[:18] in seen for m in messages[1 : 1 + report.summarized_messages])
    # calibrated: the next compaction plans calls the summarizer takes, none refused
    before = small.call_count
    messages = messages + chat(20, system=False, prefix="late")
    report = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert report.action == "summarized" and report.summary_version == 2
    assert report.summary_calls == small.call_count - before  # every call answered
