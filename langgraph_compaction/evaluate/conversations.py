"""Reading the conversations the evaluation replays, from a file or a LangGraph checkpointer.

A team's conversations come as LangChain message dicts (``messages_to_dict``) or as OpenAI
chat messages, one conversation a JSON line or the whole file one JSON value, or as the
latest state of a thread in the agent's own checkpointer (DESIGN 6.14). Every reading ends in
the same ``Conversation``; anything it cannot read raises ``EvaluationInputError`` with one
line naming the file line (``FILE:LINE``, ``FILE[INDEX]``) or the thread and what is wrong, so
the command can exit 2 before it replays anything.

OpenAI dicts are checked and built here rather than by ``convert_to_messages``: that accepts
roles no chat export has (``remove``, ``function``), and a tool message without
``tool_call_id`` or arguments that are not JSON fail in it with a bare ``KeyError`` or
``JSONDecodeError`` that names no message.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psycopg
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    messages_from_dict,
)
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from psycopg.conninfo import make_conninfo
from pydantic import ValidationError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from langgraph_compaction.evaluate.records import Conversation, EvaluationInputError

__all__ = ["read_checkpointer", "read_file", "to_messages"]

SCHEMAS = "(LangChain message dicts or OpenAI chat messages)"
OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool")
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
CONNECT_TIMEOUT = 10
"""Seconds to wait for a PostgreSQL server before saying it is unreachable."""


def read_file(path: Path) -> tuple[Conversation, ...]:
    """The conversations in a JSON Lines file (one a line) or a file holding one JSON value
    (a list of conversations, or one conversation). A message without an id gets
    ``<n>-<i>`` (the n-th conversation of the file from 1, message index i) so that two
    replays of one file give the same ids."""
    text = _read_text(path)
    lines = [(n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip()]
    if not lines:
        raise EvaluationInputError(f"{path}: no conversations (the file is empty)")
    start, first_line = lines[0]
    try:  # a first line that is JSON alone makes a JSON Lines file; else one value spans lines
        value = json.loads(first_line, strict=False)
    except ValueError:
        units = _units(_loads(text, str(path), whole=True), path, start)
    else:
        units = (
            [(f"{path}:{n}", _loads(line, f"{path}:{n}")) for n, line in lines]
            if len(lines) > 1
            else _units(value, path, start)
        )
    return tuple(_conversation(value, where, n) for n, (where, value) in enumerate(units, 1))


def read_checkpointer(url: str, threads: Sequence[str]) -> tuple[Conversation, ...]:
    """Each thread's latest ``messages`` in a LangGraph checkpointer: ``sqlite:///PATH`` (or a
    ``.db``/``.sqlite``/``.sqlite3`` path), opened read-only, or a PostgreSQL URL."""
    shown = _shown(url)
    if not threads:
        raise EvaluationInputError(f"{shown}: no thread given to read")
    with ExitStack() as stack:
        saver = _open_saver(url, shown, f"thread {threads[0]}", stack)
        return tuple(_read_thread(saver, t, n, shown) for n, t in enumerate(threads, 1))


def to_messages(raw: Sequence[object], where: str) -> tuple[BaseMessage, ...]:
    """LangChain messages from LangChain dicts, OpenAI chat messages or messages already
    built; ``where`` opens every error (``FILE:LINE: message I ...``, I from 0). Ids are kept
    as given (None when absent)."""
    if not raw:
        raise EvaluationInputError(f"{where}: empty conversation (no messages)")
    return tuple(_to_message(item, f"{where}: message {i}") for i, item in enumerate(raw))


def _to_message(item: object, at: str) -> BaseMessage:
    if isinstance(item, BaseMessage):
        return item
    if not isinstance(item, dict):
        raise EvaluationInputError(f"{at} is {_kind(item)}, not a message object {SCHEMAS}")
    try:
        if "role" in item:
            return _from_openai(item, at)
        if "type" in item and "data" in item:
            return _from_langchain(item, at)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(part) for part in first["loc"])
        raise EvaluationInputError(f"{at}: {place}: {first['msg']}") from None
    keys = ", ".join(sorted(map(str, item))) or "none"
    raise EvaluationInputError(
        f"{at} has neither 'role' nor 'type' and 'data' (keys: {keys}), which no schema "
        f"accepts {SCHEMAS}"
    )


def _from_langchain(item: dict[str, Any], at: str) -> BaseMessage:
    kind, data = item["type"], item["data"]
    if not isinstance(data, dict):
        raise EvaluationInputError(f"{at}: 'data' is {_kind(data)}, not an object")
    if kind in ("tool", "ToolMessageChunk") and not isinstance(data.get("tool_call_id"), str):
        raise EvaluationInputError(f"{at} is a tool message without a tool_call_id")
    try:
        (message,) = messages_from_dict([item])
    except ValidationError:
        raise
    except (ValueError, TypeError) as exc:
        if "unexpected message type" in str(exc):
            raise EvaluationInputError(
                f"{at} has type {kind!r}, which no schema accepts {SCHEMAS}"
            ) from None
        raise EvaluationInputError(f"{at}: {_one_line(exc)}") from None
    if isinstance(message, RemoveMessage):
        raise EvaluationInputError(f"{at} is a RemoveMessage, an instruction, not a message")
    return message


def _from_openai(item: dict[str, Any], at: str) -> BaseMessage:
    role, name = item["role"], item.get("name")
    if role not in OPENAI_ROLES:
        raise EvaluationInputError(f"{at} has role {role!r}, which no schema accepts {SCHEMAS}")
    if name is not None and not isinstance(name, str):
        raise EvaluationInputError(f"{at}: 'name' is {_kind(name)}, not a string")
    extra: dict[str, Any] = {"name": name} if name else {}
    if item.get("id") is not None:
        extra["id"] = item["id"]
    tool_calls = item.get("tool_calls") or []
    if role == "assistant" and tool_calls:
        calls = _tool_calls(tool_calls, at)
        return AIMessage(content=_content(item, at, nullable=True), tool_calls=calls, **extra)
    content = _content(item, at, nullable=False)
    if role == "user":
        return HumanMessage(content=content, **extra)
    if role == "assistant":
        return AIMessage(content=content, **extra)
    if role == "tool":
        call_id = item.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise EvaluationInputError(f"{at} is a tool message without a tool_call_id")
        return ToolMessage(content=content, tool_call_id=call_id, **extra)
    if role == "developer":  # as LangChain's own conversion marks it, for OpenAI's models
        extra["additional_kwargs"] = {"__openai_role__": "developer"}
    return SystemMessage(content=content, **extra)


def _content(item: dict[str, Any], at: str, *, nullable: bool) -> str | list[str | dict[Any, Any]]:
    content = item.get("content")
    if content is None and nullable:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise EvaluationInputError(
            f"{at}: content is {_kind(content)}, not a string or a list of parts"
            + ("" if nullable else " (null only beside tool_calls)")
        )
    for j, part in enumerate(content):
        if not (isinstance(part, dict) and isinstance(part.get("type"), str)):
            raise EvaluationInputError(f"{at}: content part {j} is not an object with a 'type'")
    return list(content)


def _tool_calls(raw: object, at: str) -> list[ToolCall]:
    if not isinstance(raw, list):
        raise EvaluationInputError(f"{at}: tool_calls is {_kind(raw)}, not a list")
    calls: list[ToolCall] = []
    for j, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise EvaluationInputError(f"{at}: tool call {j} has no function with a name")
        if not isinstance(call.get("id"), str):
            raise EvaluationInputError(f"{at}: tool call {j} has no id")
        arguments = function.get("arguments")
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError as exc:
            raise EvaluationInputError(
                f"{at}: tool call {j} has arguments that are not JSON ({_one_line(exc)})"
            ) from None
        if not isinstance(args, dict):
            raise EvaluationInputError(
                f"{at}: tool call {j} has arguments that are {_kind(args)}, not a JSON object"
            )
        calls.append(ToolCall(name=function["name"], args=args, id=call["id"], type="tool_call"))
    return calls


def _conversation(value: object, where: str, number: int) -> Conversation:
    name = where
    if isinstance(value, dict):
        if "messages" not in value:
            raise EvaluationInputError(f'{where}: a conversation object needs "messages"')
        raw, given = value["messages"], value.get("name")
        if given is not None and not isinstance(given, str):
            raise EvaluationInputError(f'{where}: "name" is {_kind(given)}, not a string')
        name = given or where
        if not isinstance(raw, list):
            raise EvaluationInputError(f'{where}: "messages" is {_kind(raw)}, not a list')
    elif isinstance(value, list):
        raw = value
    else:
        raise EvaluationInputError(
            f'{where}: a conversation is a list of messages or an object with "messages", '
            f"not {_kind(value)}"
        )
    return Conversation(name=name, messages=_with_ids(to_messages(raw, where), number))


def _units(value: object, path: Path, line: int) -> list[tuple[str, object]]:
    """A file's one value as (where, conversation) pairs: a list holding lists or conversation
    objects is a list of conversations, anything else one conversation."""
    if isinstance(value, list) and any(_is_conversation(item) for item in value):
        return [(f"{path}[{i}]", item) for i, item in enumerate(value)]
    return [(f"{path}:{line}", value)]


def _is_conversation(item: object) -> bool:
    return isinstance(item, list) or (isinstance(item, dict) and "messages" in item)


def _with_ids(messages: tuple[BaseMessage, ...], number: int) -> tuple[BaseMessage, ...]:
    return tuple(
        m if m.id else m.model_copy(update={"id": f"{number}-{i}"}) for i, m in enumerate(messages)
    )


def _loads(text: str, where: str, *, whole: bool = False) -> object:
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        at = f"{where}:{exc.lineno}" if whole else where
        raise EvaluationInputError(f"{at}: not JSON ({exc.msg} at column {exc.colno})") from None


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise EvaluationInputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise EvaluationInputError(f"{path}: a directory, not a file of conversations") from None
    except OSError as exc:
        raise EvaluationInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise EvaluationInputError(
            f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x} at byte {column} of the line)"
        ) from None


def _open_saver(url: str, shown: str, who: str, stack: ExitStack) -> BaseCheckpointSaver[str]:
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme.startswith("sqlite") or (not scheme and url.lower().endswith(SQLITE_SUFFIXES)):
        database = make_url(url).database if scheme else url
        if not database or database == ":memory:":
            raise EvaluationInputError(f"{who}: {shown} names no SQLite file")
        path = Path(database)
        if not path.is_file():
            raise EvaluationInputError(f"{who}: no SQLite file at {shown}")
        try:  # read-only: reading never creates or changes the agent's database
            conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise EvaluationInputError(f"{who}: cannot open {shown} ({exc})") from None
        stack.callback(conn.close)
        return SqliteSaver(conn)
    if scheme in ("postgres", "postgresql") or scheme.startswith("postgresql+"):
        conninfo = "postgresql" + url[len(scheme) :]  # psycopg knows no "+driver"
        if "connect_timeout" not in conninfo:
            conninfo = make_conninfo(conninfo, connect_timeout=CONNECT_TIMEOUT)
        try:
            return stack.enter_context(PostgresSaver.from_conn_string(conninfo))
        except psycopg.Error as exc:
            raise EvaluationInputError(
                f"{who}: cannot connect to {shown} ({_one_line(exc)})"
            ) from None
    raise EvaluationInputError(
        f"{who}: {shown} is not a checkpointer URL (sqlite:///PATH, a file ending "
        f"{'/'.join(SQLITE_SUFFIXES)}, or postgresql://...)"
    )


def _read_thread(
    saver: BaseCheckpointSaver[str], thread: str, number: int, shown: str
) -> Conversation:
    where = f"thread {thread}"
    try:
        found = saver.get_tuple({"configurable": {"thread_id": thread}})
    except (sqlite3.Error, psycopg.Error) as exc:
        raise EvaluationInputError(
            f"{where}: cannot read {shown} ({_one_line(exc)}; is it a LangGraph checkpointer's?)"
        ) from None
    if found is None:
        raise EvaluationInputError(f"{where}: no checkpoint in {shown}")
    values = found.checkpoint["channel_values"]
    if "messages" not in values:
        raise EvaluationInputError(f'{where}: the latest state in {shown} has no "messages"')
    raw = values["messages"]
    if not isinstance(raw, list):
        raise EvaluationInputError(f'{where}: "messages" in {shown} is not a list')
    return Conversation(name=where, messages=_with_ids(to_messages(raw, where), number))


def _shown(url: str) -> str:
    """The URL as errors print it: without its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _kind(value: object) -> str:
    """A JSON value's kind, as a reader of the file names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    names = {str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)
