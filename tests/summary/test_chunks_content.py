"""What a summary call costs is what the summarizer reads, and shortening cuts only text.

Summary calls are planned by the tokens of each evicted message's transcript (a media block is
one reference line there), while ``source_tokens`` stays what the model paid for the messages.
A message shortened to fit (for a summary call, or as the newest unit of the model input) loses
only text: its media, tool calls, ids and names stay as they were.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conversations import chat, graph_input
from fakes import RecordingSummarizer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from media_files import b64, data_url, pdf, png

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.content.estimate import estimate_tokens
from langgraph_compaction.graph import build_pipeline
from langgraph_compaction.nodes.measure import measure
from langgraph_compaction.nodes.partition import plan_partition
from langgraph_compaction.precompaction import call_capacity, summary_calls
from langgraph_compaction.summary.chunks import plan_chunks, shorten_message, transcript_tokens
from langgraph_compaction.summary.prompts import render_transcript

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
CHART_URL = "https://example.com/charts/churn-q3.png"
CRASH_URL = "https://example.com/screens/crash-42.png"


def _report_turn(index: int) -> list[BaseMessage]:
    """A user sending a 400 KB PDF (12+ pages: about 30,000 tokens for the model), a reply."""
    document = pdf(12 + index, pad_to=400_000)
    block: dict[str, Any] = (
        {"type": "file", "base64": b64(document), "mime_type": "application/pdf"}
        | {"filename": f"report-{index}.pdf"}
        if index % 2
        else {
            "type": "file",
            "file": {
                "filename": f"report-{index}.pdf",
                "file_data": data_url("application/pdf", document),
            },
        }
    )
    return [
        HumanMessage([{"type": "text", "text": f"Read report {index}."}, block], id=f"r{index}"),
        AIMessage(f"Report {index} says churn fell by {index + 2}%.", id=f"r{index}-a"),
    ]


def _image_turns() -> list[BaseMessage]:
    photo = png(2048, 1536, pad_to=300_000)
    return [
        HumanMessage(
            [
                {"type": "text", "text": "Here is the dashboard."},
                {
                    "type": "image",
                    "base64": b64(photo),
                    "mime_type": "image/png",
                    "filename": "dashboard.png",
                },
                {"type": "image_url", "image_url": {"url": data_url("image/png", photo)}},
                {"type": "image_url", "image_url": {"url": CHART_URL}},
            ],
            id="img",
        ),
        AIMessage("The dashboard and the chart agree.", id="img-a"),
    ]


def test_media_heavy_evictions_are_summarized_in_one_call_when_the_transcript_fits(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    history = [m for i in range(4) for m in _report_turn(i)] + _image_turns()
    messages = [*chat(1), *history, *chat(2, system=False, prefix="late")]
    graph = create_compaction_graph(
        {
            "trigger": {"type": "tokens", "value": 20_000},
            "keep": {"type": "messages", "value": 4},
            "trim_tokens_to_summarize": 2_000,
        },
        model=summarizer,
        store=store,
    )
    report = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert report.action == "summarized"
    assert report.summary_calls == summarizer.call_count == 1
    assert (report.shortened_count, report.over_trim_count) == (0, 0)
    prompt = summarizer.calls[0].prompt
    for name in ("report-0.pdf", "report-1.pdf", "report-2.pdf", "report-3.pdf"):
        assert name in prompt
    assert "dashboard.png" in prompt and CHART_URL in prompt and "2048x1536" in prompt
    assert "base64" not in prompt and len(prompt) < 8_000  # references, never the data
    # what the summary covers is what the model paid for: the pages, not the reference lines
    record = store.list_summaries("t")[0]
    evicted = messages[1 : 1 + report.summarized_messages]
    assert record.source_tokens == estimate_tokens(evicted) > 4 * 12 * 2_400


def test_a_shortened_message_keeps_its_image_url_in_the_summary_prompt(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    log = "Start of the crash log. " + "trace line\n" * 4_000 + "End of the crash log."
    crash: list[BaseMessage] = [
        HumanMessage(
            [
                {"type": "text", "text": log},
                {"type": "image_url", "image_url": {"url": CRASH_URL}},
            ],
            id="crash",
        ),
        AIMessage("The crash comes from the cache.", id="crash-a"),
    ]
    messages = [*chat(2), *crash, *chat(3, system=False, prefix="late")]
    graph = create_compaction_graph(
        {
            "trigger": {"type": "tokens", "value": 5_000},
            "keep": {"type": "messages", "value": 4},
            "trim_tokens_to_summarize": 1_000,
            "max_summary_chunks": 1,
        },
        model=summarizer,
        store=store,
    )
    report = graph.invoke(graph_input(messages), THREAD)["compaction"]
    assert report.action == "summarized" and report.summary_calls == 1
    assert report.shortened_count == 1
    prompt = summarizer.calls[0].prompt
    assert "characters cut" in prompt
    assert "Start of the crash log." in prompt and "End of the crash log." in prompt
    assert CRASH_URL in prompt
    assert messages[5].content == crash[0].content  # the conversation is never altered


def test_shortening_cuts_the_text_and_keeps_every_other_block_and_the_tool_calls() -> None:
    call = {"type": "tool_use", "id": "call-1", "name": "grep", "input": {"pattern": "churn"}}
    image = {"type": "image", "url": CHART_URL}
    message = AIMessage(
        [
            {"type": "text", "text": "A" * 6_000, "cache_control": {"type": "ephemeral"}},
            image,
            "B" * 6_000,
            call,
        ],
        tool_calls=[{"name": "grep", "args": {"pattern": "churn"}, "id": "call-1"}],
        id="ai-1",
        name="analyst",
    )
    short = shorten_message(message, 2_000)  # the image alone is 1,600 tokens
    assert isinstance(short, AIMessage) and isinstance(short.content, list)
    assert (short.id, short.name, short.tool_calls) == (
        message.id,
        message.name,
        message.tool_calls,
    )
    first, kept_image, second, kept_call = short.content
    assert kept_image is message.content[1] and kept_call is message.content[3]  # not copied
    assert (kept_image, kept_call) == (image, call)
    assert isinstance(first, dict) and isinstance(second, str)
    assert first["cache_control"] == {"type": "ephemeral"}
    assert first["text"].startswith("A" * 100) and "characters cut" in first["text"]
    assert second.endswith("B" * 100) and "A" not in second
    assert estimate_tokens([short]) <= 2_000 < estimate_tokens([message])
    # the transcript still shows the reference and the call
    assert CHART_URL in render_transcript([short]) and "grep(" in render_transcript([short])


def test_a_text_block_wholly_inside_the_cut_goes_with_it() -> None:
    message = HumanMessage(
        [
            {"type": "text", "text": "head " * 2_000},
            "middle",
            {"type": "text", "text": "tail " * 2_000},
        ]
    )
    short = shorten_message(message, 300)
    assert isinstance(short.content, list) and len(short.content) == 2
    assert "middle" not in short.text and short.text.startswith("head ")
    assert short.text.endswith("tail ")


def test_chunks_are_sized_by_the_transcript_not_by_what_the_model_pays() -> None:
    messages = [m for i in range(4) for m in _report_turn(i)]
    sent = transcript_tokens(messages, estimate_tokens)
    assert sum(sent) < 400 < 4 * 12 * 2_400 < estimate_tokens(messages)
    one_call = estimate_tokens([HumanMessage(render_transcript(messages))])
    assert abs(sum(sent) - one_call) <= len(messages)  # adds up to the transcript sent
    plan = plan_chunks(messages, sent, 1_000, 8, estimate_tokens)
    assert [len(chunk) for chunk in plan.chunks] == [8]


def test_a_newest_tool_result_shortened_in_the_model_input_keeps_its_image(
    store: SummaryStore, summarizer: RecordingSummarizer
) -> None:
    image = {"type": "image", "base64": b64(png(1024, 768)), "mime_type": "image/png"}
    call = AIMessage(
        "",
        tool_calls=[{"name": "screenshot", "args": {"page": "/"}, "id": "shot"}],
        id="shot-ai",
    )
    result = ToolMessage(
        [{"type": "text", "text": "page text " * 3_000}, image],
        tool_call_id="shot",
        name="screenshot",
        id="shot-r",
    )
    messages = [*chat(3), call, result]
    graph = create_compaction_graph(
        {"context_window": 4_000, "keep": {"type": "messages", "value": 4}},
        model=summarizer,
        store=store,
    )
    out = graph.invoke(graph_input(messages), THREAD)
    report = out["compaction"]
    assert report.shortened_count == 1 and not report.over_budget
    sent = next(m for m in out["llm_input_messages"] if m.id == "shot-r")
    assert isinstance(sent, ToolMessage) and isinstance(sent.content, list)
    text, kept = sent.content
    assert kept == image and kept["base64"] == image["base64"]  # byte for byte
    assert isinstance(text, dict) and "characters cut" in text["text"]
    assert (sent.tool_call_id, sent.name) == ("shot", "screenshot")
    # the image still counts: what is sent fits the budget as the report says
    assert estimate_tokens(out["llm_input_messages"]) == report.tokens_after
    assert report.tokens_after <= report.gauge.budget
    assert result.content[1] == image and len(result.text) > 20_000  # the original untouched


def test_cjk_text_is_cut_to_the_tokens_asked_not_to_four_characters_a_token() -> None:
    message = HumanMessage("日志里的错误来自缓存层。" * 1_000, id="zh")
    assert estimate_tokens([message]) > 10_000  # about a token a character
    short = shorten_message(message, 500)
    assert 400 < estimate_tokens([short]) <= 500
    assert short.text.startswith("日志里的错误") and short.text.endswith("来自缓存层。")


def test_a_prepared_summary_counts_its_calls_by_what_the_summarizer_reads(tmp_path: Path) -> None:
    """Pre-compaction decides how many calls a prepared summary takes as summarize sizes
    them: a 400 KB PDF is one reference line to the summarizer, not its model cost."""
    config = {
        "trigger": {"type": "tokens", "value": 20_000},
        "keep": {"type": "messages", "value": 2},
    }
    pipe = build_pipeline(
        config, model=RecordingSummarizer(), store=f"sqlite:///{tmp_path / 's.db'}"
    )
    history = [
        HumanMessage(
            content=[
                {"type": "text", "text": f"report {n}"},
                {
                    "type": "file",
                    "base64": b64(pdf(12, pad_to=400_000)),
                    "mime_type": "application/pdf",
                    "filename": f"r{n}.pdf",
                },
            ],
            id=f"u{n}",
        )
        for n in range(3)
    ] + [AIMessage("read them", id="a"), HumanMessage("and now?", id="last")]
    measured = measure(pipe, history, {"configurable": {"thread_id": "prepared"}})
    plan = plan_partition(pipe, measured, None)
    assert plan is not None and len(plan.evicted) >= 3
    capacity = call_capacity(pipe, None)
    assert capacity is not None
    assert sum(map(measured.scan.token, plan.evicted)) > capacity  # what the model pays
    assert summary_calls(pipe, measured, plan, capacity, {}) == 1
