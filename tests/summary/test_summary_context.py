"""``summary_context: "conversation"`` (DESIGN 6.15): the summary call rides the agent's cache.

The agent's own model gets what the agent's own call would get without a new summary, byte
for byte (the system prompt, the same tools with tool use off, the same messages), then one
request. So its messages start with the previous agent call's input, which a provider has
cached. A reply with a tool call fails the summary; an input over the window falls back to the
transcript; a summarizer given for this mode is refused when the agent is built.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from _doors import DOORS, MODES, TRIGGER, Door, Mode, build_agent, history, run, thread_config
from conversations import graph_input
from fakes import RecordingSummarizer, ai_tool_call
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from summarizing_agent import AgentSummarizerModel, BoundCall
from traces import load_swe_gym, model_call_points

from langgraph_compaction import (
    CompactionConfig,
    CompactionMiddleware,
    SummaryStore,
    create_compaction_graph,
)
from langgraph_compaction.errors import CompactionConfigError
from langgraph_compaction.pipeline.records import Partition
from langgraph_compaction.summary.conversation import (
    CONVERSATION_REQUEST_OPENING,
    conversation_instruction,
    sendable,
)
from langgraph_compaction.summary.prompts import INSTRUCTIONS_HEADING

CONVERSATION = {**TRIGGER, "summary_context": "conversation"}
SYSTEM_PROMPT = "你是部署助手。أجب بلغة المستخدم. Отвечай кратко."
TURNS = (
    "继续 请检查 deploy_9.yaml 的端口",
    "تابع: راجع الملف deploy_9.yaml",
    "Дальше: проверь deploy_9.yaml",
    "继续 再运行一次测试",
    "تابع: شغّل الاختبارات مرة أخرى",
    "Ещё раз: порт 8080 в deploy_9.yaml",
)


@tool
def lookup(query: str) -> str:
    """查找部署文件 (يبحث في ملفات النشر)."""
    return f"found: {query}"


TOOLS: tuple[BaseTool, ...] = (lookup,)


def _bytes(messages: tuple[BaseMessage, ...] | list[BaseMessage]) -> list[str]:
    return [json.dumps(message_to_dict(m), sort_keys=True, ensure_ascii=False) for m in messages]


async def _drive(
    store: SummaryStore,
    door: Door,
    mode: Mode,
    config: dict[str, Any],
    model: AgentSummarizerModel,
    thread: str,
    turns: tuple[str, ...] = TURNS,
    **control: Any,
) -> None:
    """Six messages, then one user turn per run: the trigger fires, later fires again."""
    agent = build_agent(
        door,
        model,
        InMemorySaver(),
        store,
        config,
        fallback_model=None if door == "middleware" else model,
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
    )
    await run(agent, {"messages": history(6)}, thread_config(thread, **control), mode)
    for n, text in enumerate(turns):
        turn = {"messages": [HumanMessage(text, id=f"turn-{n}")]}
        await run(agent, turn, thread_config(thread, **control), mode)


def _summary_calls(model: AgentSummarizerModel) -> list[tuple[BoundCall, BoundCall]]:
    """Each summary call with the agent call right before it."""
    calls = model.bound_calls
    return [(calls[i - 1], call) for i, call in enumerate(calls) if call.is_summary and i > 0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", DOORS)
async def test_the_summary_call_starts_with_the_previous_calls_input_byte_for_byte(
    store: SummaryStore, door: Door, mode: Mode
) -> None:
    model = AgentSummarizerModel()
    thread = f"conversation-{door}-{mode}"
    await _drive(store, door, mode, CONVERSATION, model, thread)
    pairs = _summary_calls(model)
    assert len(pairs) == 2, [c.is_summary for c in model.bound_calls]  # the first, its update
    assert not model.bound_calls[0].is_summary
    for previous, summary in pairs:
        assert not previous.is_summary
        sent, request = summary.messages[:-1], summary.messages[-1]
        # The previous agent call's whole input, then what came since, then one request.
        assert _bytes(sent[: len(previous.messages)]) == _bytes(previous.messages)
        assert len(sent) == len(previous.messages) + 2  # its reply, the new user turn
        assert isinstance(sent[0], SystemMessage) and sent[0].content == SYSTEM_PROMPT
        assert isinstance(request, HumanMessage)
        assert request.text.startswith(CONVERSATION_REQUEST_OPENING)
        assert re.search(r"The last \d+ messages? of the conversation above", request.text)
        # The same tools, with tool use switched off; the summary's own cap.
        assert summary.kwargs["tools"] == previous.kwargs["tools"]
        assert [t["function"]["name"] for t in summary.kwargs["tools"]] == ["lookup"]
        assert summary.kwargs["tool_choice"] == "none"
        assert previous.kwargs.get("tool_choice") in (None, "auto")
        assert summary.kwargs["max_tokens"] == CompactionConfig().max_summary_tokens
    first, update = (call for _, call in pairs)
    assert "opens with the summary of its earlier part" not in first.messages[-1].text
    assert "opens with the summary of its earlier part" in update.messages[-1].text
    assert any(m.name == "summary" for m in update.messages[:-1])  # the summary in use
    records = await store.alist_summaries(thread)
    assert len(records) == 2
    assert all(r.summary.startswith("Summary of what was read:") for r in records)
    assert all(r.model == model.model_name for r in records)
    # The agent's next call uses the new summary.
    assert model.saw_summary(-1)


@pytest.mark.parametrize(("door", "mode"), [("parent", "async"), ("middleware", "sync")])
async def test_the_instructions_close_the_request(
    store: SummaryStore, door: Door, mode: Mode
) -> None:
    model = AgentSummarizerModel()
    config = {**CONVERSATION, "summary_instructions": "保留所有端口号 (احتفظ بأرقام المنافذ)"}
    await _drive(
        store, door, mode, config, model, f"instr-{door}", TURNS[:2], instruction="Порты важны"
    )
    ((_, summary),) = _summary_calls(model)
    request = summary.messages[-1].text
    tail = request.split(INSTRUCTIONS_HEADING)[1]
    assert "保留所有端口号 (احتفظ بأرقام المنافذ)" in tail and "Порты важны" in tail
    assert "language the user writes in" in request


@pytest.mark.parametrize(("door", "mode"), [("parent", "sync"), ("middleware", "async")])
async def test_a_reply_with_a_tool_call_is_a_failed_summary(
    store: SummaryStore, door: Door, mode: Mode
) -> None:
    call = ai_tool_call("lookup", {"query": "deploy_9.yaml"}, "call-1", content="查找")
    model = AgentSummarizerModel(summary_reply=call)
    thread = f"tool-call-{door}-{mode}"
    await _drive(store, door, mode, CONVERSATION, model, thread, TURNS[:2])
    assert _summary_calls(model)
    assert await store.alist_summaries(thread) == []
    assert not model.saw_summary(-1)
    state = await store.athread_state(thread)
    assert state.consecutive_failures >= 1


async def test_an_input_over_the_window_falls_back_to_the_transcript(store: SummaryStore) -> None:
    model = AgentSummarizerModel()
    # The input stays small, but with the reply's cap it would not fit the window.
    config = {**CONVERSATION, "context_window": 3000, "max_summary_tokens": 2900}
    await _drive(store, "parent", "async", config, model, "over-window", TURNS[:2])
    ((_, summary),) = _summary_calls(model)
    (prompt,) = summary.messages
    assert isinstance(prompt, HumanMessage) and "<conversation>" in prompt.text
    assert "tools" not in summary.kwargs and summary.kwargs["max_tokens"] == 2900
    assert len(await store.alist_summaries("over-window")) == 1


async def test_a_model_refusing_tool_choice_none_gets_the_tools_bound_plainly(
    store: SummaryStore,
) -> None:
    model = AgentSummarizerModel(refuse_tool_choice_none=True)
    await _drive(store, "middleware", "async", CONVERSATION, model, "plain-bind", TURNS[:2])
    ((previous, summary),) = _summary_calls(model)
    assert summary.kwargs["tools"] == previous.kwargs["tools"]
    assert "tool_choice" not in summary.kwargs
    assert len(await store.alist_summaries("plain-bind")) == 1


class ChatAnthropic(AgentSummarizerModel):
    """Named as langchain-anthropic's model class: the provider whose cache a changed
    ``tool_choice`` invalidates."""


async def test_an_anthropic_model_keeps_the_agents_tool_choice(store: SummaryStore) -> None:
    # Anthropic: "Changes to tool_choice parameter only affect message blocks": switching tool
    # use off would bill the whole conversation again. The tools go as the agent sent them.
    model = ChatAnthropic()
    await _drive(store, "middleware", "async", CONVERSATION, model, "anthropic", TURNS[:2])
    ((previous, summary),) = _summary_calls(model)
    assert summary.kwargs["tools"] == previous.kwargs["tools"]
    assert summary.kwargs.get("tool_choice") == previous.kwargs.get("tool_choice")
    assert len(await store.alist_summaries("anthropic")) == 1


@pytest.mark.parametrize("door", DOORS)
async def test_the_transcript_stays_the_default(store: SummaryStore, door: Door) -> None:
    model = AgentSummarizerModel()
    await _drive(store, door, "async", dict(TRIGGER), model, f"default-{door}", TURNS[:2])
    ((_, summary),) = _summary_calls(model)
    (prompt,) = summary.messages
    assert isinstance(prompt, HumanMessage) and "<conversation>" in prompt.text
    assert "tools" not in summary.kwargs


def test_a_summarizer_given_for_the_conversation_is_refused_when_built(
    store: SummaryStore,
) -> None:
    summarizer = RecordingSummarizer()
    with pytest.raises(CompactionConfigError, match=r"summary_context.*model=.*remove"):
        CompactionMiddleware(CONVERSATION, model=summarizer, store=store)
    with pytest.raises(CompactionConfigError, match=r"summary_context.*model=.*transcript"):
        create_compaction_graph(CONVERSATION, model=summarizer, store=store)
    with pytest.raises(CompactionConfigError, match=r"model 'openai:gpt-4o-mini' cannot"):
        CompactionConfig.coerce({**CONVERSATION, "model": "openai:gpt-4o-mini"})
    # The transcript mode takes any summarizer, as before.
    create_compaction_graph(TRIGGER, model=summarizer, store=store)


def test_background_pre_compaction_sends_the_calls_own_input(store: SummaryStore) -> None:
    """A summary prepared in the background (DESIGN 6.7) rides the input of the call that
    started it, sent a moment before: the warmest prefix there is."""
    model = AgentSummarizerModel()
    config = {
        "trigger": {"type": "tokens", "value": 2000},
        "keep": {"type": "messages", "value": 6},
        "precompact_ratio": 0.6,
        "summary_context": "conversation",
    }
    graph = create_compaction_graph(
        config, fallback_model=model, store=store, tools=TOOLS, system_prompt=SYSTEM_PROMPT
    )
    agent = model.bind_tools(list(TOOLS))
    messages: list[BaseMessage] = []  # a new list each turn: a job reads the one it was given
    thread: RunnableConfig = {"configurable": {"thread_id": "background"}}
    for turn in range(16):
        text = f"{TURNS[turn % len(TURNS)]} #{turn} " + "x" * 300
        messages = [*messages, HumanMessage(text, id=f"q{turn}")]
        sent = graph.invoke(graph_input(messages), thread)["llm_input_messages"]
        messages = [*messages, agent.invoke([SystemMessage(content=SYSTEM_PROMPT), *sent])]
        deadline = time.monotonic() + 10
        while len(store.list_summaries("background")) < sum(
            c.is_summary for c in model.bound_calls
        ):
            assert time.monotonic() < deadline, "the background summary never landed"
            time.sleep(0.02)
    summaries = [c for c in model.bound_calls if c.is_summary]
    assert summaries and len(store.list_summaries("background")) == len(summaries)
    agent_inputs = [_bytes(c.messages) for c in model.bound_calls if not c.is_summary]
    for summary in summaries:
        assert summary.messages[-1].text.startswith(CONVERSATION_REQUEST_OPENING)
        # The very input of the call that started it: no message more, none less.
        assert _bytes(summary.messages[:-1]) in agent_inputs
        assert summary.kwargs["tool_choice"] == "none"


class _CacheSettings(AgentMiddleware):
    """Sets the request's cache settings, as Anthropic's prompt-caching middleware does."""

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(request.override(model_settings=CACHE_SETTINGS))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        return await handler(request.override(model_settings=CACHE_SETTINGS))


CACHE_SETTINGS = {"cache_control": {"type": "ephemeral", "ttl": "5m"}}


@pytest.mark.parametrize("mode", MODES)
async def test_the_requests_model_settings_reach_the_summary_call(
    store: SummaryStore, mode: Mode
) -> None:
    model = AgentSummarizerModel()
    compaction = CompactionMiddleware(CONVERSATION, store=store)
    agent = create_agent(
        model,
        tools=list(TOOLS),
        system_prompt=SYSTEM_PROMPT,
        middleware=[_CacheSettings(), compaction],  # the settings first: compaction reads them
        checkpointer=InMemorySaver(),
    )
    thread = thread_config(f"settings-{mode}")
    await run(agent, {"messages": history(6)}, thread, mode)
    for n, text in enumerate(TURNS[:2]):
        await run(agent, {"messages": [HumanMessage(text, id=f"turn-{n}")]}, thread, mode)
    ((previous, summary),) = _summary_calls(model)
    assert previous.kwargs["cache_control"] == CACHE_SETTINGS["cache_control"]
    assert summary.kwargs["cache_control"] == previous.kwargs["cache_control"]
    assert _bytes(summary.messages[: len(previous.messages)]) == _bytes(previous.messages)


def test_the_request_names_what_stays_verbatim_by_id_or_position() -> None:
    messages = [
        HumanMessage("请检查 src/app.py", id="h0"),
        HumanMessage("سأراجع الملف", id=None),
        HumanMessage("Проверь порт 8080", id="h2"),
        HumanMessage("继续", id="h3"),
    ]
    plan = Partition(3, (1,), (0,), None, "hash", "h2")
    text = conversation_instruction(messages, plan, "保留端口号")
    assert text.startswith(CONVERSATION_REQUEST_OPENING)
    assert "The last 1 message of the conversation above (from the message with id `h3` on)" in text
    assert "the message 3 from the end" in text  # the rescued one has no id
    assert "opens with the summary" not in text
    assert text.endswith(f"{INSTRUCTIONS_HEADING}\n保留端口号")
    everything = Partition(4, (), (0, 1, 2, 3), None, "h", "h3")
    whole = conversation_instruction(messages, everything, None)
    assert "Summarize the whole conversation above." in whole
    assert INSTRUCTIONS_HEADING not in whole


def test_the_summary_call_extends_the_input_as_sent_even_when_it_was_shortened() -> None:
    # A SWE-Gym run whose newest tool result was shortened to fit: the next summary call must
    # send that shortened copy again (the provider cached it), not the full result.
    run = load_swe_gym()[1]
    model = AgentSummarizerModel()
    with tempfile.TemporaryDirectory() as folder:
        store = SummaryStore(f"sqlite:///{Path(folder) / 'summaries.db'}")
        config = {
            "trigger": {"type": "tokens", "value": 6000},
            "keep": {"type": "messages", "value": 6},
            "summary_context": "conversation",
        }
        graph = create_compaction_graph(config, fallback_model=model, store=store)
        previous: list[str] | None = None
        checked = shortened = 0
        for end in model_call_points(run):
            before = len(model.bound_calls)
            out = graph.invoke(graph_input(run[:end]), {"configurable": {"thread_id": "swe"}})
            for call in model.bound_calls[before:]:
                if call.is_summary and previous is not None:
                    sent = _bytes(list(call.messages[: len(previous)]))
                    assert sent == previous, f"the summary call at {end}"
                    checked += 1
            previous = _bytes(out["llm_input_messages"])
            shortened += out["compaction"].shortened_count
        store.close()
    assert checked >= 2 and shortened >= 1


def test_a_lone_surrogate_is_replaced_only_in_the_message_that_holds_it() -> None:
    # A provider's API cannot take a lone surrogate (UTF-8): the agent's call could not have sent
    # it either, so only that message's copy changes; the others stay the objects they were.
    clean = HumanMessage("Где мой заказ ORD-7? 我的订单", id="u1")
    broken = ToolMessage("вывод \ud800 конец \x00", tool_call_id="c1", id="t1")
    call = ai_tool_call("lookup", {"q": "x\udfff"}, "c1", msg_id="a1")
    assert sendable(clean) is clean
    fixed = sendable(broken)
    assert fixed.content == "вывод \ufffd конец \ufffd" and fixed.id == "t1"
    assert isinstance(fixed, ToolMessage) and fixed.tool_call_id == "c1"
    fixed_call = sendable(call)
    assert isinstance(fixed_call, AIMessage) and fixed_call.tool_calls[0]["args"] == {
        "q": "x\ufffd"
    }
    for message in (fixed, fixed_call):
        message.model_dump_json().encode("utf-8")
