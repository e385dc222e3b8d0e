"""Content blocks through the pipeline: what the summarizer reads, what the model gets back.

The summarizer reads a reference for each media block (kind, mime type, file name or URL,
size) and never its data, nor any reasoning; the messages kept verbatim reach the model byte
for byte, reasoning and signatures included. One case per format LangChain passes on.
"""

from __future__ import annotations

import base64
import io
import wave
from typing import Any

import pytest
from conversations import chat, graph_input
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.content.blocks import tool_call_block
from langgraph_compaction.summary.prompts import render_transcript

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
CONFIG = {"trigger": {"type": "tokens", "value": 1000}, "keep": {"type": "messages", "value": 4}}

Content = list[str | dict[str, Any]]


def _pdf(pages: int) -> bytes:
    """A PDF of ``pages`` page objects, padded with a binary stream (about 5 KB)."""
    objects = b"".join(b"%d 0 obj << /Type /Page >> endobj\n" % (n + 1) for n in range(pages))
    return b"%PDF-1.4\n" + objects + b"stream\n" + bytes(range(256)) * 20 + b"\nendstream\n%%EOF"


def _wav(seconds: float) -> bytes:
    """``seconds`` of 8 kHz mono 8-bit silence, as a WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(1)
        audio.setframerate(8000)
        audio.writeframes(b"\x80" * int(8000 * seconds))
    return buffer.getvalue()


PDF64 = base64.b64encode(_pdf(3)).decode()
WAV64 = base64.b64encode(_wav(0.25)).decode()
CAT_URL = "https://example.com/cat.png"

MEDIA: dict[str, Content] = {
    "openai-chat": [
        {"type": "text", "text": "Look at these."},
        {"type": "image_url", "image_url": {"url": CAT_URL}},
        {
            "type": "file",
            "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF64}"},
        },
        {"type": "input_audio", "input_audio": {"data": WAV64, "format": "wav"}},
    ],
    "openai-responses": [
        {"type": "input_text", "text": "Look at these."},
        {"type": "input_image", "image_url": CAT_URL},
        {
            "type": "input_file",
            "filename": "report.pdf",
            "file_data": f"data:application/pdf;base64,{PDF64}",
        },
    ],
    "anthropic": [
        {"type": "text", "text": "Look at these."},
        {"type": "image", "source": {"type": "url", "url": CAT_URL}},
        {
            "type": "document",
            "title": "report.pdf",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64},
        },
    ],
    "langchain": [
        {"type": "text", "text": "Look at these."},
        {"type": "image", "url": CAT_URL},
        {
            "type": "file",
            "base64": PDF64,
            "mime_type": "application/pdf",
            "extras": {"filename": "report.pdf"},
        },
        {"type": "audio", "base64": WAV64, "mime_type": "audio/wav"},
    ],
    "langchain-v0": [
        {"type": "text", "text": "Look at these."},
        {"type": "image", "source_type": "url", "url": CAT_URL},
        {
            "type": "file",
            "source_type": "base64",
            "data": PDF64,
            "mime_type": "application/pdf",
            "filename": "report.pdf",
        },
        {"type": "audio", "source_type": "base64", "data": WAV64, "mime_type": "audio/wav"},
    ],
}
"""A user message with an image URL, a PDF by file name and (where the format has one) base64
audio, in each format."""


def _graph(store: SummaryStore, summarizer: RecordingSummarizer, **extra: object) -> Any:
    return create_compaction_graph({**CONFIG, **extra}, model=summarizer, store=store)


def _media_history(content: Content) -> list[BaseMessage]:
    messages = chat(1)
    messages.append(HumanMessage(content, id="media"))
    messages.append(AIMessage("A cat, three pages of figures and a moment of silence.", id="seen"))
    return messages + chat(10, system=False, prefix="later-")


def _assert_no_data(text: str) -> None:
    for data in (PDF64, WAV64):
        for start in range(0, len(data) - 64, 512):
            assert data[start : start + 64] not in text


@pytest.mark.parametrize("form", sorted(MEDIA))
def test_the_summarizer_reads_a_reference_for_each_media_block(
    store: SummaryStore, summarizer: RecordingSummarizer, form: str
) -> None:
    messages = _media_history(MEDIA[form])
    result = _graph(store, summarizer).invoke(graph_input(messages), THREAD)
    assert result["compaction"].action == "summarized"
    assert "media" not in [m.id for m in result["llm_input_messages"]]
    # media are priced by type, not by their text: the message may get a summary call of its own
    transcript = "\n\n".join(call.transcript for call in summarizer.calls)
    line = next(part for part in transcript.split("\n\n") if "Look at these." in part)
    assert line.startswith("user: Look at these.\n[image:")
    assert CAT_URL in line
    assert "report.pdf" in line and "application/pdf" in line
    assert ("[audio: audio/wav" in line) is any(
        "audio" in str(block) for block in MEDIA[form] if isinstance(block, dict)
    )
    _assert_no_data("\n".join(call.prompt for call in summarizer.calls))


def test_a_tool_result_with_an_image_is_read_as_a_reference() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8).decode()
    result = ToolMessage(
        [
            {"type": "text", "text": "screenshot taken"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        ],
        tool_call_id="c1",
        name="screenshot",
    )
    text = render_transcript([result])
    assert text.startswith("tool screenshot: screenshot taken\n[image: image/png")
    assert png[:64] not in text and png[-64:] not in text


def test_call_blocks_are_read_as_the_calls_they_are_once() -> None:
    call = {"name": "search", "args": {"q": "cats"}, "id": "c1", "type": "tool_call"}
    both = AIMessage(
        [
            {"type": "text", "text": "Searching."},
            {"type": "tool_use", "id": "c1", "name": "search", "input": {"q": "cats"}},
        ],
        tool_calls=[call],
    )
    assert render_transcript([both]) == "assistant: Searching.\n[tool calls: search({'q': 'cats'})]"
    blocks_only = AIMessage(
        [{"type": "function_call", "call_id": "c2", "name": "fetch", "arguments": '{"u": 1}'}]
    )
    assert render_transcript([blocks_only]) == "assistant: [tool calls: fetch({'u': 1})]"


async def test_recall_indexes_the_references_not_the_data(summary_store: SummaryStore) -> None:
    messages = _media_history(MEDIA["anthropic"])
    graph = _graph(summary_store, RecordingSummarizer(), recall={"enabled": True})
    result = await graph.ainvoke(graph_input(messages), THREAD)
    assert result["compaction"].action == "summarized"
    hits = await summary_store.asearch_messages("t", "look at these")
    assert hits and hits[0].message_id == "media"
    assert CAT_URL in hits[0].text and "report.pdf" in hits[0].text
    _assert_no_data(hits[0].text)


# -- reasoning: never summarized, kept byte for byte ---------------------------------------------

REASONING: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "anthropic-thinking": (
        {
            "content": [
                {"type": "thinking", "thinking": "THINK-{tag}", "signature": "SIG-{tag}=="},
                {"type": "text", "text": "answer {tag}"},
            ]
        },
        ("THINK-", "SIG-"),
    ),
    "anthropic-redacted": (
        {
            "content": [
                {"type": "redacted_thinking", "data": "REDACTED-{tag}"},
                {"type": "text", "text": "answer {tag}"},
            ]
        },
        ("REDACTED-",),
    ),
    "openai-responses": (
        {
            "content": [
                {
                    "type": "reasoning",
                    "id": "rs_{tag}",
                    "summary": [{"type": "summary_text", "text": "SUMMARY-{tag}"}],
                    "encrypted_content": "ENCRYPTED-{tag}",
                },
                {"type": "text", "text": "answer {tag}", "id": "msg_{tag}"},
            ]
        },
        ("rs_", "SUMMARY-", "ENCRYPTED-"),
    ),
    "openai-compatible": (  # DeepSeek, Qwen, vLLM: reasoning beside the content
        {"content": "answer {tag}", "additional_kwargs": {"reasoning_content": "THOUGHT-{tag}"}},
        ("THOUGHT-",),
    ),
    "langchain": (
        {
            "content": [
                {"type": "reasoning", "id": "r_{tag}", "reasoning": "REASONING-{tag}"},
                {"type": "text", "text": "answer {tag}"},
            ]
        },
        ("REASONING-",),
    ),
}
"""Per format: an AI message's fields (``{tag}`` filled in), and what of them is reasoning."""


def _reasoning_message(form: str, tag: str) -> AIMessage:
    fields, _ = REASONING[form]

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("{tag}", tag)
        if isinstance(value, list):
            return [fill(item) for item in value]
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        return value

    return AIMessage(**fill(fields), id=f"{tag}-ai")


@pytest.mark.parametrize("form", sorted(REASONING))
def test_reasoning_is_kept_byte_for_byte_and_never_summarized(
    store: SummaryStore, summarizer: RecordingSummarizer, form: str
) -> None:
    old, new = _reasoning_message(form, "old"), _reasoning_message(form, "new")
    messages = [*chat(1), HumanMessage("first", id="q0"), old, *chat(8, system=False)]
    messages += [HumanMessage("and now?", id="q1"), new, HumanMessage("thanks", id="q2")]
    graph = _graph(store, summarizer)
    result = graph.invoke(graph_input(messages), THREAD)
    assert result["compaction"].action == "summarized"
    output = result["llm_input_messages"]
    kept = next(m for m in output if m.id == "new-ai")
    assert kept.model_dump_json() == new.model_dump_json()
    assert "old-ai" not in [m.id for m in output]
    _, secrets = REASONING[form]
    assert summarizer.calls and "answer old" in summarizer.calls[0].transcript
    for call in summarizer.calls:
        assert not any(secret in call.prompt for secret in secrets)
    # reused on the next call: the same bytes again
    again = graph.invoke(graph_input(messages), THREAD)["llm_input_messages"]
    assert [m.model_dump_json() for m in again] == [m.model_dump_json() for m in output]


@pytest.mark.parametrize(
    "block",
    [
        {
            "type": "document",
            "title": "notes.txt",
            "source": {"type": "text", "media_type": "text/plain", "data": "Budget: 5k EUR."},
        },
        {"type": "text-plain", "text": "Budget: 5k EUR.", "title": "notes.txt"},
        {
            "type": "file",
            "base64": base64.b64encode(b"Budget: 5k EUR.").decode(),
            "mime_type": "text/plain",
            "extras": {"filename": "notes.txt"},
        },
    ],
    ids=["anthropic", "langchain-text-plain", "langchain-base64"],
)
def test_a_text_document_is_read_with_its_text(block: dict[str, Any]) -> None:
    text = render_transcript([HumanMessage(["Here are my notes.", block])])
    assert text == "user: Here are my notes.\n[file: text/plain, notes.txt, 15 B]\nBudget: 5k EUR."


def test_odd_blocks_are_not_calls() -> None:
    for block in ("text", None, {"type": ["tool_use"]}, {"type": "tool_use_x", "id": "c"}):
        assert tool_call_block(block) is None
    assert tool_call_block({"type": "function_call", "call_id": "c", "arguments": "{}"}) == (
        "c",
        None,
        "{}",
    )
