"""Tidying a summary model's reply (``summary.tidy``): what the demo's 135M summarizer leaves.

SmolLM2-135M behind llama.cpp's server echoes the prompt's ``</conversation>``, writes a section
twice, and runs into ``max_tokens`` mid-sentence (the server says ``finish_reason: "length"``).
The stored summary has none of that: the prompt's own tags are stripped at the edges (never a
tag the summary writes in its text), an exact repeated section is dropped, and a reply the
provider stopped at the cap ends at its last complete sentence, in any script, and counts as
``summary_cut``.
"""

# ruff: noqa: RUF001 (Chinese punctuation in the replies)
from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterator
from typing import Any, cast

import pytest
from conversations import chat, graph_input
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph
from langgraph_compaction.config.prompts import DEFAULT_SUMMARY_PROMPT, DEFAULT_UPDATE_PROMPT
from langgraph_compaction.summary.tidy import (
    drop_repeated_sections,
    prompt_tags,
    stopped_at_max_tokens,
    strip_delimiters,
    tidy_reply,
    trim_to_sentence,
)

SUMMARY_TAGS = prompt_tags(DEFAULT_SUMMARY_PROMPT)
UPDATE_TAGS = prompt_tags(DEFAULT_UPDATE_PROMPT)

GOAL = (
    "## Goal\n"
    "The user wants the nightly export of shop-etl to finish again: "
    "etl/export_orders.py fails at 03:00 UTC with KeyError: 'SEK'."
)
PROGRESS = (
    "## Progress\n"
    "The assistant read etl/currency.py and found that RATES has no SEK entry. "
    "The test tests/test_currency.py::test_to_eur_sek fails the same way."
)
NEXT = "## Next Steps\nAdd SEK to RATES and run the export for 2026-11-30 again."

SMOLLM_LEAKED_TAG = f"{GOAL}\n\n{PROGRESS}\n\n{NEXT}\n</conversation>"
"""A reply as SmolLM2 writes it: the sections, then the transcript's closing tag."""
SMOLLM_REPEATED = f"{GOAL}\n\n{PROGRESS}\n\n{GOAL}\n\n{PROGRESS}\n\n{NEXT}"
"""SmolLM2 loops: Goal and Progress come twice, word for word."""
SMOLLM_CUT = f"{GOAL}\n\n{PROGRESS}\n\n## Next Steps\nAdd SEK to RATES and run the export for"
"""The server stopped the reply at ``max_tokens`` in the middle of a sentence."""
CHINESE_CUT = (
    "## 目标\n用户希望修复 shop-etl 的夜间导出：etl/export_orders.py 在 03:00 UTC 因 "
    "KeyError: 'SEK' 失败。\n\n## 进展\n助手发现 RATES 中没有 SEK。测试 test_to_eur_sek 也因此失败"
    "，下一步是把 SEK 加入"
)


# -- the prompt's delimiters -------------------------------------------------------------------


def test_the_prompts_tags_are_those_of_the_prompt_used() -> None:
    assert {"conversation"} == SUMMARY_TAGS
    assert {"conversation", "summary"} == UPDATE_TAGS
    assert prompt_tags("<transcript>\n{messages}\n</transcript>\nSummarize it.") == {"transcript"}
    # A template without {messages} gets the transcript wrapped in <conversation> by us.
    assert prompt_tags("Summarize the conversation.") == {"conversation"}


def test_a_leaked_closing_tag_is_stripped() -> None:
    assert strip_delimiters(SMOLLM_LEAKED_TAG, SUMMARY_TAGS) == f"{GOAL}\n\n{PROGRESS}\n\n{NEXT}"
    touching = "Add SEK to RATES and run the export again.</conversation>"
    assert strip_delimiters(touching, SUMMARY_TAGS) == touching.removesuffix("</conversation>")
    spaced = "Add SEK to RATES and run the export again. </conversation>"
    assert strip_delimiters(spaced, SUMMARY_TAGS) == spaced.removesuffix(" </conversation>")


def test_tags_at_both_edges_go_as_often_as_they_come() -> None:
    wrapped = f"</conversation>\n<summary>\n{GOAL}\n\n{NEXT}\n</summary>\n</conversation>\n"
    assert strip_delimiters(wrapped, UPDATE_TAGS) == f"{GOAL}\n\n{NEXT}"
    with_attributes = f'<summary lang="en">\n{GOAL}\n</SUMMARY>'
    assert strip_delimiters(with_attributes, UPDATE_TAGS) == GOAL


def test_only_the_prompts_own_tags_are_stripped() -> None:
    custom = prompt_tags("<transcript>\n{messages}\n</transcript>\nSummarize it.")
    reply = f"{GOAL}\n</transcript>"
    assert strip_delimiters(reply, custom) == GOAL
    # The built-in prompt's tag is text of the reply when the prompt used another one.
    other = f"{GOAL}\n</conversation>"
    assert strip_delimiters(other, custom) == other
    html = f"{GOAL}\n</div>"
    assert strip_delimiters(html, SUMMARY_TAGS) == html


def test_a_summary_that_writes_a_tag_in_its_text_keeps_it() -> None:
    in_code = (
        "## Key Decisions\nThe prompt wraps the previous summary in `<summary>`, and the "
        "transcript in `</conversation>`"
    )
    assert strip_delimiters(in_code, UPDATE_TAGS) == in_code
    assert tidy_reply(in_code, UPDATE_TAGS, stopped_at_cap=False) == in_code
    in_prose = "The update prompt puts the old summary inside <summary>"
    assert strip_delimiters(in_prose, UPDATE_TAGS) == in_prose
    opening = "<summary> is the tag the update prompt uses for the previous summary."
    assert strip_delimiters(opening, UPDATE_TAGS) == opening
    inside = f"{GOAL}\nThe previous summary went in a <summary> block.\n\n{NEXT}"
    assert strip_delimiters(inside, UPDATE_TAGS) == inside


def test_a_reply_of_tags_alone_is_left_for_the_checks() -> None:
    assert strip_delimiters("</conversation>\n", SUMMARY_TAGS) == "</conversation>"


# -- a repeated section ------------------------------------------------------------------------


def test_an_exact_repeated_section_is_dropped_and_the_first_kept() -> None:
    assert drop_repeated_sections(SMOLLM_REPEATED) == f"{GOAL}\n\n{PROGRESS}\n\n{NEXT}"
    at_the_end = f"{GOAL}\n\n{PROGRESS}\n\n{PROGRESS}\n"
    assert drop_repeated_sections(at_the_end) == f"{GOAL}\n\n{PROGRESS}"


def test_a_section_repeated_with_another_body_is_kept() -> None:
    changed = f"{GOAL}\n\n{PROGRESS}\n\n{PROGRESS} The user confirmed it.\n\n{NEXT}"
    assert drop_repeated_sections(changed) == changed
    once = f"Summary of the export bug.\n\n{GOAL}\n\n{NEXT}"
    assert drop_repeated_sections(once) == once


def test_a_comment_in_a_code_block_is_no_heading() -> None:
    code = "```python\n# Fix\nRATES['SEK'] = 0.087\n```"
    text = f"{GOAL}\n\n## Fix\n{code}\n\n## Notes\n{code}"
    assert drop_repeated_sections(text) == text


# -- a reply cut at max_tokens -----------------------------------------------------------------


def test_a_cut_reply_ends_at_its_last_complete_sentence() -> None:
    assert trim_to_sentence(SMOLLM_CUT) == f"{GOAL}\n\n{PROGRESS}"  # no bodiless heading
    cut_in_a_body = f"{GOAL}\n\n{PROGRESS[:-10]}"
    assert trim_to_sentence(cut_in_a_body) == (
        f"{GOAL}\n\n## Progress\nThe assistant read etl/currency.py and found that RATES has "
        "no SEK entry."
    )


def test_a_complete_line_counts_as_an_end() -> None:
    items = "## Next Steps\n- Add SEK to RATES\n- Rerun the export for 2026-11-30\n- Tell the"
    assert trim_to_sentence(items) == (
        "## Next Steps\n- Add SEK to RATES\n- Rerun the export for 2026-11-30"
    )


def test_chinese_text_cut_mid_sentence_ends_at_its_full_stop() -> None:
    trimmed = trim_to_sentence(CHINESE_CUT)
    assert trimmed.endswith("助手发现 RATES 中没有 SEK。")
    assert trimmed.startswith("## 目标")


@pytest.mark.parametrize(
    ("cut", "ends"),
    [
        ("Der Export schlägt fehl! Der Assistent prüft jetzt die", "fehl!"),
        ("ユーザーはエクスポートを直したい。次に SEK を追加して", "たい。"),
        ("क्या SEK गायब है? उपयोगकर्ता निर्यात ठीक करना चाहता है। अगला कदम", "है।"),
        ("هل SEK مفقود؟ المساعد يضيف", "مفقود؟"),
    ],
    ids=["german", "japanese", "hindi", "arabic"],
)
def test_other_scripts_end_at_their_own_marks(cut: str, ends: str) -> None:
    assert trim_to_sentence(cut).endswith(ends)


def test_a_reply_with_nothing_complete_is_kept_as_it_is() -> None:
    nothing = "The user wants the nightly export of shop-etl to"
    assert trim_to_sentence(nothing) == nothing
    heading_only = "## Goal\nThe user wants the nightly export of shop-etl to"
    assert trim_to_sentence(heading_only) == heading_only
    wrapped = "<summary>\n## Goal\nThe user wants the nightly"
    assert (
        tidy_reply(wrapped, UPDATE_TAGS, stopped_at_cap=True)
        == "## Goal\nThe user wants the nightly"
    )


def test_a_reply_that_was_not_cut_keeps_its_last_line() -> None:
    ends_open = f"{GOAL}\n\n## Next Steps\n- Add SEK to RATES"
    assert tidy_reply(ends_open, SUMMARY_TAGS, stopped_at_cap=False) == ends_open


def test_all_three_at_once() -> None:
    reply = f"{SMOLLM_REPEATED}\n</conversation>\n\n## Goal\nThe user"
    assert tidy_reply(reply, SUMMARY_TAGS, stopped_at_cap=True) == (
        f"{GOAL}\n\n{PROGRESS}\n\n{NEXT}"
    )
    looped = f"{SMOLLM_REPEATED}\n\n{GOAL}\n\n## Progress\nThe assistant read etl/curr"
    assert tidy_reply(looped, SUMMARY_TAGS, stopped_at_cap=True) == (
        f"{GOAL}\n\n{PROGRESS}\n\n{NEXT}"
    )


class _FinishReason(enum.Enum):
    """As Google's SDK reports it: an enum member, not a string."""

    STOP = 1
    MAX_TOKENS = 2


@pytest.mark.parametrize(
    ("metadata", "stopped"),
    [
        ({"finish_reason": "length", "model_name": "smollm2"}, True),  # OpenAI, llama.cpp
        ({"finish_reason": "stop"}, False),
        ({"stop_reason": "max_tokens"}, True),  # Anthropic
        ({"stop_reason": "end_turn"}, False),
        ({"finish_reason": "MAX_TOKENS"}, True),  # Google, as a string
        ({"finish_reason": _FinishReason.MAX_TOKENS}, True),  # ... and as an enum
        ({"finish_reason": _FinishReason.STOP}, False),
        ({"done_reason": "length"}, True),  # Ollama
        ({"stopReason": "max_tokens"}, True),  # Bedrock Converse
        ({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}, True),
        ({}, False),
    ],
)
def test_the_stop_reason_of_each_provider(metadata: dict[str, Any], stopped: bool) -> None:
    assert stopped_at_max_tokens(metadata) is stopped


# -- through the graph -------------------------------------------------------------------------


class CutSummarizer(BaseChatModel):
    """A provider that stops at ``max_tokens``: it answers ``reply`` with ``finish_reason``."""

    reply: str
    finish_reason: str = "length"

    @property
    def _llm_type(self) -> str:
        return "cut-summarizer"

    def _result(self) -> ChatResult:
        message = AIMessage(
            content=self.reply, response_metadata={"finish_reason": self.finish_reason}
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._result()

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._result()


CONFIG: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 2000},
    "keep": {"type": "messages", "value": 6},
}
THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
# Words of the fake conversation (chat()), so the reply passes the not-a-summary check.
ABOUT = "The user asked question 0 to question 9; the assistant gave answer 0 to answer 9."
LEAKED_AND_CUT = f"## Goal\n{ABOUT}\n</conversation>\n\n## Progress\nThe assistant then"


async def _compact(graph: Any, mode: str) -> tuple[CompactionReport, list[dict[str, Any]]]:
    value = graph_input(chat(20))
    modes = ["custom", "values"]

    def collect() -> list[tuple[str, Any]]:
        return list(cast(Iterator[tuple[str, Any]], graph.stream(value, THREAD, stream_mode=modes)))

    if mode == "sync":
        chunks = await asyncio.to_thread(collect)
    else:
        chunks = [c async for c in graph.astream(value, THREAD, stream_mode=modes)]
    report = [data for kind, data in chunks if kind == "values"][-1]["compaction"]
    assert isinstance(report, CompactionReport)
    return report, [data for kind, data in chunks if kind == "custom"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_reply_cut_at_max_tokens_is_stored_at_its_last_sentence(
    store: SummaryStore, mode: str
) -> None:
    graph = create_compaction_graph(CONFIG, model=CutSummarizer(reply=LEAKED_AND_CUT), store=store)
    report, events = await _compact(graph, mode)
    assert report.action == "summarized" and report.summary_cut
    [record] = await store.alist_summaries("t")
    assert record.summary == f"## Goal\n{ABOUT}"
    [compacted] = [e for e in events if e["type"] == "context_compacted"]
    assert compacted["summary_cut"] is True


async def test_a_reply_the_provider_finished_is_stored_whole_but_for_a_leaked_tag(
    store: SummaryStore,
) -> None:
    finished = f"## Goal\n{ABOUT}\n\n## Next Steps\n- Ask question 10\n</conversation>"
    summarizer = CutSummarizer(reply=finished, finish_reason="stop")
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    report, _ = await _compact(graph, "async")
    assert report.action == "summarized" and not report.summary_cut
    [record] = await store.alist_summaries("t")
    assert record.summary == finished.removesuffix("\n</conversation>")
