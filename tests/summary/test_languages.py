"""Summaries in any language: the not-a-summary check judges every script as it judges English.

Each conversation below is what a user of that language writes to an agent, and each reply
is what a summarizer answers: a faithful summary, a terse paraphrase that shares only a few
words with the conversation (and no name, number or identifier in Latin letters or digits),
text about something else, and a request for input. Then the pipeline: a Chinese summary is
stored and served through ``create_compaction_graph``, and ``summary_check: "off"`` stores
what the check would reject.
"""

# The conversations are written as their languages write them, with full-width punctuation.
# ruff: noqa: RUF001

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from conversations import graph_input
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import CompactionReport, SummaryStore, create_compaction_graph
from langgraph_compaction.config.prompts import DEFAULT_SUMMARY_PROMPT
from langgraph_compaction.summary.checks import not_a_summary
from langgraph_compaction.summary.prompts import render_transcript

NONE_OF_IT = "it mentions none of the conversation's names, numbers or terms"


@dataclass(frozen=True)
class Case:
    """A conversation in one language and four replies to a request to summarize it."""

    language: str
    turns: tuple[str, ...]
    """User and assistant turns, alternating, the user first."""
    faithful: str
    terse: str
    """A paraphrase in other words and other inflections, without Latin letters or digits."""
    unrelated: str
    request: str

    @property
    def transcript(self) -> str:
        return render_transcript(messages(self.turns))


def messages(turns: tuple[str, ...]) -> list[BaseMessage]:
    return [
        HumanMessage(text, id=f"h{i}") if i % 2 == 0 else AIMessage(text, id=f"a{i}")
        for i, text in enumerate(turns)
    ]


CHINESE = Case(
    "zh",
    (
        "我们要把订单服务的数据库从 MySQL 5.7 迁移到 PostgreSQL 16，周五之前必须完成。",
        "好的。迁移脚本 migrate_orders.py 已经准备好了吗？字符集是 utf8mb4 吗？",
        "是的，字符集是 utf8mb4。脚本在第三批数据时报错：重复的主键，订单号 884213。",
        "这是因为旧表里有两条相同订单号的记录。建议先在测试环境去重，再重新运行脚本。",
        "好，先在测试环境处理。另外，财务报表不能停，迁移要安排在周六凌晨两点。",
    ),
    faithful="""## 目标
把订单服务的数据库从 MySQL 5.7 迁移到 PostgreSQL 16，周五之前完成。
## 进展
- 迁移脚本 migrate_orders.py 在第三批数据报错：重复的主键（订单号 884213）。
- 原因：旧表里有两条相同订单号的记录。
## 下一步
- 先在测试环境去重，再重新运行脚本。
- 迁移安排在周六凌晨两点，财务报表不能停。""",
    terse="用户要迁移订单库，脚本因主键重复失败，准备先去重再跑。",
    unrelated="今天天气很好，我们去公园散步，然后在湖边喝茶聊天。",
    request="请提供需要总结的对话内容，我会为您生成摘要。",
)
JAPANESE = Case(
    "ja",
    (
        "昨日 v2.3.1 をデプロイしてから、ログインできないユーザーがいます。",
        "エラーログを確認しました。"
        "Redis への接続がタイムアウトして、セッションの保存に失敗しています。",
        "Redis の接続数の上限は 500 です。増やすべきですか？",
        "まず接続プールの設定を見直しましょう。max_connections を 200 から 400 に変更します。",
        "わかりました。今夜 22 時に設定を変更して、明日の朝に結果を報告します。",
    ),
    faithful="""## 目標
v2.3.1 のデプロイ後に発生したログイン障害を解決する。
## 進捗
- 原因：Redis への接続がタイムアウトし、セッションの保存に失敗。接続数の上限は 500。
## 次のステップ
- 今夜 22 時に max_connections を 200 から 400 に変更し、明日の朝に結果を報告。""",
    terse="ログインの不具合はセッション保存の失敗が原因。接続プールを見直す予定。",
    unrelated="週末は家族と京都へ旅行に行き、お寺を見て抹茶を飲みました。",
    request="要約する会話を共有してください。",
)
KOREAN = Case(
    "ko",
    (
        "어제부터 결제 API 에서 E1042 오류가 계속 발생하고 있어요.",
        "로그를 보니 환율 테이블이 비어 있어서 원화 금액 계산이 실패하고 있습니다.",
        "환율 업데이트 작업은 매일 새벽 3시에 실행돼요. 어제 실패했나 봐요.",
        "맞습니다. 환율 작업을 다시 실행하고, 실패한 주문 37건은 환불 처리하는 것이 좋겠습니다.",
        "좋아요. 환불은 김민수 팀장님께 승인받을게요.",
    ),
    faithful="""## 목표
결제 API 의 E1042 오류를 해결한다.
## 진행 상황
- 원인: 환율 테이블이 비어 있어 원화 금액 계산이 실패함. 새벽 3시 환율 작업이 어제 실패함.
## 다음 단계
- 환율 작업을 다시 실행하고, 실패한 주문 37건은 환불 처리 (김민수 팀장 승인).""",
    terse="환율 갱신 실패로 결제가 막힘. 재실행 후 환불 예정.",
    unrelated="주말에 친구들과 바닷가에 가서 수영을 하고 회를 먹었습니다.",
    request="요약할 대화 내용을 제공해 주세요.",
)
RUSSIAN = Case(
    "ru",
    (
        "После обновления зависимостей в CI падают тесты в tests/test_billing.py.",
        "Ошибка в сравнении дат: сервер CI работает в часовом поясе UTC, а тесты ожидают "
        "московское время.",
        "Понятно. Можно зафиксировать часовой пояс в конфигурации тестов?",
        "Да, добавим TZ=UTC в настройки пайплайна и поправим ожидаемые значения в тестах счетов.",
        "Хорошо. Релиз 4.2 должен выйти в четверг, Ирина проверит исправление.",
    ),
    faithful="""## Цель
Починить тесты в tests/test_billing.py, которые падают в CI после обновления зависимостей.
## Прогресс
- Причина: сервер CI работает в UTC, а тесты ожидают московское время.
## Следующие шаги
- Добавить TZ=UTC в настройки пайплайна, поправить ожидаемые значения в тестах счетов.
- Релиз 4.2 в четверг; Ирина проверит исправление.""",
    terse="Тесты счетов падали из-за часового пояса; пояс зафиксируем в пайплайне, проверит Ирина.",
    unrelated="Вчера мы ездили на дачу, собирали грибы и варили варенье из малины.",
    request="Пожалуйста, предоставьте текст разговора, который нужно кратко изложить.",
)
ARABIC = Case(
    "ar",
    (
        "فشل النسخ الاحتياطي لخادم db-prod-2 الليلة الماضية.",
        "السبب أن القرص ممتلئ بنسبة 95%. ملفات السجلات القديمة تأخذ معظم المساحة.",
        "هل يمكننا حذف السجلات الأقدم من ثلاثين يوما؟",
        "نعم، وبعدها نضيف قرصا جديدا بسعة 500 غيغابايت ونعيد تشغيل النسخ الاحتياطي.",
        "ممتاز. سارة ستوافق على شراء القرص غدا.",
    ),
    faithful="""## الهدف
إصلاح فشل النسخ الاحتياطي لخادم db-prod-2.
## التقدم
- السبب: القرص ممتلئ بنسبة 95%، وملفات السجلات القديمة تأخذ معظم المساحة.
## الخطوات التالية
- حذف السجلات الأقدم من ثلاثين يوما.
- إضافة قرص جديد بسعة 500 غيغابايت وإعادة تشغيل النسخ الاحتياطي؛ توافق سارة على الشراء.""",
    terse="فشل النسخ لامتلاء القرص؛ سنحذف السجلات القديمة ونشتري قرصا أكبر.",
    unrelated="ذهبنا إلى البحر يوم الجمعة وتناولنا السمك المشوي مع العائلة.",
    request="يرجى مشاركة المحادثة التي تريد تلخيصها.",
)
HINDI = Case(
    "hi",
    (
        "नया संस्करण 3.8.0 आने के बाद ऐप Android 14 पर खुलते ही बंद हो जाता है।",
        "क्रैश रिपोर्ट देखी। कैमरा की अनुमति माँगते समय ऐप बंद हो रहा है।",
        "क्या हम अनुमति वाला हिस्सा ठीक करके जल्दी नया संस्करण जारी कर सकते हैं?",
        "हाँ, अनुमति की जाँच ठीक कर दी है। संस्करण 3.8.1 शुक्रवार तक जारी हो सकता है।",
        "ठीक है, राहुल पहले इसे परीक्षण में चलाएगा।",
    ),
    faithful="""## लक्ष्य
संस्करण 3.8.0 के बाद Android 14 पर ऐप के बंद होने (क्रैश) को ठीक करना।
## प्रगति
- कारण: कैमरा की अनुमति माँगते समय ऐप बंद हो जाता है; अनुमति की जाँच ठीक कर दी गई है।
## अगले कदम
- राहुल परीक्षण करेगा, फिर संस्करण 3.8.1 शुक्रवार तक जारी होगा।""",
    terse="कैमरे की अनुमतियों के कारण ऐप क्रैश होता था; राहुल परीक्षण करेगा।",
    unrelated="कल हम बाज़ार गए और ताज़ी सब्ज़ियाँ और मिठाई खरीदी।",
    request="कृपया वह बातचीत साझा करें जिसका सारांश चाहिए।",
)
THAI = Case(
    "th",
    (
        "เว็บไซต์ร้านค้าโหลดช้ามากหลังจากย้ายไปเซิร์ฟเวอร์ใหม่",
        "ตรวจสอบแล้ว รูปภาพสินค้าไม่ได้ถูกบีบอัด และแคชถูกปิดอยู่",
        "ช่วยเปิดแคชและบีบอัดรูปภาพให้หน่อย",
        "เปิดแคชแล้ว และบีบอัดรูปภาพสินค้าทั้งหมดเรียบร้อย",
    ),
    faithful="เว็บไซต์ร้านค้าโหลดช้าหลังย้ายเซิร์ฟเวอร์ เพราะรูปภาพสินค้าไม่ถูกบีบอัดและแคชปิดอยู่ "
    "ตอนนี้เปิดแคชและบีบอัดรูปภาพแล้ว",
    terse="ร้านค้าช้าเพราะรูปไม่ถูกบีบอัด แก้แล้ว",
    unrelated="พรุ่งนี้ฉันจะไปเที่ยวทะเลกับครอบครัวและกินอาหารทะเล",
    request="",
)
FRENCH = Case(
    "fr",
    (
        "Depuis la mise à jour, la facturation échoue pour les clients québécois.",
        "Le calcul de la taxe échoue : le taux régional est absent de la table des taxes.",
        "Ajoutez le taux régional, puis relancez la facturation de décembre.",
    ),
    faithful="Objectif : corriger la facturation des clients québécois. Cause : le taux régional "
    "manque dans la table des taxes. Étapes : ajouter le taux, relancer la facturation.",
    terse="Taux régional manquant ; facturation relancée après correction.",
    unrelated="Nous avons passé le week-end à la montagne, avec des randonnées et une fondue.",
    request="Veuillez fournir la conversation à résumer.",
)
CASES = [CHINESE, JAPANESE, KOREAN, RUSSIAN, ARABIC, HINDI, THAI, FRENCH]
IDS = [case.language for case in CASES]
REQUESTING = [case for case in CASES if case.request]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_faithful_summary_passes(case: Case) -> None:
    assert not_a_summary(case.faithful, case.transcript) is None


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_terse_paraphrase_passes(case: Case) -> None:
    # No number or identifier to match, and (but in French) no Latin letters: only the
    # language's own words can.
    assert not re.search(r"[0-9_/]" if case.language == "fr" else r"[A-Za-z0-9]", case.terse)

    assert not_a_summary(case.terse, case.transcript) is None


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_text_about_something_else_is_rejected(case: Case) -> None:
    assert not_a_summary(case.unrelated, case.transcript) == NONE_OF_IT


@pytest.mark.parametrize("case", REQUESTING, ids=[case.language for case in REQUESTING])
def test_a_request_for_input_is_rejected(case: Case) -> None:
    reason = not_a_summary(case.request, case.transcript)

    assert reason is not None and reason.startswith("it asks for input"), reason


@pytest.mark.parametrize(
    ("reply", "case"),
    [
        ("对话进展顺利，我们已经完成了下一步，准备继续。", CHINESE),
        ("## 目标\n## 进展\n## 下一步\n## 关键上下文", CHINESE),
        ("会話は順調に進み、次のステップの準備ができています。", JAPANESE),
        ("대화가 잘 진행되었고 다음 단계를 준비했습니다.", KOREAN),
        ("Разговор прошёл успешно, следующие шаги понятны, готов продолжить.", RUSSIAN),
        ("## الهدف\n## التقدم\n## الخطوات التالية", ARABIC),
        ("बातचीत सफल रही, अगले कदम तैयार हैं।", HINDI),
    ],
    ids=["zh", "zh-headings", "ja", "ko", "ru", "ar", "hi"],
)
def test_generic_text_in_the_conversations_language_is_rejected(reply: str, case: Case) -> None:
    assert not_a_summary(reply, case.transcript) == NONE_OF_IT


@pytest.mark.parametrize("reply", ["", "  \n", "。。。", "……", "——", "؟", "।", "？！"])
def test_a_reply_without_a_word_is_empty(reply: str) -> None:
    assert not_a_summary(reply, CHINESE.transcript) == "the reply is empty"


def test_an_echo_of_the_instruction_is_rejected_whatever_the_conversations_language() -> None:
    instruction = DEFAULT_SUMMARY_PROMPT.rsplit("</conversation>", 1)[1].strip()

    for case in (CHINESE, RUSSIAN, ARABIC):
        reason = not_a_summary(instruction, case.transcript)
        assert reason is not None and reason.startswith("it repeats the instruction"), case


def test_a_summary_in_another_language_passes_on_the_identifiers_it_keeps() -> None:
    english = "Goal: migrate the order service to PostgreSQL 16; migrate_orders.py fails."

    assert not_a_summary(english, CHINESE.transcript) is None
    assert not_a_summary("The conversation went well.", CHINESE.transcript) == NONE_OF_IT


def test_digits_and_letters_match_in_any_form() -> None:
    # Arabic-Indic and Devanagari digits, full-width Latin, and vowel marks: the same terms.
    assert not_a_summary("الطلب ٨٨٤٢١٣ مكرر.", CHINESE.transcript) is None
    assert not_a_summary("३.८.१ तैयार है", HINDI.transcript) is None
    assert not_a_summary("ＰｏｓｔｇｒｅＳＱＬ へ移行", CHINESE.transcript) is None
    assert not_a_summary("فَشِلَ النَّسْخُ الاحْتِيَاطِيُّ", ARABIC.transcript) is None


def test_a_summary_quoting_a_request_of_the_conversation_passes() -> None:
    chat = render_transcript(
        [HumanMessage("请提供上个月的销售报表 sales_2024_11.xlsx"), AIMessage("好的，已发送。")]
    )
    summary = "请提供上个月的销售报表，用户这样要求；助手已发送 sales_2024_11.xlsx。"

    assert not_a_summary(summary, chat) is None
    assert not_a_summary("请提供对话内容。", chat) is not None


THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
CONFIG: dict[str, Any] = {
    "context_window": 100_000,
    "trigger": {"type": "messages", "value": 10},
    "keep": {"type": "messages", "value": 4},
}


# A Chinese conversation with no name, number or identifier in Latin letters or digits, and
# its summary: only the Chinese text can tell that the summary is about the conversation.
PARTY = (
    "我们下周要给新来的三位同事办欢迎会，预算是每人两百元。",
    "好的。地点有偏好吗？公司附近的川菜馆还是火锅店？",
    "选火锅店吧，王经理不吃辣，要点鸳鸯锅。",
    "明白。我会预订周四晚上七点的包间，并提前通知王经理和三位新同事。",
    "另外请准备一份小礼物，每份不超过五十元。",
    "好的，礼物我会在周三之前准备好。",
)
PARTY_SUMMARY = """## 目标
为三位新同事举办欢迎会，预算每人两百元。
## 关键决定
- 地点：公司附近的火锅店，点鸳鸯锅（王经理不吃辣）。
- 时间：周四晚上七点，包间。
## 下一步
- 预订包间，通知王经理和三位新同事。
- 周三之前准备小礼物，每份不超过五十元。"""


def chinese_thread() -> list[BaseMessage]:
    """A system prompt, the conversation, and the same again the next day (11 messages)."""
    later = tuple(f"第二天：{turn}" for turn in PARTY[:4])
    return [
        SystemMessage("你是一个乐于助人的助手。", id="sys"),
        *messages(PARTY + later[:-1]),
        HumanMessage(later[-1], id="last"),
    ]


def _assert_stored(report: CompactionReport, output: list[BaseMessage], stored: list[str]) -> None:
    assert report.action == "summarized", report.error
    assert stored == [PARTY_SUMMARY]
    assert any(PARTY_SUMMARY in str(m.content) for m in output)  # served to the model


def test_a_chinese_summary_is_stored_and_served(store: SummaryStore) -> None:
    summarizer = RecordingSummarizer(reply=lambda call: PARTY_SUMMARY)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)

    assert not re.search(r"[A-Za-z0-9]", PARTY_SUMMARY)

    result = graph.invoke(graph_input(chinese_thread()), THREAD)

    stored = [record.summary for record in store.list_summaries("t")]
    _assert_stored(result["compaction"], result["llm_input_messages"], stored)
    assert "the language the user writes in" in summarizer.calls[0].prompt


async def test_a_chinese_summary_is_stored_and_served_async(store: SummaryStore) -> None:
    summarizer = RecordingSummarizer(reply=lambda call: PARTY_SUMMARY)
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)

    result = await graph.ainvoke(graph_input(chinese_thread()), THREAD)

    stored = [record.summary for record in await store.alist_summaries("t")]
    _assert_stored(result["compaction"], result["llm_input_messages"], stored)


@pytest.mark.parametrize("check", ["basic", "off"])
def test_summary_check_off_stores_what_the_basic_check_rejects(
    store: SummaryStore, check: str
) -> None:
    reply = CHINESE.request  # a request for input: not a summary, to the basic check
    graph = create_compaction_graph(
        {**CONFIG, "summary_check": check},
        model=RecordingSummarizer(reply=lambda call: reply),
        store=store,
    )

    report = graph.invoke(graph_input(chinese_thread()), THREAD)["compaction"]

    stored = [record.summary for record in store.list_summaries("t")]
    if check == "off":
        assert report.action == "summarized" and stored == [reply]
    else:
        assert report.action == "failed" and stored == []
        assert report.error and "it asks for input" in report.error
