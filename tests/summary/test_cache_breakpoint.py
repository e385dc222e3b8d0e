"""``cache_breakpoint`` (DESIGN 6.12): the summary message carries Anthropic's ``cache_control``.

With it on, the summary's content is one text block marked ``{"type": "ephemeral"}``, so the
request's prefix up to and including the summary (system prompt, tools, summary) is read from
Anthropic's cache on every turn that reuses the summary. The text, the message's other fields
and its token count stay those of the plain form; the summarizer never sees the marker.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest
from _doors import DOORS, MODES, TRIGGER, Door, Mode, build_agent, history, run, thread_config
from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain_core.messages import BaseMessage, HumanMessage, message_to_dict
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_compaction import SummaryStore
from langgraph_compaction.content.messages import SUMMARY_NAME, SUMMARY_PREFIX, make_summary_message
from langgraph_compaction.pipeline.memory import Memory

EPHEMERAL = {"type": "ephemeral"}
SUMMARIES = (
    "用户要求修复 src/app_3.py 中的 ValueError_3 端口 8080 保持不变。",
    "طلب المستخدم إصلاح الخطأ ValueError_3 في الملف src/app_3.py.",
    "Пользователь просит исправить ValueError_3 в src/app_3.py, порт 8080.",
)
NEW_TURNS = (
    "继续 请检查 deploy_9.yaml 的端口",
    "تابع: راجع الملف deploy_9.yaml",
    "Дальше: проверь deploy_9.yaml",
    "继续 再运行一次测试",
    "تابع: شغّل الاختبارات مرة أخرى",
)
"""Turns after the first summary: two reuse it, the third crosses the trigger again."""


def _bytes(message: BaseMessage) -> str:
    return json.dumps(message_to_dict(message), sort_keys=True, ensure_ascii=False)


def _summary_index(messages: list[BaseMessage]) -> int | None:
    for index, message in enumerate(messages):
        if isinstance(message, HumanMessage) and message.name == SUMMARY_NAME:
            return index
    return None


# -- the message -------------------------------------------------------------------------------


@pytest.mark.parametrize("text", SUMMARIES)
@pytest.mark.parametrize("recall_tool", [None, "recall"])
def test_the_marked_summary_is_the_plain_one_with_its_text_in_one_marked_block(
    text: str, recall_tool: str | None
) -> None:
    plain = make_summary_message(text, "row-7", recall_tool)
    marked = make_summary_message(text, "row-7", recall_tool, cache_breakpoint=True)
    assert isinstance(plain.content, str) and plain.content.startswith(SUMMARY_PREFIX)
    assert marked.content == [{"type": "text", "text": plain.content, "cache_control": EPHEMERAL}]
    assert marked.text == plain.content  # byte for byte, recall line included
    assert marked.model_dump(exclude={"content"}) == plain.model_dump(exclude={"content"})
    assert marked.name == SUMMARY_NAME and marked.id == "compaction-summary-row-7"
    assert marked.additional_kwargs == {"hide_from_ui": True, "lc_source": "summarization"}
    counter = Memory().counter
    assert counter([marked]) == counter([plain])
    again = make_summary_message(text, "row-7", recall_tool, cache_breakpoint=True)
    assert _bytes(again) == _bytes(marked)


def test_off_by_default_the_summary_content_stays_a_string() -> None:
    assert make_summary_message(SUMMARIES[0], "r1").content == SUMMARY_PREFIX + SUMMARIES[0]


# -- through the front doors -------------------------------------------------------------------


async def _drive(
    store: SummaryStore, door: Door, mode: Mode, config: dict[str, Any]
) -> tuple[FakeToolCallingModel, RecordingSummarizer, str]:
    """Ten messages (a summary), then one new user turn per run until a second summary."""
    agent_model, summarizer = FakeToolCallingModel(), RecordingSummarizer()
    agent = build_agent(door, agent_model, InMemorySaver(), store, config, model=summarizer)
    thread = f"cache-{door}-{mode}-{config.get('cache_breakpoint', False)}"
    await run(agent, {"messages": history(10)}, thread_config(thread), mode)
    for n, text in enumerate(NEW_TURNS):
        turn = {"messages": [HumanMessage(text, id=f"turn-{n}")]}
        await run(agent, turn, thread_config(thread), mode)
    return agent_model, summarizer, thread


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", DOORS)
async def test_the_model_input_carries_the_marked_summary_the_same_bytes_while_reused(
    store: SummaryStore, door: Door, mode: Mode
) -> None:
    agent_model, summarizer, _ = await _drive(
        store, door, mode, {**TRIGGER, "cache_breakpoint": True}
    )
    prefixes: dict[str, list[list[str]]] = defaultdict(list)
    for sent in agent_model.calls:
        index = _summary_index(sent)
        assert index is not None, [m.type for m in sent]  # every call after the first summary
        summary = sent[index]
        assert isinstance(summary.content, list) and len(summary.content) == 1
        block = summary.content[0]
        assert isinstance(block, dict) and block["cache_control"] == EPHEMERAL
        assert block["text"].startswith(SUMMARY_PREFIX + "SUMMARY#")
        # What Anthropic caches: the whole prefix up to and including the marked block.
        prefixes[str(summary.id)].append([_bytes(m) for m in sent[: index + 1]])
    assert len(prefixes) == 2  # the first summary, then its update
    reused = [calls for calls in prefixes.values() if len(calls) >= 2]
    assert reused, {key: len(calls) for key, calls in prefixes.items()}
    for calls in prefixes.values():
        assert all(prefix == calls[0] for prefix in calls)
    # The summarizer reads the previous summary as text, never a marked block.
    assert summarizer.call_count == 2
    update = summarizer.calls[1]
    assert "SUMMARY#1" in update.prompt
    for call in summarizer.calls:
        for message in call.messages:
            assert "cache_control" not in _bytes(message)
            assert "ephemeral" not in _bytes(message)


@pytest.mark.parametrize("door", ["parent", "middleware"])
async def test_the_flag_changes_the_summary_content_only(store: SummaryStore, door: Door) -> None:
    plain_model, plain_summarizer, _ = await _drive(store, door, "async", dict(TRIGGER))
    marked_model, marked_summarizer, _ = await _drive(
        store, door, "async", {**TRIGGER, "cache_breakpoint": True}
    )
    assert [c.prompt for c in marked_summarizer.calls] == [c.prompt for c in plain_summarizer.calls]
    assert len(marked_model.calls) == len(plain_model.calls)
    for plain_sent, marked_sent in zip(plain_model.calls, marked_model.calls, strict=True):
        index = _summary_index(plain_sent)
        assert index is not None and _summary_index(marked_sent) == index
        assert len(marked_sent) == len(plain_sent)
        plain, marked = plain_sent[index], marked_sent[index]
        assert isinstance(plain.content, str)
        assert marked.content == [
            {"type": "text", "text": plain.content, "cache_control": EPHEMERAL}
        ]
        # Each thread has its own rows, so the ids differ; nothing else does.
        assert marked.model_dump(exclude={"content", "id"}) == plain.model_dump(
            exclude={"content", "id"}
        )
        others = [_bytes(m) for i, m in enumerate(marked_sent) if i != index]
        assert others == [_bytes(m) for i, m in enumerate(plain_sent) if i != index]
