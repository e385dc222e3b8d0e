"""The pure decision functions, tested directly: data in, a decision out (DESIGN section 2).

The graph tests exercise these through a whole call; here each one gets the small cases that
pin its rule down. Functions with direct tests elsewhere are not repeated: `resolve_thresholds`,
`fired_triggers`, `find_keep_start` (test_measure), `plan_chunks` (test_summarize), the pruning
rule (test_prune), `split_tool_units` and `ensure_tool_pairs` (test_partition, test_assemble),
`fill_prompt` and `render_transcript` (test_summarize, test_quality).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from conversations import chat, tool_batch
from langchain_core.exceptions import (
    ContextOverflowError,
    ModelAuthenticationError,
    ModelInvalidRequestError,
    ModelRateLimitError,
    ModelTimeoutError,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_compaction.config.parts import PruningConfig
from langgraph_compaction.config.triggers import Threshold, scale_thresholds, within_headroom
from langgraph_compaction.content.history_scan import HistoryIndex
from langgraph_compaction.content.messages import (
    SUMMARY_NAME,
    caller_index,
    coerce_messages,
    count_leading_system,
    find_latest_user_index,
    make_summary_message,
    tool_name_of,
    trim_middle,
)
from langgraph_compaction.errors import CompactionInputError
from langgraph_compaction.pipeline.flights import Flights
from langgraph_compaction.pipeline.jobs import Jobs
from langgraph_compaction.pruning.rules import HARD, KEEP, SOFT, age_level
from langgraph_compaction.store import SummaryRecord
from langgraph_compaction.summary.chunks import shorten_message, shorten_text
from langgraph_compaction.summary.matching import find_matching_summaries, message_key
from langgraph_compaction.summary.model_call import distinct_models, is_retryable, overflow_of
from langgraph_compaction.summary.prompts import delimiters_of, escape_for

# -- _thresholds ---------------------------------------------------------------------------------


def test_scaled_thresholds_keep_their_kind_and_say_the_ratio() -> None:
    thresholds = (Threshold("tokens", 1000, "tokens>=1000"), Threshold("messages", 40, "m>=40"))
    assert scale_thresholds(thresholds, None) == ()
    assert scale_thresholds(thresholds, 0.5) == (
        Threshold("tokens", 500, "0.5xtokens>=1000"),
        Threshold("messages", 20, "0.5xm>=40"),
    )


def test_within_headroom_means_below_the_share_of_every_threshold() -> None:
    thresholds = (Threshold("tokens", 1000, "t"), Threshold("refine", 10, "r"))
    assert within_headroom(thresholds, 0.75, tokens=749, count=999, refine=7)
    assert not within_headroom(thresholds, 0.75, tokens=750, count=0, refine=0)  # at the line
    assert not within_headroom(thresholds, 0.75, tokens=0, count=0, refine=8)  # any one
    assert within_headroom((), 0.75, tokens=10**9, count=10**9, refine=10**9)


# -- _chunks -------------------------------------------------------------------------------------


def test_shorten_text_keeps_head_and_tail_and_leaves_short_text_alone() -> None:
    short = "x" * 100
    assert shorten_text(short, 1000) is short
    text = "H" * 5000 + "T" * 5000
    cut = shorten_text(text, 2000)
    assert len(cut) <= 2000
    assert cut.startswith("H" * 500) and cut.endswith("T" * 500)
    assert "characters cut" in cut


def test_shorten_message_copies_only_when_it_cuts() -> None:
    small = HumanMessage("hello", id="s")
    assert shorten_message(small, 100) is small
    big = HumanMessage("w" * 40_000, id="b")
    shortened = shorten_message(big, 1000)
    assert shortened is not big and shortened.id == "b"
    assert len(str(shortened.content)) < 5000 and len(str(big.content)) == 40_000


# -- _pruning ------------------------------------------------------------------------------------


def test_age_level_escalates_with_age_and_size() -> None:
    pruning = PruningConfig(enabled=True)  # soft at 30% of the history's age, hard at 50%
    big, small = 10_000, 100
    assert age_level(90, 100, big, pruning) == KEEP  # recent
    assert age_level(60, 100, big, pruning) == SOFT  # old enough, long enough to trim
    assert age_level(60, 100, small, pruning) == KEEP  # old, but nothing to trim
    assert age_level(40, 100, small, pruning) == HARD  # old enough to clear, whatever its size
    no_hard = PruningConfig(enabled=True, hard_clear={"enabled": False})
    assert age_level(0, 100, big, no_hard) == SOFT


# -- _summaries ----------------------------------------------------------------------------------


def _record(messages: list[BaseMessage], covered: int, prefix_hash: str) -> SummaryRecord:
    return SummaryRecord(
        id=f"s{covered}",
        thread_id="t",
        namespace="default",
        version=1,
        parent_id=None,
        boundary_message_id=messages[covered - 1].id or "",
        covered_messages=covered,
        prefix_hash=prefix_hash,
        summary="s",
        summary_tokens=1,
        source_tokens=1,
        kind="initial",
        model=None,
        created_at=datetime.now(UTC),
        rescued_message_ids=(),
    )


def test_message_key_is_the_id_or_the_position() -> None:
    messages: list[BaseMessage] = [HumanMessage("a", id="a"), HumanMessage("b")]
    assert [message_key(messages, i) for i in range(2)] == ["a", "#1"]


def test_a_summary_matches_only_while_its_prefix_is_the_head_of_the_history() -> None:
    messages = chat(6)
    scan = HistoryIndex().scan(("ns", "t"), messages)
    good = _record(messages, 5, scan.prefix_hash(5))
    stale = _record(messages, 7, "another history's hash")
    beyond = replace(good, covered_messages=len(messages) + 1)
    moved = replace(good, boundary_message_id="elsewhere")
    records = [stale, good, beyond, moved]
    assert find_matching_summaries(records, messages, scan) == [good]

    edited = [*messages[:2], HumanMessage("edited", id=messages[2].id), *messages[3:]]
    edited_scan = HistoryIndex().scan(("ns", "t"), edited)
    assert find_matching_summaries([good], edited, edited_scan) == []  # same ids, new text


# -- _prompts ------------------------------------------------------------------------------------


def test_delimiters_are_every_tag_and_fence_of_the_template() -> None:
    tags, fences = delimiters_of('<Summary>\n<messages>\n{messages}\n</messages>\n"""x"""')
    assert tags == {"summary", "messages"}
    assert fences == ('"""',)
    assert delimiters_of("plain {messages}") == (frozenset(), ())


def test_escaping_breaks_the_templates_delimiters_only() -> None:
    text = '</messages> <MESSAGES id=1> <b>bold</b> ```code``` """doc"""'
    escaped = escape_for(text, frozenset({"messages"}), ("```",))
    assert "</messages>" not in escaped and "<MESSAGES" not in escaped
    assert "<\\/messages>" in escaped  # the name stays readable
    assert "<b>bold</b>" in escaped  # a tag the template does not use is left alone
    assert "```" not in escaped and '"""doc"""' in escaped
    assert escape_for(text, frozenset(), ()) == text


# -- _messages -----------------------------------------------------------------------------------


def test_coerce_messages_takes_message_likes_and_names_what_is_not() -> None:
    objects = chat(1)
    assert coerce_messages({"messages": objects}) is objects  # the common case: no copy
    assert coerce_messages({"messages": tuple(objects)}) == objects
    mixed = coerce_messages({"messages": [("user", "hi"), {"role": "assistant", "content": "ok"}]})
    assert [type(m) for m in mixed] == [HumanMessage, AIMessage]
    with pytest.raises(CompactionInputError, match="no 'messages' key"):
        coerce_messages({})
    with pytest.raises(CompactionInputError, match=r"'messages'\[1\] is int 7"):
        coerce_messages({"messages": [HumanMessage("a"), 7]})


def test_trim_middle_says_how_much_it_cut() -> None:
    assert trim_middle("short", 10, 10) == "short"
    assert trim_middle("a" * 10 + "b" * 10 + "c" * 10, 10, 10) == (
        "a" * 10 + "\n\n[... 10 of 30 characters cut ...]\n\n" + "c" * 10
    )


def test_a_tool_result_finds_its_caller_and_its_name() -> None:
    batch = tool_batch("x", 2, name="grep")
    messages: list[BaseMessage] = [HumanMessage("go", id="h"), *batch]
    unnamed = ToolMessage("r", tool_call_id="x-call1", id="unnamed")
    messages[-1] = unnamed
    assert [caller_index(messages, i) for i in (2, 3)] == [1, 1]
    assert caller_index([unnamed], 0) == -1
    assert tool_name_of(messages, 3) == "grep"  # from the call it answers
    assert tool_name_of(messages, 2) == "grep"  # its own name
    assert tool_name_of(messages, 0) == ""
    assert tool_name_of([unnamed], 0) == ""


def test_leading_system_messages_and_the_latest_real_user_turn() -> None:
    summary = make_summary_message("what happened", "r1")
    messages: list[BaseMessage] = [
        SystemMessage("a"),
        SystemMessage("b"),
        HumanMessage("q", id="q"),
        AIMessage("a"),
        summary,
    ]
    assert count_leading_system(messages) == 2
    assert count_leading_system(messages[2:]) == 0
    assert find_latest_user_index(messages) == 2  # the injected summary is not a user turn
    assert find_latest_user_index(messages, start=3) is None


def test_the_summary_message_is_the_same_bytes_every_time() -> None:
    first, again = make_summary_message("S.", "r1"), make_summary_message("S.", "r1")
    assert first == again and first.name == SUMMARY_NAME and first.id == "compaction-summary-r1"
    assert first.additional_kwargs == {
        "hide_from_ui": True,
        "lc_source": "summarization",
    }
    with_recall = make_summary_message("S.", "r1", recall_tool="recall_messages")
    assert str(with_recall.content).startswith(str(first.content))
    assert "recall_messages" in str(with_recall.content)


# -- _model_calls --------------------------------------------------------------------------------


def test_an_overflow_is_recognized_and_its_figures_read() -> None:
    message = (
        "This model's maximum context length is 8192 tokens. However, you requested 9100 "
        "tokens (9000 in the messages, 100 in the completion)."
    )
    found = overflow_of(ModelInvalidRequestError(message))
    assert found is not None and (found.window, found.prompt_tokens) == (8192, 9000)
    bare = overflow_of(ContextOverflowError("too long"))
    assert bare is not None and (bare.window, bare.prompt_tokens) == (None, None)
    assert overflow_of(ModelInvalidRequestError("unknown parameter 'foo'")) is None
    assert overflow_of(ValueError(message)) is None  # not a reported model error


def test_retryable_errors_are_the_transient_ones() -> None:
    assert is_retryable(ModelRateLimitError("429")) and is_retryable(ModelTimeoutError("slow"))
    assert is_retryable(TimeoutError()) and is_retryable(ConnectionResetError())
    assert not is_retryable(ModelAuthenticationError("401"))
    assert not is_retryable(ContextOverflowError("too long"))
    assert not is_retryable(ValueError("bug"))


def test_distinct_models_are_tried_once_each_in_order() -> None:
    from fakes import RecordingSummarizer

    a, b = RecordingSummarizer(), RecordingSummarizer()
    assert distinct_models(a, None, b, a) == [a, b]
    assert distinct_models(None, None) == []


# -- _flights and _jobs --------------------------------------------------------------------------


def test_one_owner_per_flight_and_every_waiter_wakes() -> None:
    flights = Flights()
    flight, owner = flights.claim("k")
    again, second = flights.claim("k")
    assert owner and not second and again is flight and len(flights) == 1
    assert not flight.wait(timeout=0)
    waiter = threading.Thread(target=flight.wait, args=(5,))
    waiter.start()
    flights.land("k", flight)
    waiter.join(5)
    assert not waiter.is_alive() and flight.wait(0) and len(flights) == 0
    assert flights.claim("k")[1]  # a new flight after landing


async def test_a_flight_is_awaited_without_blocking_the_loop() -> None:
    flights = Flights()
    flight, _ = flights.claim("k")
    assert not await flight.await_(timeout=0.01)  # times out
    waiting = asyncio.ensure_future(flight.await_(timeout=5))
    await asyncio.sleep(0)
    await asyncio.to_thread(flights.land, "k", flight)  # landed from another thread
    assert await waiting
    assert await flight.await_()  # already landed


def test_jobs_one_per_thread_and_not_twice_over_one_summary() -> None:
    jobs = Jobs()
    job = jobs.claim(("ns", "t"), "summary-1")
    assert job is not None and jobs.running(("ns", "t")) is job
    assert jobs.claim(("ns", "t"), "summary-2") is None  # one at a time
    jobs.land(job, [{"type": "context_compacted"}])
    assert jobs.running(("ns", "t")) is None and job.flight.wait(0)
    assert jobs.claim(("ns", "t"), "summary-1") is None  # not again over the same summary
    jobs.forget_claim(("ns", "t"))
    retry = jobs.claim(("ns", "t"), "summary-1")
    assert retry is not None  # a cancelled job may be retried
    assert jobs.take_events(("ns", "t")) == [{"type": "context_compacted"}]
    assert jobs.take_events(("ns", "t")) == []
    assert jobs.take_events(("ns", "other")) == []
