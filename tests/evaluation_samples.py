"""A hand-built ``Evaluation`` for the tests of the table and the page: what a replay of four
conversations records, written out as the replay would (same counts per call, the compacted
input smaller than the full history after each summary).

- A Chinese file's conversation with long name, two compactions, probes (one answer holds a NUL
  byte and a lone surrogate, one question a ``<script>`` tag) and lost items in three scripts.
- An Arabic one without compaction or probes, a Russian thread with one compaction and a pair
  violation, and one with no model call at all.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from langgraph_compaction.evaluate.records import (
    Bill,
    CallFigures,
    Compaction,
    ConversationResult,
    Evaluation,
    ItemFate,
    Probe,
)

__all__ = [
    "ARABIC_NAME",
    "CHINESE_NAME",
    "HOSTILE",
    "RUSSIAN_NAME",
    "build_calls",
    "sample_evaluation",
]

CHINESE_NAME = (
    "/data/客户支持/二〇二六年第一季度/导出的对话记录_非常长的文件名_第三批次_最终版.jsonl:17"
)
ARABIC_NAME = "محادثات/الدعم_الفني_للعملاء_في_المنطقة_الشرقية_نسخة_طويلة_جدا_للاختبار.jsonl:3"
RUSSIAN_NAME = "thread поддержка-клиентов-очень-длинное-имя-потока-для-проверки-обрезки-2026-12"
HOSTILE = "<script>alert('x')</script>"


def build_calls(
    full: list[int], compacted: dict[int, int], *, violations: dict[int, int] | None = None
) -> tuple[CallFigures, ...]:
    """One call per entry of ``full`` (tokens of the whole history); from each key of
    ``compacted`` on, the compacted input is that many tokens plus what the history grew since."""
    calls = []
    base: tuple[int, int] | None = None  # (call's full tokens, compacted tokens) at the summary
    for index, tokens in enumerate(full):
        new_summary = index in compacted
        if new_summary:
            base = (tokens, compacted[index])
        sent = tokens if base is None else base[1] + tokens - base[0]
        calls.append(
            CallFigures(
                index=index,
                messages=2 * index + 2,
                tokens_without=tokens,
                tokens_with=sent,
                action="summarized" if new_summary else "reused" if base else "passthrough",
                summary_version=None
                if base is None
                else sorted(compacted).index(max(k for k in compacted if k <= index)) + 1,
                summary_calls=1 if new_summary else 0,
                summary_input_tokens=tokens - compacted[index] if new_summary else 0,
                summary_output_tokens=compacted[index] // 2 if new_summary else 0,
                output_tokens=120 + index,
                cached_with=sent // 2,
                cache_written_with=sent // 4,
                cached_without=tokens // 2,
                cache_written_without=tokens // 4,
                pair_violations=(violations or {}).get(index, 0),
                integrity_identifiers=14 if new_summary else None,
                integrity_kept=9 if new_summary else None,
                integrity_appended=4 if new_summary else None,
                integrity_dropped=1 if new_summary and index > 6 else 0 if new_summary else None,
                integrity_artifacts=None if not new_summary else 3,
            )
        )
    return tuple(calls)


def sample_evaluation() -> Evaluation:
    chinese_calls = build_calls(
        [1_800, 4_200, 9_000, 15_500, 23_000, 31_000, 38_500, 44_000, 52_000, 61_000],
        {4: 6_000, 8: 7_500},
    )
    chinese = ConversationResult(
        name=CHINESE_NAME,
        calls=chinese_calls,
        compactions=(
            Compaction(4, 1, 1, 7, (HumanMessage("总结"),), (HumanMessage("全部"),)),
            Compaction(8, 2, 7, 15, (HumanMessage("总结"),), (AIMessage("全部"),)),
        ),
        fates=(
            ItemFate("identifier", "订单号 ORD-20260315", "model input"),
            ItemFate("identifier", "/srv/app/配置.yaml", "summary"),
            ItemFate("identifier", "رقم_الطلب_7781", "recall"),
            ItemFate("identifier", "счёт-фактура №4471", "lost"),
            ItemFate("identifier", HOSTILE, "lost"),
            ItemFate("artifact", "read_file /srv/app/配置.yaml", "summary"),
            ItemFate("artifact", "bash pytest -k 登录", "lost"),
        ),
        bill_with=Bill(agent=0.8123456, summarizer=0.0412),
        bill_without=Bill(agent=1.9876, summarizer=0.0),
        probes=(
            Probe(
                4,
                "fact",
                "客户的订单号是多少？",  # noqa: RUF001 (Chinese punctuation)
                "ORD-20260315",
                "ORD-20260315",
                "ORD-20260315",
                right_compacted=True,
                right_full=True,
                comment_compacted="匹配",
            ),
            Probe(
                4,
                "artifact",
                f"Which file? {HOSTILE}",
                "/srv/app/配置.yaml",
                "I read /srv/app/配置.yaml",
                "/srv/app/配置.yaml",
                right_compacted=True,
                right_full=True,
            ),
            Probe(
                8,
                "next_step",
                "ما هي الخطوة التالية؟",
                "تشغيل الاختبارات",
                "bad\x00answer \ud800 here",
                "تشغيل الاختبارات",
                right_compacted=False,
                right_full=True,
                comment_compacted="answer garbled \ud800",
                comment_full="верно",
            ),
            Probe(
                8,
                "decision",
                "Почему выбрали PostgreSQL?",
                "нужен доступ многих процессов",
                "не знаю",
                "нужен доступ многих процессов",
                right_compacted=False,
                right_full=True,
            ),
        ),
        seconds=12.5,
    )
    arabic = ConversationResult(
        name=ARABIC_NAME,
        calls=build_calls([900, 1_400, 2_100], {}),
        compactions=(),
        fates=(ItemFate("identifier", "https://example.com/تذكرة/42", "model input"),),
        bill_with=Bill(agent=0.004321, summarizer=0.0),
        bill_without=Bill(agent=0.004321, summarizer=0.0),
    )
    russian = ConversationResult(
        name=RUSSIAN_NAME,
        calls=build_calls([3_000, 8_000, 14_000, 21_000], {2: 4_000}, violations={3: 1}),
        compactions=(Compaction(2, 1, 1, 5, (), ()),),
        fates=(
            ItemFate("identifier", "ветка release/2.4", "summary"),
            ItemFate("artifact", "git push origin release/2.4", "recall"),
        ),
        bill_with=Bill(agent=123.456, summarizer=1.5),
        bill_without=Bill(agent=210.0, summarizer=0.0),
    )
    empty = ConversationResult(
        name="empty.jsonl:1",
        calls=(),
        compactions=(),
        fates=(),
        bill_with=Bill(0.0, 0.0),
        bill_without=Bill(0.0, 0.0),
    )
    return Evaluation(
        settings={
            "model": "local:SmolLM2-135M-Instruct",
            "agent_model": "openai:gpt-4o-mini",
            "judge": "openai:gpt-4o",
            "prices": "genai-prices 0.2.3 for anthropic:claude-sonnet-4-5, cache reads at 10%",
            "config": {"trigger": {"type": "tokens", "value": 20000}, "language": "中文 عربى"},
        },
        results=(chinese, arabic, russian, empty),
        seconds=40.0,
    )
