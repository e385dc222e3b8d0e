"""Reading the conversations the evaluation replays: files in both message schemas and every
file shape, the one-line errors on bad input, and real LangGraph checkpointers (SQLite, and
PostgreSQL at 127.0.0.1:5432 through ``pg_url``, skipped without a server as the store tests
are)."""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    messages_to_dict,
)
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

from langgraph_compaction.evaluate.conversations import read_checkpointer, read_file, to_messages
from langgraph_compaction.evaluate.records import EvaluationInputError

MANY_LANGUAGES = "部署失败了 فشل النشر Развёртывание не удалось"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's folder as the working directory, so files are named as a user types them."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(name: str, text: str) -> Path:
    path = Path(name)
    path.write_text(text, encoding="utf-8")
    return path


def line(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def openai_chat() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You deploy services."},
        {"role": "developer", "content": "Answer briefly."},
        {"role": "user", "content": [{"type": "text", "text": "Why did the deploy fail?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_log", "arguments": '{"service": "api"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "read_log", "content": "ECONNREFUSED"},
        {"role": "assistant", "content": "The database refused connections.", "id": "given"},
    ]


def langchain_chat() -> list[BaseMessage]:
    return [
        HumanMessage("Read config.yaml", id="h1"),
        AIMessage("", tool_calls=[ToolCall(name="read", args={"path": "config.yaml"}, id="c1")]),
        ToolMessage("port: 8080", tool_call_id="c1"),
        AIMessage("It listens on 8080.", id="a2"),
    ]


def test_json_lines_in_both_schemas_with_names_and_ids(here: Path) -> None:
    path = write(
        "convs.jsonl",
        line(openai_chat()) + "\n\n" + line(messages_to_dict(langchain_chat())) + "\n",
    )
    first, second = read_file(path)
    assert (first.name, second.name) == ("convs.jsonl:1", "convs.jsonl:3")

    assert [type(m) for m in first.messages] == [
        SystemMessage,
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    assert first.messages[1].additional_kwargs == {"__openai_role__": "developer"}
    assert first.messages[2].content == [{"type": "text", "text": "Why did the deploy fail?"}]
    call = first.messages[3]
    assert isinstance(call, AIMessage) and call.content == ""
    assert call.tool_calls == [
        ToolCall(name="read_log", args={"service": "api"}, id="call_1", type="tool_call")
    ]
    result = first.messages[4]
    assert isinstance(result, ToolMessage)
    assert (result.tool_call_id, result.name) == ("call_1", "read_log")
    assert result.content == "ECONNREFUSED"
    assert [m.id for m in first.messages] == ["1-0", "1-1", "1-2", "1-3", "1-4", "given"]

    expected = langchain_chat()
    assert [m.id for m in second.messages] == ["h1", "2-1", "2-2", "a2"]
    for read, original in zip(second.messages, expected, strict=True):
        assert read.model_copy(update={"id": original.id}) == original
    assert read_file(path) == (first, second)  # the same ids on every reading


def test_a_json_list_of_conversations_pretty_printed(here: Path) -> None:
    named = {"name": "deploy incident", "messages": openai_chat()}
    path = write("all.json", json.dumps([messages_to_dict(langchain_chat()), named], indent=2))
    first, second = read_file(path)
    assert (first.name, second.name) == ("all.json[0]", "deploy incident")
    assert first.messages[0] == HumanMessage("Read config.yaml", id="h1")
    assert [m.id for m in second.messages][:2] == ["2-0", "2-1"]


@pytest.mark.parametrize("indent", [None, 2], ids=["one line", "pretty"])
def test_one_conversation_as_the_whole_file(here: Path, indent: int | None) -> None:
    path = write("one.json", "\n" + json.dumps(openai_chat(), indent=indent))
    (conversation,) = read_file(path)
    assert conversation.name == "one.json:2"  # the line it starts on
    assert len(conversation.messages) == 6


def test_the_object_form_on_a_json_line(here: Path) -> None:
    path = write(
        "named.jsonl",
        line({"messages": openai_chat(), "name": "ticket 42"})
        + "\r\n"  # written on Windows
        + line({"messages": openai_chat()}),
    )
    assert [c.name for c in read_file(path)] == ["ticket 42", "named.jsonl:2"]


def test_text_survives_unchanged(here: Path) -> None:
    """Three scripts, a NUL byte, a line separator inside a string (not a line of the file),
    and a lone surrogate written as JSON writes it, in both schemas."""
    text = f"{MANY_LANGUAGES}\x00 \u2028 SURROGATE"
    written = text.replace("SURROGATE", "\ud800")
    chat = openai_chat()
    chat[4]["content"] = text
    langchain = [HumanMessage(MANY_LANGUAGES), ToolMessage(text, tool_call_id="c1")]
    lines = [line(chat), line(messages_to_dict(langchain))]
    path = write("text.jsonl", "\n".join(lines).replace("SURROGATE", "\\ud800"))
    assert "\u2028" in path.read_text(encoding="utf-8")  # raw, as ensure_ascii=False writes it

    first, second = read_file(path)
    assert first.messages[4].content == written
    assert [m.content for m in second.messages] == [MANY_LANGUAGES, written]


def test_to_messages_keeps_ids_and_built_messages() -> None:
    built = HumanMessage("hi")
    messages = to_messages([built, {"role": "assistant", "content": "hello"}], "api")
    assert messages[0] is built
    assert messages[1] == AIMessage("hello")
    assert messages[1].id is None


ROBOT = "[" + ", ".join([line(m) for m in openai_chat()[:4]] + ['{"role": "robot"}']) + "]"
GOOD = line(openai_chat())


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            GOOD + '\n[{"role": "user" "content": "x"}]',
            "convs.jsonl:2: not JSON (Expecting ',' delimiter at column 18)",
        ),
        (
            GOOD + "\n" + ROBOT,
            "convs.jsonl:2: message 4 has role 'robot', which no schema accepts "
            "(LangChain message dicts or OpenAI chat messages)",
        ),
        (
            GOOD + '\n\n[{"type": "robot", "data": {"content": "beep"}}]',
            "convs.jsonl:3: message 0 has type 'robot', which no schema accepts "
            "(LangChain message dicts or OpenAI chat messages)",
        ),
        (
            line([{"role": "user", "content": "x"}, {"role": "tool", "content": "result"}]),
            "convs.jsonl:1: message 1 is a tool message without a tool_call_id",
        ),
        (
            line(
                [*messages_to_dict([HumanMessage("x")]), {"type": "tool", "data": {"content": "r"}}]
            ),
            "convs.jsonl:1: message 1 is a tool message without a tool_call_id",
        ),
        (
            GOOD + "\n" + GOOD.replace('{\\"service\\": \\"api\\"}', '[\\"api\\"]'),
            "convs.jsonl:2: message 3: tool call 0 has arguments that are a list, "
            "not a JSON object",
        ),
        (
            GOOD.replace('{\\"service\\": \\"api\\"}', "{service}"),
            "convs.jsonl:1: message 3: tool call 0 has arguments that are not JSON "
            "(Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        ),
        (
            line(messages_to_dict([AIMessage("x")])).replace(
                '"tool_calls": []', '"tool_calls": [{"name": "f", "args": [1], "id": "c"}]'
            ),
            "convs.jsonl:1: message 0: tool_calls.0.args: Input should be a valid dictionary",
        ),
        (GOOD + "\n[]", "convs.jsonl:2: empty conversation (no messages)"),
        ('{"messages": [], "name": "x"}', "convs.jsonl:1: empty conversation (no messages)"),
        (
            GOOD + '\n"hello"',
            'convs.jsonl:2: a conversation is a list of messages or an object with "messages", '
            "not a string",
        ),
        (
            "42",
            'convs.jsonl:1: a conversation is a list of messages or an object with "messages", '
            "not a number",
        ),
        ('{"name": "x"}', 'convs.jsonl:1: a conversation object needs "messages"'),
        (
            GOOD + '\n{"messages": {"role": "user"}}',
            'convs.jsonl:2: "messages" is an object, not a list',
        ),
        (
            "[[5]]",
            "convs.jsonl[0]: message 0 is a number, not a message object "
            "(LangChain message dicts or OpenAI chat messages)",
        ),
        (
            '[{"role": "user", "content": "x"}, {"content": "y"}]',
            "convs.jsonl:1: message 1 has neither 'role' nor 'type' and 'data' (keys: content), "
            "which no schema accepts (LangChain message dicts or OpenAI chat messages)",
        ),
        (
            '[{"role": "user", "content": null}]',
            "convs.jsonl:1: message 0: content is null, not a string or a list of parts "
            "(null only beside tool_calls)",
        ),
        (
            "[\n" + GOOD + ",\n" + GOOD + "\n" + GOOD + "\n]",
            "convs.jsonl:4: not JSON (Expecting ',' delimiter at column 1)",
        ),
        ("\n  \n", "convs.jsonl: no conversations (the file is empty)"),
    ],
    ids=[
        "not JSON",
        "unknown role",
        "unknown LangChain type",
        "tool without tool_call_id",
        "LangChain tool without tool_call_id",
        "arguments a list",
        "arguments not JSON",
        "LangChain arguments a list",
        "empty list",
        "empty object",
        "a string line",
        "a number file",
        "object without messages",
        "messages not a list",
        "a message not an object",
        "neither schema",
        "null content",
        "broken pretty JSON",
        "blank file",
    ],
)
def test_bad_files_name_the_line(here: Path, text: str, error: str) -> None:
    path = write("convs.jsonl", text)
    with pytest.raises(EvaluationInputError) as caught:
        read_file(path)
    assert str(caught.value) == error


def test_unreadable_files_are_named(here: Path) -> None:
    (here / "folder").mkdir()
    (here / "latin1.jsonl").write_bytes(GOOD.encode() + b'\n[{"role": "user", "content": "\xe9"}]')
    cases = {
        "missing.jsonl": "missing.jsonl: no such file",
        "folder": "folder: a directory, not a file of conversations",
        "latin1.jsonl": "latin1.jsonl:2: not UTF-8 (byte 0xe9 at byte 31 of the line)",
    }
    for name, error in cases.items():
        with pytest.raises(EvaluationInputError) as caught:
            read_file(Path(name))
        assert str(caught.value) == error


# The checkpointer: a real graph, run twice on one thread, read back as its latest state.


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def agent(state: Chat) -> dict[str, list[AnyMessage]]:
    """Calls a tool on what it was asked, then answers naming it (as a model would)."""
    asked = state["messages"][-1].text
    call_id = f"call-{len(state['messages'])}"
    return {
        "messages": [
            AIMessage("", tool_calls=[ToolCall(name="search", args={"q": asked}, id=call_id)]),
            ToolMessage(f"{MANY_LANGUAGES}: {asked}", tool_call_id=call_id, name="search"),
            AIMessage(f"Found it for {asked}"),
        ]
    }


def run_twice(saver: BaseCheckpointSaver[str], thread: str) -> list[BaseMessage]:
    """Two turns on ``thread``; the messages of its latest state, as LangGraph reads them."""
    graph = StateGraph(Chat).add_node(agent).add_edge(START, "agent").compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    graph.invoke({"messages": [HumanMessage("first question")]}, config)
    graph.invoke({"messages": [HumanMessage("第二个问题")]}, config)
    messages: list[BaseMessage] = graph.get_state(config).values["messages"]
    assert len(messages) == 8
    return messages


@pytest.fixture
def agent_db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "agent.db"
    conn = sqlite3.connect(path, check_same_thread=False)
    run_twice(SqliteSaver(conn), "t-1")
    conn.close()
    yield path


def test_sqlite_thread_latest_state(agent_db: Path) -> None:
    conn = sqlite3.connect(agent_db, check_same_thread=False)
    expected = run_twice(SqliteSaver(conn), "t-2")
    conn.close()
    for url in (f"sqlite:///{agent_db}", str(agent_db)):
        one, two = read_checkpointer(url, ["t-1", "t-2"])
        assert (one.name, two.name) == ("thread t-1", "thread t-2")
        assert list(two.messages) == expected
        assert [m.text for m in one.messages] == [m.text for m in expected]
        call = one.messages[5]
        assert isinstance(call, AIMessage)
        assert call.tool_calls == [
            ToolCall(name="search", args={"q": "第二个问题"}, id="call-5", type="tool_call")
        ]


def test_sqlite_errors_name_thread_and_url(agent_db: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{agent_db}"
    with pytest.raises(EvaluationInputError) as caught:
        read_checkpointer(url, ["t-1", "t-9"])
    assert str(caught.value) == f"thread t-9: no checkpoint in {url}"

    missing = tmp_path / "absent.sqlite"
    for given in (f"sqlite:///{missing}", str(missing)):
        with pytest.raises(EvaluationInputError) as caught:
            read_checkpointer(given, ["t-1"])
        assert str(caught.value) == f"thread t-1: no SQLite file at {given}"
    assert not missing.exists()

    other = tmp_path / "other.db"
    sqlite3.connect(other).close()  # a SQLite file, but no checkpointer's
    with pytest.raises(EvaluationInputError) as caught:
        read_checkpointer(str(other), ["t-1"])
    assert str(caught.value) == (
        f"thread t-1: cannot read {other} (attempt to write a readonly database; "
        "is it a LangGraph checkpointer's?)"
    )

    with pytest.raises(EvaluationInputError) as caught:
        read_checkpointer("mysql://me@db/agent", ["t-1"])
    assert str(caught.value).startswith("thread t-1: mysql://me@db/agent is not a checkpointer URL")


def test_a_state_without_messages(tmp_path: Path) -> None:
    class Counter(TypedDict):
        count: int

    path = tmp_path / "counter.db"
    conn = sqlite3.connect(path, check_same_thread=False)
    graph = (
        StateGraph(Counter)
        .add_node("step", lambda state: {"count": state["count"] + 1})
        .add_edge(START, "step")
        .compile(checkpointer=SqliteSaver(conn))
    )
    graph.invoke({"count": 1}, {"configurable": {"thread_id": "c"}})
    conn.close()
    with pytest.raises(EvaluationInputError) as caught:
        read_checkpointer(f"sqlite:///{path}", ["c"])
    assert str(caught.value) == f'thread c: the latest state in sqlite:///{path} has no "messages"'


def test_postgresql_thread_latest_state(pg_url: str) -> None:
    thread = f"t-{uuid.uuid4()}"
    with PostgresSaver.from_conn_string(pg_url) as saver:
        saver.setup()
        expected = run_twice(saver, thread)
    for url in (pg_url, pg_url.replace("postgresql://", "postgresql+psycopg://")):
        (conversation,) = read_checkpointer(url, [thread])
        assert conversation.name == f"thread {thread}"
        assert list(conversation.messages) == expected
    with pytest.raises(EvaluationInputError) as caught:
        read_checkpointer(pg_url, [f"t-{uuid.uuid4()}-unknown"])
    assert "no checkpoint in postgresql://" in str(caught.value)


def test_an_unreachable_postgresql_hides_the_password() -> None:
    url = "postgresql://postgres:s3cret@127.0.0.1:1/test"
    with pytest.raises(EvaluationInputError) as caught:
        read_checkpointer(url, ["t-1"])
    message = str(caught.value)
    assert message.startswith("thread t-1: cannot connect to postgresql://postgres:***@127.0.0.1:1")
    assert "s3cret" not in message and "\n" not in message
    assert os.linesep not in message
