"""The default counter: langchain-core's figure on ASCII text, additive, media by type."""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from typing import Any

import pytest
from conversations import graph_input
from fakes import RecordingSummarizer
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig
from media_files import b64, data_url, pdf, png, wav

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.content.estimate import (
    JSON_CHARS_PER_TOKEN,
    estimate_tokens,
    looks_like_json,
    message_tokens,
    text_chars,
)
from langgraph_compaction.content.history_scan import HistoryIndex
from langgraph_compaction.content.media import PDF_TOKENS_PER_PAGE
from langgraph_compaction.content.writing_systems import weighted_chars
from langgraph_compaction.summary.chunks import plan_chunks

THREAD: RunnableConfig = {"configurable": {"thread_id": "media"}}

_ASCII = st.text(alphabet=string.printable, max_size=300)
_NAME = st.none() | st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=12)
_ARGS = st.dictionaries(
    st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8),
    _ASCII | st.integers() | st.booleans() | st.lists(st.integers(), max_size=3),
    max_size=4,
)
_TOOL_CALL = st.builds(
    lambda name, args, n: {"name": name, "args": args, "id": f"call_{n}", "type": "tool_call"},
    st.text(alphabet=string.ascii_letters, min_size=1, max_size=10),
    _ARGS,
    st.integers(0, 10_000),
)
_PROSE = _ASCII.filter(lambda text: not looks_like_json(text))
"""ASCII text that is not JSON-shaped (JSON counts at 2.7 characters a token)."""
_TEXT_BLOCK = st.builds(lambda text: {"type": "text", "text": text}, _PROSE)
_TOOL_USE = st.builds(
    lambda n, args: {"type": "tool_use", "id": f"toolu_{n}", "name": "search", "input": args},
    st.integers(0, 999),
    _ARGS,
)
_CONTENT = _PROSE | st.lists(_TEXT_BLOCK | _PROSE | _TOOL_USE, max_size=4)


def _ascii_message(kind: str, content: Any, name: str | None, calls: list[Any]) -> BaseMessage:
    if kind == "human":
        return HumanMessage(content, name=name)
    if kind == "ai":
        return AIMessage(content, name=name, tool_calls=calls)  # with list content: not counted
    if kind == "system":
        return SystemMessage(content, name=name)
    if kind == "developer":
        return SystemMessage(content, additional_kwargs={"__openai_role__": "developer"})
    if kind == "tool":
        return ToolMessage(content, tool_call_id=f"call_{len(calls)}", name=name)
    if kind == "function":
        return FunctionMessage(content=content, name=name or "f")
    return ChatMessage(content=content, role="critic", name=name)


_ASCII_MESSAGES = st.lists(
    st.builds(
        _ascii_message,
        st.sampled_from(["human", "ai", "system", "developer", "tool", "function", "chat"]),
        _CONTENT,
        _NAME,
        st.lists(_TOOL_CALL, max_size=3),
    ),
    max_size=12,
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(_ASCII_MESSAGES)
def test_ascii_prose_and_tool_calls_count_exactly_as_langchain_core(
    messages: list[BaseMessage],
) -> None:
    assert estimate_tokens(messages) == count_tokens_approximately(messages)
    for message in messages:
        assert message_tokens(message) == count_tokens_approximately([message])


@settings(max_examples=100, deadline=None)
@given(st.sampled_from("{["), _ASCII, st.sampled_from("}]"), st.sampled_from(["", " ", "\n"]))
def test_ascii_json_counts_at_2_7_characters_a_token(
    opening: str, inside: str, closing: str, space: str
) -> None:
    text = f"{space}{opening}{inside}{closing}{space}"
    chars = round(len(text) * 4 / JSON_CHARS_PER_TOKEN) + len("user")
    assert message_tokens(HumanMessage(text)) == math.ceil(chars / 4) + 3


_CJK = st.text(alphabet="数据库连接失败请检查配置文件日本語のテキスト", max_size=80)
_OTHER = st.text(alphabet="Привет мир مرحبا بالعالم नमस्ते दुनिया", max_size=80)
_MEDIA = st.sampled_from(
    [
        {"type": "image_url", "image_url": {"url": data_url("image/png", png(640, 480))}},
        {"type": "input_audio", "input_audio": {"data": b64(wav(2)), "format": "wav"}},
        {"type": "file", "base64": b64(pdf(3)), "mime_type": "application/pdf"},
        {"type": "thinking", "thinking": "思考 first", "signature": "sig"},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
    ]
)
_ANY_CONTENT = (_ASCII | _CJK | _OTHER) | st.lists(
    _TEXT_BLOCK | _MEDIA | _CJK | st.builds(lambda t: {"type": "text", "text": t}, _OTHER),
    max_size=4,
)
_ANY_MESSAGES = st.lists(
    st.builds(
        _ascii_message,
        st.sampled_from(["human", "ai", "tool", "system"]),
        _ANY_CONTENT,
        _NAME,
        st.lists(_TOOL_CALL, max_size=2),
    ),
    max_size=12,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_ANY_MESSAGES)
def test_counts_add_up_message_by_message(messages: list[BaseMessage]) -> None:
    """The history scan counts a new history in one call and reads per-message counts from it."""
    assert estimate_tokens(messages) == sum(estimate_tokens([m]) for m in messages)
    for cut in range(len(messages) + 1):
        assert estimate_tokens(messages[:cut]) + estimate_tokens(messages[cut:]) == (
            estimate_tokens(messages)
        )


def test_text_is_weighed_by_script() -> None:
    chinese = "数据库连接失败\uff0c请检查配置文件中的主机名和端口。" * 20
    message = HumanMessage(chinese)
    expected = math.ceil((weighted_chars(chinese) + len("user")) / 4) + 3
    assert estimate_tokens([message]) == expected
    assert estimate_tokens([message]) > count_tokens_approximately([message])
    block = HumanMessage([{"type": "text", "text": chinese}])
    assert estimate_tokens([block]) == expected


def test_a_large_pdf_counts_by_its_pages() -> None:
    document = pdf(12, pad_to=400_000)
    block = {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": data_url("application/pdf", document)},
    }
    message = HumanMessage(["Summarise this report.", block])
    text = math.ceil((len("Summarise this report.") + len("user")) / 4) + 3
    assert estimate_tokens([message]) == text + 12 * PDF_TOKENS_PER_PAGE == 28_810
    assert count_tokens_approximately([message]) > 130_000  # its base64 length


def test_reasoning_blocks_count_their_text_not_their_signature() -> None:
    thinking = "Let me check the order status first. " * 10
    signature = "E" * 4000
    message = AIMessage(
        [
            {"type": "thinking", "thinking": thinking, "signature": signature},
            {"type": "text", "text": "Done."},
        ]
    )
    expected = math.ceil((len(thinking) + len("Done.") + len("assistant")) / 4) + 3
    assert estimate_tokens([message]) == expected
    assert count_tokens_approximately([message]) > expected + 900  # the signature's repr
    summary = AIMessage(
        [{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "ok"}]}]
    )
    assert estimate_tokens([summary]) == math.ceil((2 + len("assistant")) / 4) + 3


def test_an_image_returned_inside_a_tool_result_is_priced_as_an_image() -> None:
    image = png(1024, 768, pad_to=200_000)
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [
            {"type": "text", "text": "screenshot"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": b64(image)},
            },
        ],
    }
    tokens = estimate_tokens([HumanMessage([result])])
    assert tokens < 1_300  # the image's 1,049 by Anthropic's rule, and the wrapper's text
    assert tokens > 1_049
    assert count_tokens_approximately([HumanMessage([result])]) > 60_000


def test_the_history_scan_and_chunk_plans_count_with_it_by_default() -> None:
    document = pdf(12, pad_to=400_000)
    history: Sequence[BaseMessage] = [
        SystemMessage("You read reports."),
        HumanMessage(
            ["Read it.", {"type": "file", "base64": b64(document), "mime_type": "application/pdf"}]
        ),
        AIMessage("It covers Q3."),
    ]
    index = HistoryIndex()
    assert index.additive
    scan = index.scan(("t", "default"), history)
    assert scan.total == estimate_tokens(history) < 30_000
    tokens = [estimate_tokens([m]) for m in history]
    plan = plan_chunks(history, tokens, trim=50_000, max_chunks=2)
    assert [len(chunk) for chunk in plan.chunks] == [3]  # one call: the PDF is not 136,000


def test_a_large_pdf_no_longer_fires_the_trigger_its_base64_would_have(store: SummaryStore) -> None:
    document = pdf(12, pad_to=400_000)
    messages: list[BaseMessage] = [
        SystemMessage("You read reports.", id="sys"),
        HumanMessage(
            [
                {"type": "text", "text": "What does the report say about churn?"},
                {
                    "type": "file",
                    "file": {
                        "filename": "q3.pdf",
                        "file_data": data_url("application/pdf", document),
                    },
                },
            ],
            id="h1",
        ),
        AIMessage("Churn fell to 2.1% in Q3.", id="a1"),
        HumanMessage("And in Q2?", id="h2"),
    ]
    trigger = 60_000
    assert count_tokens_approximately(messages) > 2 * trigger  # the old count fired
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(
        {"trigger": {"type": "tokens", "value": trigger}, "keep": {"type": "messages", "value": 2}},
        model=summarizer,
        store=store,
    )
    result = graph.invoke(graph_input(messages), THREAD)
    report = result["compaction"]
    assert report.action == "passthrough"
    assert report.tokens_before == estimate_tokens(messages) < 30_000
    assert result["llm_input_messages"] == messages
    assert summarizer.call_count == 0


# -- JSON-shaped text ----------------------------------------------------------------------------

TOOL_JSON = (
    '{"reservation_id": "ZFA04Y", "user_id": "mia_li_3668", "origin": "JFK", '
    '"flights": [{"flight_number": "HAT136", "date": "2024-05-20", "price": 1541}], '
    '"passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}]}'
)


@pytest.mark.parametrize(
    ("text", "is_json"),
    [
        (TOOL_JSON, True),
        ("  [1, 2, 3]\n", True),
        ("{}", True),
        ('{"unfinished": ', False),
        ("The order {ORD-1} shipped", False),
        ("[INFO] done", False),
        ("", False),
        ("   ", False),
    ],
)
def test_json_is_told_by_its_two_ends(text: str, is_json: bool) -> None:
    assert looks_like_json(text) is is_json


def test_a_json_tool_result_counts_at_2_7_characters_a_token() -> None:
    # At four a token a JSON tool result was counted a third short (o200k: 2.7 a token).
    result = ToolMessage(TOOL_JSON, tool_call_id="call_1")
    chars = round(len(TOOL_JSON) * 4 / JSON_CHARS_PER_TOKEN) + len("call_1") + len("tool")
    assert message_tokens(result) == math.ceil(chars / 4) + 3
    assert message_tokens(result) > count_tokens_approximately([result]) * 1.4
    assert text_chars(TOOL_JSON) == round(len(TOOL_JSON) / JSON_CHARS_PER_TOKEN * 4)


def test_json_in_another_script_weighs_both() -> None:
    text = '{"地址": "北京市朝阳区", "状态": "已发货"}'
    assert text_chars(text) == round(weighted_chars(text) * 4 / JSON_CHARS_PER_TOKEN)
    block: list[str | dict[Any, Any]] = [{"type": "text", "text": text}]
    assert message_tokens(HumanMessage(block)) == message_tokens(HumanMessage(text))


def test_prose_and_tool_calls_still_count_as_langchain_core() -> None:
    messages = [
        HumanMessage("Where is {my} order? [urgent]"),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"id": "ORD-1"}, "id": "c1"}]),
    ]
    assert estimate_tokens(messages) == count_tokens_approximately(messages)
