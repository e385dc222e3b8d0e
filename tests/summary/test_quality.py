"""`not_a_summary` rejects replies that are plainly not summaries and accepts the rest.

The replies are real: SmolLM2-135M-Instruct's answers to the demo's windows, collected with
``benchmarks/local_summaries.py``, and what this suite's fakes answer.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_compaction.config.prompts import DEFAULT_SUMMARY_PROMPT, DEFAULT_UPDATE_PROMPT
from langgraph_compaction.summary.checks import not_a_summary, salient_terms
from langgraph_compaction.summary.prompts import fill_prompt, render_transcript

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from demo_data import DEMO_TOOLS, DEMO_TURNS

_TOOLS = {tool.name: tool for tool in DEMO_TOOLS}


def demo_messages(first: int, last: int) -> list[BaseMessage]:
    """Turns ``first``..``last`` (1-based) of the demo conversation, tool results included."""
    messages: list[BaseMessage] = []
    for number, turn in enumerate(DEMO_TURNS[first - 1 : last], start=first):
        messages.append(HumanMessage(turn.user, id=f"user-{number}"))
        if turn.tool is not None:
            call = {"name": turn.tool, "args": turn.args, "id": f"call-{number}"}
            messages.append(AIMessage("", tool_calls=[call], id=f"ai-{number}-call"))
            result = str(_TOOLS[turn.tool].invoke(turn.args))
            messages.append(ToolMessage(result, tool_call_id=f"call-{number}", name=turn.tool))
        messages.append(AIMessage(turn.answer, id=f"ai-{number}"))
    return messages


def transcript(first: int, last: int) -> str:
    return render_transcript(demo_messages(first, last))


# SmolLM2-135M-Instruct, the demo's first window (turns 1-10) with the built-in prompt.
READY_TO_CONTINUE = (
    "I'm ready to continue the conversation. Please go ahead and share your next steps, and "
    "I'll provide you with a checkpoint summary that will help me keep track of everything "
    "we've discussed so far."
)
READY_SHORTER = (
    "I'm ready to continue. Please go ahead and share the next steps, and I'll keep track of "
    "everything you do in a single document."
)
# The same window with a shorter prompt: poor, but about the conversation.
POOR_BUT_ABOUT_IT = """### Goal
## Progress

The conversation was a mix of planning and execution. The goal is to create a file with the \
specified format, which includes the date, order number, currency code (EUR/USD), total amount, \
and the order ID.

### Next Steps

The next step is to create a file with the specified format using the `to_eur` function in \
the `etl/currency.py` script, which uses hard-coded numbers and"""
# A later window (turns 24-36): right about the SEK order, wrong about the rest.
HALF_RIGHT = """## Next Steps:
# Next steps to improve the export of orders with a single currency rate

### Goal:
Revert the PR to the original version of the document.

### Progress:
14 batches, no errors, exit 0. The first SEK order arrived on the 14th, which matches the \
first failure."""
# The demo's first window with the short prompt, in a later run: nothing but generic words.
GENERIC = """### Goal
## Progress

The conversation was a success, and we've completed the next step. We're now ready to continue \
with the next steps."""
# An update reply about nothing in the conversation.
ABOUT_SOMETHING_ELSE = """## Goal: Refactor the summary to make it more efficient and faster.

### Progress: 10% improvement in performance, 25% reduction in time.

### Next Steps: 3 days of work ahead."""


@pytest.mark.parametrize("reply", [READY_TO_CONTINUE, READY_SHORTER], ids=["long", "short"])
def test_a_request_for_input_is_not_a_summary(reply: str) -> None:
    reason = not_a_summary(reply, transcript(1, 10))

    assert reason is not None and reason.startswith("it asks for input"), reason


@pytest.mark.parametrize(
    ("reply", "window"),
    [(ABOUT_SOMETHING_ELSE, (24, 36)), (GENERIC, (1, 11))],
    ids=["something-else", "generic"],
)
def test_a_reply_about_none_of_the_conversation_is_not_a_summary(
    reply: str, window: tuple[int, int]
) -> None:
    # The window's SQL says "AND" and its test log "success": neither makes "and" or a
    # "success" in the reply a term of the conversation.
    reason = not_a_summary(reply, transcript(*window))

    assert reason == "it mentions none of the conversation's names, numbers or terms"


def test_an_echo_of_the_instruction_is_not_a_summary() -> None:
    instruction = DEFAULT_SUMMARY_PROMPT.rsplit("</conversation>", 1)[1].strip()
    update = DEFAULT_UPDATE_PROMPT.rsplit("</conversation>", 1)[1].strip()
    # A model that reads the instruction back, headings and all, in its own framing.
    for echo in (instruction, f"Sure! {update}", "## Goal\n" + instruction.split("\n\n")[0]):
        reason = not_a_summary(echo, transcript(1, 10))
        assert reason is not None and reason.startswith("it repeats the instruction"), echo


@pytest.mark.parametrize(
    ("reply", "window"),
    [(POOR_BUT_ABOUT_IT, (1, 10)), (HALF_RIGHT, (24, 36))],
    ids=["poor", "half-right"],
)
def test_a_poor_summary_about_the_conversation_passes(reply: str, window: tuple[int, int]) -> None:
    assert not_a_summary(reply, transcript(*window)) is None


def test_a_good_summary_passes() -> None:
    good = """## Goal
Fix the failing nightly-orders-export job of shop-etl.
## Progress
- The job failed with KeyError: 'SEK' at etl/currency.py:5 in to_eur (order id 884213).
- 2,871 SEK orders in the last 24h; RATES has no SEK since PR #418.
## Next Steps
- Hard-code SEK at 0.088 and make the write atomic."""

    assert not_a_summary(good, transcript(1, 16)) is None


def test_a_summary_quoting_a_request_of_the_conversation_passes() -> None:
    chat = render_transcript(
        [
            HumanMessage("Could you share the deploy/cron.yaml schedule?"),
            AIMessage("It runs at 02:15 UTC."),
        ]
    )
    summary = "Could you share the deploy/cron.yaml schedule, the user asked: 02:15 UTC."

    assert not_a_summary(summary, chat) is None
    assert not_a_summary("Could you share the conversation?", chat) is not None


def test_the_previous_summary_counts_as_what_an_update_covers() -> None:
    previous = "## Goal\nMigrate billing-service to Postgres 16."
    update = "## Goal\nMigrate billing-service to Postgres 16.\n## Progress\n- nothing new"
    chat = render_transcript([HumanMessage("ok"), AIMessage("sure")])

    assert not_a_summary(update, f"{previous}\n\n{chat}") is None


def test_an_empty_reply_and_a_transcript_without_terms() -> None:
    assert not_a_summary("  \n", transcript(1, 2)) == "the reply is empty"
    # Nothing salient to look for: only the other checks can judge.
    assert not_a_summary("They greeted each other.", "user: hi\n\nassistant: hello") is None


def test_salient_terms_keep_identifiers_whole_and_by_part() -> None:
    terms = salient_terms("KeyError: 'SEK' at etl/currency.py:5, order 884213, batch 10 of it")

    assert {"keyerror", "SEK", "etl/currency.py:5", "currency", "884213"} <= terms
    assert not {"at", "10", "of", "it", "py", "sek"} & terms


def _recorded_reply(messages: Sequence[BaseMessage], summary: str | None) -> tuple[str, str]:
    """What RecordingSummarizer answers to the pipeline's prompt, and the text it covers."""
    chat = render_transcript(messages)
    template = DEFAULT_SUMMARY_PROMPT if summary is None else DEFAULT_UPDATE_PROMPT
    prompt = fill_prompt(template, chat, summary)
    reply = RecordingSummarizer().invoke([HumanMessage(prompt)]).text
    return reply, chat if summary is None else f"{summary}\n\n{chat}"


@pytest.mark.parametrize(
    ("messages", "summary"),
    [
        (demo_messages(1, 12), None),
        (demo_messages(13, 20), "SUMMARY#1 [0f0f0f0f]: user: Hi! ... (40 transcript lines)"),
        ([HumanMessage("m0"), AIMessage("r0"), HumanMessage("m1")], None),
        ([HumanMessage("hello there"), AIMessage("hi, how can I help?")], None),
    ],
    ids=["demo", "demo-update", "tiny-ids", "greeting"],
)
def test_the_recording_fakes_default_reply_passes(
    messages: list[BaseMessage], summary: str | None
) -> None:
    reply, covered = _recorded_reply(messages, summary)

    assert not_a_summary(reply, covered) is None, reply


@pytest.mark.parametrize(
    "reply",
    [
        "Por favor, comparte la conversación que quieres resumir.",
        "Estou pronto para ajudar. Por favor, compartilhe a conversa.",
        "Bitte teilen Sie mir das Gespräch mit, das ich zusammenfassen soll.",
        "Pourriez-vous me fournir la conversation ?",
        "Скажите, не могли бы вы прислать переписку? Чем могу помочь?",
        "Отправьте, пожалуйста, текст беседы.",
        "من فضلك، أرسل المحادثة.",
        "मैं तैयार हूँ, बातचीत भेजिए।",
        "請提供對話內容。",
        "我已经准备好了，有什么可以帮您？",  # noqa: RUF001 (Chinese punctuation)
        "準備ができました。会話を送ってください。",
        "무엇을 도와드릴까요? 대화 내용을 알려 주세요.",
    ],
    ids=["es", "pt", "de", "fr", "ru", "ru-after", "ar", "hi", "zh-hant", "zh", "ja", "ko"],
)
def test_a_request_for_input_in_another_language_is_not_a_summary(reply: str) -> None:
    reason = not_a_summary(reply, transcript(1, 10))

    assert reason is not None and reason.startswith("it asks for input"), reason


def test_salient_terms_of_other_scripts() -> None:
    chinese = salient_terms("我们把订单的数据库迁移到新服务器")
    # Bigrams of Han runs, without common words or bigrams across a particle ("单的").
    assert {"订单", "数据", "据库", "迁移", "服务"} <= chinese
    assert not {"我们", "单的", "的数"} & chinese
    # Katakana words whole, hiragana (grammar) never.
    japanese = salient_terms("データベースをバックアップしてから移行します")
    assert {"データベース", "バックアップ", "移行"} <= japanese
    assert not {"して", "から", "ます"} & japanese
    # Words by stem, whatever their ending or article; function words never.
    assert salient_terms("базы данных") == salient_terms("базу данных") == {"баз", "данны"}
    assert salient_terms("الخادم") == salient_terms("خادم")
    assert not salient_terms("который также пожалуйста")
    # A Hindi word keeps its vowel signs (a plain \w splits it into consonants).
    assert salient_terms("डेटाबेस") == {"डेटाब"}


def test_the_demo_conversation_ships_with_the_examples_not_the_package() -> None:
    """The installed package holds no demo data: it lives in ``examples/demo_data.py``."""
    import langgraph_compaction

    package = Path(langgraph_compaction.__file__).parent
    assert [p.name for p in package.rglob("*.py") if "DEMO_TURNS" in p.read_text()] == []
    demo_module = sys.modules[type(DEMO_TURNS[0]).__module__]
    assert Path(demo_module.__file__ or "").parent.name == "examples"
