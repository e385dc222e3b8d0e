"""Old media in the model input (``pruning.media_keep_last``, DESIGN 6.10 and 6.2).

Every test runs the compaction graph of ``create_compaction_graph`` on a real SQLite store,
with real media data (PNG headers, WAV files written with ``wave``, PDFs with pages) in every
format LangChain passes on. The expected copy is built here from the contract alone: each
media block older than the last N user turns becomes a text block holding
``media_reference(block)``, in its place; everything else is the original, byte for byte.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import io
import json
import random
import struct
import wave
import zlib
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Annotated, Any

import pytest
from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph, add_messages
from typing_extensions import TypedDict

from langgraph_compaction import (
    CompactionMiddleware,
    CompactionReport,
    SummaryStore,
    create_compaction_graph,
)
from langgraph_compaction.content.blocks import media_reference
from langgraph_compaction.content.estimate import estimate_tokens

Block = dict[str, Any]
RUN: RunnableConfig = {"configurable": {"thread_id": "media"}}
NO_TRIGGER: dict[str, Any] = {"trigger": {"type": "tokens", "value": 10_000_000}}


# --------------------------------------------------------------------------- real media data
def png(width: int, height: int, padding: int = 48_000) -> bytes:
    """A valid PNG of that pixel size, padded by a private chunk to a realistic weight."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = zlib.compress(b"".join(b"\0" + b"\0" * 3 * width for _ in range(height)))
    private = random.Random(width * height).randbytes(padding)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"prVt", private)
        + chunk(b"IDAT", rows)
        + chunk(b"IEND", b"")
    )


def wav(seconds: int, rate: int = 8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(random.Random(seconds).randbytes(2 * rate * seconds))
    return buffer.getvalue()


def pdf(pages: int, padding: int = 40_000) -> bytes:
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    objects = [
        "1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj",
        f"2 0 obj << /Type /Pages /Kids [{kids}] /Count {pages} >> endobj",
        *(f"{3 + i} 0 obj << /Type /Page /Parent 2 0 R >> endobj" for i in range(pages)),
    ]
    filler = "% " + "x" * padding
    return ("%PDF-1.4\n" + "\n".join(objects) + f"\n{filler}\n%%EOF\n").encode()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


PNG, WAV, PDF = b64(png(1024, 768)), b64(wav(3)), b64(pdf(4))

MEDIA: dict[str, Callable[[], Block]] = {
    "openai-image_url-data": lambda: {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    },
    "openai-image_url-https": lambda: {
        "type": "image_url",
        "image_url": {"url": "https://example.com/cat.png", "detail": "high"},
    },
    "openai-input_audio": lambda: {
        "type": "input_audio",
        "input_audio": {"data": WAV, "format": "wav"},
    },
    "openai-file": lambda: {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
    },
    "responses-input_image": lambda: {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{PNG}",
        "detail": "auto",
    },
    "responses-input_file": lambda: {
        "type": "input_file",
        "filename": "report.pdf",
        "file_data": f"data:application/pdf;base64,{PDF}",
    },
    "anthropic-image": lambda: {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    },
    "anthropic-document-url": lambda: {
        "type": "document",
        "source": {"type": "url", "url": "https://example.com/manual.pdf"},
    },
    "standard-image-base64": lambda: {"type": "image", "base64": PNG, "mime_type": "image/png"},
    "standard-image-url": lambda: {"type": "image", "url": "https://example.com/cat.png"},
    "standard-image-id": lambda: {"type": "image", "file_id": "file-abc123"},
    "standard-file": lambda: {
        "type": "file",
        "base64": PDF,
        "mime_type": "application/pdf",
        "extras": {"filename": "report.pdf"},
    },
    "standard-audio": lambda: {"type": "audio", "base64": WAV, "mime_type": "audio/wav"},
    "standard-video-url": lambda: {
        "type": "video",
        "url": "https://example.com/clip.mp4",
        "mime_type": "video/mp4",
    },
    "standard-image-source_type": lambda: {
        "type": "image",
        "source_type": "base64",
        "data": PNG,
        "mime_type": "image/png",
    },
}
"""One media block per format LangChain passes on (DESIGN 6.10), by provider family."""
_DATA = (PNG, WAV, PDF)


# --------------------------------------------------------------------------- the oracle
def reference_block(block: Block) -> Block:
    """What the contract says a replaced block becomes."""
    text = media_reference(block)
    assert text is not None, f"not media: {block['type']}"
    kind = "input_text" if block["type"] in ("input_image", "input_file") else "text"
    return {"type": kind, "text": text}


def expected_copy(message: BaseMessage) -> BaseMessage:
    """``message`` with every media block (nested in a tool_result too) replaced."""

    def swap(block: Any) -> Any:
        if isinstance(block, dict) and media_reference(block) is not None:
            return reference_block(block)
        if isinstance(block, dict) and block.get("type") == "tool_result":
            return {**block, "content": [swap(b) for b in block["content"]]}
        return block

    assert isinstance(message.content, list)
    return message.model_copy(update={"content": [swap(b) for b in message.content]})


def dumped(messages: Sequence[BaseMessage]) -> list[str]:
    """Each message as the bytes a provider would be sent (every field, in a fixed order)."""
    return [json.dumps(m.model_dump(), sort_keys=True, default=str) for m in messages]


def no_data(messages: Sequence[BaseMessage], replaced: Sequence[int]) -> None:
    for index in replaced:
        text = dumped([messages[index]])[0]
        assert not any(data[:64] in text for data in _DATA), index


# --------------------------------------------------------------------------- conversations
def user(index: int, *media: Block, text: str = "") -> HumanMessage:
    body: list[str | dict[str, Any]] = [{"type": "text", "text": text or f"question {index}"}]
    body.extend(media)
    return HumanMessage(body, id=f"h{index}")


def reply(index: int) -> AIMessage:
    return AIMessage(f"answer {index}", id=f"a{index}")


def turns(media: Callable[[], Block], count: int) -> list[BaseMessage]:
    """``count`` user turns, each with one media block and a text reply."""
    messages: list[BaseMessage] = [SystemMessage("You look at what users send.", id="sys")]
    for index in range(count):
        messages += [user(index, media()), reply(index)]
    return messages


def graph(
    store: SummaryStore, keep: int | None, extra: dict[str, Any] | None = None, **kwargs: Any
) -> Any:
    config: dict[str, Any] = {**NO_TRIGGER, **(extra or {})}
    pruning = dict(config.pop("pruning", {}))
    if keep is not None:
        pruning["media_keep_last"] = keep
    return create_compaction_graph({**config, "pruning": pruning}, store=store, **kwargs)


def run(compaction: Any, messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], Any]:
    out = compaction.invoke({"messages": list(messages)}, RUN)
    return out["llm_input_messages"], out["compaction"]


# --------------------------------------------------------------------------- the rule
@pytest.mark.parametrize("fmt", sorted(MEDIA))
def test_old_media_become_references_and_recent_ones_stay(store: SummaryStore, fmt: str) -> None:
    history = turns(MEDIA[fmt], 4)  # media in user turns 0..3
    before = copy.deepcopy(history)
    sent, report = run(graph(store, 2), history)

    # turns 0 and 1 are older than the last two user turns: their media are references
    replaced = [1, 3]
    for index, message in enumerate(sent):
        if index in replaced:
            assert dumped([message]) == dumped([expected_copy(history[index])])
            assert message.content[0] is history[index].content[0]  # other blocks: the same
        else:
            assert dumped([message]) == dumped([history[index]]), index
    no_data(sent, replaced)
    assert [m.id for m in sent] == [m.id for m in history]
    assert dumped(history) == dumped(before)  # the conversation is never altered
    assert isinstance(report, CompactionReport)
    assert (report.action, report.media_replaced, report.pruned_count) == ("pruned", 2, 0)


@pytest.mark.parametrize(
    "fmt", ["openai-image_url-https", "responses-input_image", "anthropic-image", "standard-file"]
)
def test_media_of_tool_results_and_ai_messages_too(store: SummaryStore, fmt: str) -> None:
    media = MEDIA[fmt]
    call = {"name": "screenshot", "args": {}, "id": "call-1", "type": "tool_call"}
    history: list[BaseMessage] = [
        user(0, text="take a screenshot"),
        AIMessage("", tool_calls=[call], id="a0"),
        ToolMessage([{"type": "text", "text": "taken"}, media()], tool_call_id="call-1", id="t0"),
        AIMessage([{"type": "text", "text": "here it is"}, media()], id="a1"),
        user(1, text="thanks"),
        reply(1),
    ]
    sent, report = run(graph(store, 1), history)

    for index in (2, 3):
        assert dumped([sent[index]]) == dumped([expected_copy(history[index])])
    assert isinstance(sent[1], AIMessage) and isinstance(history[1], AIMessage)
    assert sent[1].tool_calls == history[1].tool_calls
    assert isinstance(sent[2], ToolMessage) and sent[2].tool_call_id == "call-1"
    assert dumped(sent[4:]) == dumped(history[4:])
    assert (report.media_replaced, report.repaired_pairs) == (2, 0)


def test_media_inside_an_anthropic_tool_result_block(store: SummaryStore) -> None:
    inner = MEDIA["anthropic-image"]()
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [inner]}
    history: list[BaseMessage] = [
        HumanMessage([result, {"type": "text", "text": "what is on it?"}], id="h0"),
        reply(0),
        user(1),
    ]
    sent, report = run(graph(store, 1), history)

    assert sent[0].content == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [reference_block(inner)]},
        {"type": "text", "text": "what is on it?"},
    ]
    assert history[0].content[0]["content"] == [inner]  # type: ignore[index]
    assert report.media_replaced == 1


def test_keep_zero_replaces_every_media_but_the_leading_system_ones(store: SummaryStore) -> None:
    image = MEDIA["standard-image-url"]
    history: list[BaseMessage] = [SystemMessage([{"type": "text", "text": "logo:"}, image()])]
    history += [user(0, image()), reply(0), user(1, image())]
    sent, report = run(graph(store, 0), history)

    assert dumped(sent[:1]) == dumped(history[:1])
    for index in (1, 3):
        assert dumped([sent[index]]) == dumped([expected_copy(history[index])])
    assert report.media_replaced == 2


def test_fewer_user_turns_than_kept_leave_the_input_alone(store: SummaryStore) -> None:
    history = turns(MEDIA["anthropic-image"], 3)
    sent, report = run(graph(store, 3), history)
    assert dumped(sent) == dumped(history)
    assert (report.action, report.media_replaced) == ("passthrough", 0)


def test_an_injected_summary_is_not_a_user_turn(store: SummaryStore) -> None:
    """Only real user messages start a turn: a summary message (name ``summary``) does not."""
    history = turns(MEDIA["standard-image-url"], 2)
    history.append(HumanMessage("Here is a summary...", name="summary", id="s"))
    sent, report = run(graph(store, 1), history)
    assert dumped(sent[3:]) == dumped(history[3:])  # turn 1 is still the last one
    assert report.media_replaced == 1


def test_off_by_default(store: SummaryStore) -> None:
    history = turns(MEDIA["openai-image_url-data"], 4)
    for compaction in (graph(store, None), graph(store, None, {"pruning": {"enabled": True}})):
        sent, report = run(compaction, history)
        assert dumped(sent) == dumped(history)
        assert (report.action, report.media_replaced) == ("passthrough", 0)


# --------------------------------------------------------------------------- stable bytes
def test_same_history_same_bytes_in_this_process_and_the_next(store: SummaryStore) -> None:
    history = turns(MEDIA["standard-image-base64"], 5)
    first, _ = run(graph(store, 2), history)
    compaction = graph(store, 2)
    again = [run(compaction, history)[0] for _ in range(2)]
    assert dumped(first) == dumped(again[0]) == dumped(again[1])


def test_bytes_change_only_where_a_user_turn_ages_out(store: SummaryStore) -> None:
    """Replayed turn by turn: a call without a new user turn extends the last input byte for
    byte; a new user turn changes only the turn that just aged out (the prompt cache keeps
    everything before it)."""
    image, audio = MEDIA["standard-image-base64"], MEDIA["openai-input_audio"]
    call = {"name": "look", "args": {}, "id": "", "type": "tool_call"}
    conversation: list[BaseMessage] = [SystemMessage("You look.", id="sys")]
    for turn in range(6):
        conversation.append(user(turn, image() if turn % 2 else audio()))
        conversation.append(AIMessage("", tool_calls=[{**call, "id": f"c{turn}"}], id=f"x{turn}"))
        conversation.append(
            ToolMessage([image()], tool_call_id=f"c{turn}", id=f"t{turn}", name="look")
        )
        conversation.append(reply(turn))
    compaction = graph(store, 2)
    previous: list[str] = []
    user_starts: list[int] = []
    for size in range(2, len(conversation) + 1):
        history = conversation[:size]
        if not isinstance(history[-1], HumanMessage | ToolMessage):
            continue  # the agent calls its model after a user message or a tool result only
        if isinstance(history[-1], HumanMessage):
            user_starts.append(size - 1)
        sent, report = run(compaction, history)
        now = dumped(sent)
        pairs = enumerate(zip(previous, now, strict=False))
        same = next((i for i, (a, b) in pairs if a != b), len(previous))
        if isinstance(history[-1], HumanMessage) and len(user_starts) > 2:
            aged_out = user_starts[-3]  # the turn that just left the last two
            assert same == aged_out, size
            assert report.media_replaced == 2 * (len(user_starts) - 2)
        else:
            assert same == len(previous), size  # the previous input is a prefix of this one
        previous = now


def test_an_edited_history_is_derived_again(store: SummaryStore) -> None:
    """A fork back to fewer turns is not served the longer history's copies (and back again)."""
    history = turns(MEDIA["standard-image-url"], 3)
    compaction = graph(store, 1)
    long_input, _ = run(compaction, history)
    short_input, report = run(compaction, history[:3])
    assert dumped(short_input) == dumped(history[:3])
    assert report.media_replaced == 0
    edited = [*history[:1], user(0, MEDIA["anthropic-image"]()), *history[2:]]
    sent, report = run(compaction, edited)
    assert dumped(sent[1:2]) == dumped([expected_copy(edited[1])])
    assert dumped(run(compaction, history)[0]) == dumped(long_input)


def test_each_copy_is_made_and_counted_once_per_thread(store: SummaryStore) -> None:
    """A growing thread derives its old media from its new messages only: each replaced
    message is copied and counted once, however many calls follow."""
    counted: list[str] = []

    def counter(messages: Sequence[BaseMessage]) -> int:
        counted.extend(str(m.content) for m in messages)
        return estimate_tokens(messages)

    conversation = turns(MEDIA["standard-image-url"], 12)
    compaction = graph(store, 2, token_counter=counter)
    for size in range(3, len(conversation) + 1, 2):  # after each user message
        run(compaction, conversation[:size])
    references = [c for c in counted if "'text': '[image:" in c]
    assert len(references) == len(set(references)) == 10  # turns 0..9 aged out, once each


# --------------------------------------------------------------------------- what it counts
def test_counted_tokens_are_those_of_the_copy(store: SummaryStore) -> None:
    history = turns(MEDIA["standard-image-base64"], 4)
    _, plain = run(graph(store, None), history)
    sent, media = run(graph(store, 2), history)
    by_hand = [expected_copy(m) if i in (1, 3) else m for i, m in enumerate(history)]
    _, written = run(graph(store, None), by_hand)
    assert dumped(sent) == dumped(by_hand)

    assert media.tokens_before == plain.tokens_before  # the conversation as the agent sends it
    assert media.tokens_after == written.tokens_before < plain.tokens_after
    assert media.gauge.input_tokens == media.tokens_after


def test_replaced_media_can_spare_a_summary(store: SummaryStore, tmp_path: Path) -> None:
    history = turns(MEDIA["openai-image_url-data"], 6)
    _, plain = run(graph(store, None), history)
    _, shrunk = run(graph(store, 1), history)
    assert shrunk.tokens_after < plain.tokens_before
    between = {
        "trigger": {"type": "tokens", "value": (shrunk.tokens_after + plain.tokens_before) // 2},
        "keep": {"type": "messages", "value": 4},
    }

    summarizer = RecordingSummarizer()
    _, report = run(graph(store, 1, between, model=summarizer), history)
    assert (report.action, report.summary_calls, summarizer.call_count) == ("pruned", 0, 0)
    assert report.tokens_after == shrunk.tokens_after
    assert report.media_replaced == 5

    with closing(SummaryStore(f"sqlite:///{tmp_path / 'other.db'}")) as other:
        _, without = run(graph(other, None, between, model=summarizer), history)
    assert (without.action, summarizer.call_count) == ("summarized", 1)


def test_with_a_summary_in_use_the_kept_messages_are_copies(store_url: str) -> None:
    """After a summary, old media among the kept messages are references too; a second
    process reusing the stored summary sends the same bytes (SQLite and PostgreSQL)."""
    history = turns(MEDIA["standard-image-url"], 8)
    settings = {
        "trigger": {"type": "messages", "value": 12},
        "keep": {"type": "messages", "value": 6},
    }
    summarizer = RecordingSummarizer()
    with closing(SummaryStore(store_url)) as store:
        sent, report = run(graph(store, 1, settings, model=summarizer), history)
    assert report.action == "summarized"
    assert summarizer.call_count == report.summary_calls > 0
    kept = sent[2:]  # system, summary, then the kept messages
    originals = history[-len(kept) :]
    assert [m.id for m in kept] == [m.id for m in originals]
    assert dumped(kept[:-2]) == dumped(
        [expected_copy(m) if m.type == "human" else m for m in originals[:-2]]
    )
    assert dumped(kept[-2:]) == dumped(originals[-2:])
    assert report.media_replaced == sum(m.type == "human" for m in originals[:-2])

    with closing(SummaryStore(store_url)) as other:  # another process: the store only
        reused, again = run(graph(other, 1, settings, model=summarizer), history)
    assert (again.action, summarizer.call_count) == ("reused", report.summary_calls)
    assert dumped(reused) == dumped(sent)


PRUNING: dict[str, Any] = {
    "enabled": True,
    "keep_last_assistants": 0,
    "min_prunable_tool_chars": 1000,
    "soft_trim": {"max_chars": 500, "head_chars": 100, "tail_chars": 100},
}


def tool_turn(turn: int, result: list[str | dict[str, Any]]) -> list[BaseMessage]:
    call = {"name": "read", "args": {}, "id": f"c{turn}", "type": "tool_call"}
    return [
        AIMessage("", tool_calls=[call], id=f"x{turn}"),
        ToolMessage(result, tool_call_id=f"c{turn}", id=f"t{turn}", name="read"),
    ]


def test_pruning_and_old_media_together(store: SummaryStore) -> None:
    """A tool result pruning treats keeps its pruned copy; other old media are references."""
    image = MEDIA["standard-image-url"]
    history = [user(0, image()), *tool_turn(0, [{"type": "text", "text": "x" * 6000}, image()])]
    for turn in range(1, 4):
        history += [reply(turn), user(turn, text=f"next {turn} " + "y" * 400)]
    _, copies = run(graph(store, 2), history)
    soft_only = {**PRUNING, "hard_clear": {"enabled": False}}
    settings = {"trigger": {"type": "tokens", "value": copies.tokens_after - 100}}
    sent, report = run(graph(store, 2, {**settings, "pruning": soft_only}), history)

    assert (report.action, report.pruned_count, report.media_replaced) == ("pruned", 1, 1)
    assert isinstance(sent[2].content, str)  # pruning's copy: soft trimmed, image omitted
    assert sent[2].content.endswith("[image omitted]")
    assert dumped(sent[:1]) == dumped([expected_copy(history[0])])
    assert dumped(sent[3:]) == dumped(history[3:])


def test_pruning_counts_old_media_as_their_copies(store: SummaryStore) -> None:
    """Pruning crosses a trigger only when the context, old media counted as their copies,
    reaches it: an old image spares a large tool result its trimming."""
    history = [user(0, MEDIA["standard-image-base64"]()), reply(0), user(1)]
    history += [*tool_turn(1, [{"type": "text", "text": "x" * 6000}]), reply(1), user(2)]
    _, plain = run(graph(store, None), history)
    _, copies = run(graph(store, 1), history)
    assert copies.tokens_after < plain.tokens_before
    between = (copies.tokens_after + plain.tokens_before) // 2
    settings = {"trigger": {"type": "tokens", "value": between}, "pruning": PRUNING}

    sent, report = run(graph(store, 1, settings), history)
    assert (report.action, report.pruned_count, report.media_replaced) == ("pruned", 0, 1)
    assert dumped(sent[1:]) == dumped(history[1:])  # the tool result as it is
    _, without = run(graph(store, None, settings), history)
    assert without.pruned_count == 1  # counted with the image, the same context crosses


# --------------------------------------------------------------------------- ways in
async def test_async_path_gives_the_same_input(store: SummaryStore) -> None:
    history = turns(MEDIA["anthropic-image"], 4)
    sync_input, _ = await asyncio.to_thread(run, graph(store, 1), history)  # off the loop
    out = await graph(store, 1).ainvoke({"messages": history}, RUN)
    assert dumped(out["llm_input_messages"]) == dumped(sync_input)
    assert out["compaction"].media_replaced == 3
    await asyncio.sleep(0)


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    llm_input_messages: Annotated[list[AnyMessage], UntrackedValue]
    compaction: Annotated[CompactionReport | None, UntrackedValue]


def test_in_a_parent_graph_the_checkpoint_keeps_every_media(store: SummaryStore) -> None:
    seen: list[list[AnyMessage]] = []

    def agent(state: AgentState) -> dict[str, Any]:
        seen.append(state["llm_input_messages"])
        return {"messages": [AIMessage(f"seen {len(seen)}", id=f"r{len(seen)}")]}

    builder = StateGraph(AgentState)
    builder.add_node("compaction", graph(store, 1))
    builder.add_node("agent", agent)
    builder.add_edge(START, "compaction")
    builder.add_edge("compaction", "agent")
    parent = builder.compile(checkpointer=InMemorySaver())
    image = MEDIA["standard-image-base64"]
    for turn in range(3):
        parent.invoke({"messages": [user(turn, image())]}, RUN)  # type: ignore[call-overload]

    history = parent.get_state(RUN).values["messages"]
    assert [m.content[1] for m in history if m.type == "human"] == [image()] * 3
    last = seen[-1]
    assert [m.id for m in last] == [m.id for m in history[:-1]]
    assert dumped([last[0], last[2]]) == dumped(
        [expected_copy(m) for m in (history[0], history[2])]
    )
    assert dumped(last[4:]) == dumped(history[4:-1])


def test_create_agent_middleware_sends_the_copy(store: SummaryStore) -> None:
    """Through ``CompactionMiddleware``: the model gets references, the state keeps the data."""
    model = FakeToolCallingModel()
    middleware = CompactionMiddleware(
        {**NO_TRIGGER, "pruning": {"media_keep_last": 1}}, store=store
    )
    agent = create_agent(model, middleware=[middleware], checkpointer=InMemorySaver())
    image = MEDIA["responses-input_image"]
    for turn in range(3):
        agent.invoke({"messages": [user(turn, image())]}, RUN)

    history = agent.get_state(RUN).values["messages"]
    assert [m.content[1] for m in history if m.type == "human"] == [image()] * 3
    sent = model.calls[-1]
    assert [m.id for m in sent] == [m.id for m in history[:-1]]
    assert dumped([sent[0], sent[2]]) == dumped(
        [expected_copy(m) for m in (history[0], history[2])]
    )
    assert sent[0].content[1] == {"type": "input_text", "text": media_reference(image())}
    assert dumped(sent[4:]) == dumped(history[4:-1])
