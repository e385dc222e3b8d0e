"""Real agent traces from ``../shared/data/`` as LangChain message lists, for tests and benchmarks.

Three workloads, each described by the ``SOURCE.md`` next to its data:

- tau-bench airline (200 runs of gpt-4o with tool calls; tool-call ids reused within a run),
- SWE-Gym OpenHands (5 coding runs with large tool results and parallel calls),
- LoCoMo (10 very long two-person dialogues; CC BY-NC, so tests and benchmarks only).

The data folder is ``$COMPACTION_SHARED_DATA`` when set, else ``<repo>/../shared/data``. It is
not part of the package: every loader goes through `require_data`, which skips the calling
test (``pytest.skip``) when the folder is absent instead of failing it.

Every message gets a stable id, ``<set>-<run>-<index>`` (e.g. ``tau-3-1-17``), so prefix
hashes and stored summaries are reproducible from one run of the tests to the next. Loaders
build fresh message objects on every call (only the parsed JSON is cached), so a test that
mutates a message cannot leak into another.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)

from langgraph_compaction.evaluate.calls import model_call_points, tool_pair_violations

__all__ = [
    "DATA_ENV",
    "concatenate_sessions",
    "load_locomo",
    "load_swe_gym",
    "load_tau_bench_airline",
    "model_call_points",
    "require_data",
    "shared_data_dir",
    "tool_pair_violations",
]

DATA_ENV = "COMPACTION_SHARED_DATA"
"""Environment variable naming the folder that holds the data sets (overrides the default)."""

TAU_BENCH = "tau-bench-airline"
SWE_GYM = "swe-gym-openhands-sample"
LOCOMO = "locomo"


def shared_data_dir() -> Path:
    """The data sets' folder: ``$COMPACTION_SHARED_DATA``, else ``<repo>/../shared/data``."""
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override).expanduser().resolve()
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def require_data(name: str) -> Path:
    """Return the data set folder ``name``, or skip the calling test when it is absent."""
    path = shared_data_dir() / name
    if not path.is_dir():
        pytest.skip(
            f"shared data {path} is absent: put the data sets next to the checkout "
            f"(../shared/data/{name}) or set {DATA_ENV} to the folder that holds {name}/"
        )
    return path


@functools.cache
def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as file:
        return json.load(file)


def _tool_calls(raw_calls: Sequence[dict[str, Any]], where: str) -> list[ToolCall]:
    """OpenAI ``tool_calls`` -> LangChain ToolCalls, ids kept exactly (duplicates included)."""
    calls = []
    for raw in raw_calls:
        function = raw["function"]
        args = json.loads(function["arguments"] or "{}")
        if not isinstance(args, dict):
            raise ValueError(f"{where}: tool call {raw['id']} has non-object arguments {args!r}")
        calls.append(ToolCall(name=function["name"], args=args, id=raw["id"], type="tool_call"))
    return calls


def _openai_messages(raw_messages: Sequence[dict[str, Any]], prefix: str) -> list[BaseMessage]:
    """Map OpenAI Chat Completions messages to LangChain messages with ids ``<prefix>-<i>``."""
    messages: list[BaseMessage] = []
    for i, raw in enumerate(raw_messages):
        msg_id = f"{prefix}-{i}"
        content = raw.get("content") or ""  # assistant content is null beside tool calls
        role = raw["role"]
        if role == "system":
            messages.append(SystemMessage(content=content, id=msg_id))
        elif role == "user":
            messages.append(HumanMessage(content=content, id=msg_id))
        elif role == "assistant":
            calls = _tool_calls(raw.get("tool_calls") or (), msg_id)
            messages.append(AIMessage(content=content, tool_calls=calls, id=msg_id))
        elif role == "tool":
            messages.append(
                ToolMessage(
                    content=content,
                    tool_call_id=raw["tool_call_id"],
                    name=raw.get("name"),
                    id=msg_id,
                )
            )
        else:
            raise ValueError(f"{msg_id}: unknown role {role!r}")
    return messages


def load_tau_bench_airline() -> list[list[BaseMessage]]:
    """The 200 tau-bench airline runs (50 tasks x 4 trials), in file order.

    Ids are ``tau-<task_id>-<trial>-<i>``. Tool-call ids are kept as in the data, where 49
    runs reuse an id for a later, different call: pair tool results by position.
    """
    path = require_data(TAU_BENCH) / "gpt-4o-airline.json"
    return [
        _openai_messages(run["traj"], f"tau-{run['task_id']}-{run['trial']}")
        for run in _read_json(path)
    ]


def load_swe_gym() -> list[list[BaseMessage]]:
    """The 5 SWE-Gym OpenHands CodeAct runs, in file order.

    The data already holds structured OpenAI ``tool_calls`` (``execute_bash``,
    ``str_replace_editor``, ``finish``), so they become real ``AIMessage.tool_calls``; nothing
    is parsed out of text. Every run ends with an unanswered tool call (kept: a compactor
    must neither drop nor "repair" it). Ids are ``swe-<instance_id>-<i>``.
    """
    path = require_data(SWE_GYM) / "sample_raw.json"
    return [
        _openai_messages(run["messages"], f"swe-{run['instance_id']}") for run in _read_json(path)
    ]


def load_locomo(*, session_dates: bool = True) -> list[list[BaseMessage]]:
    """The 10 LoCoMo conversations, sessions in order, one message per turn.

    Speaker A (``speaker_a``) plays the user (``HumanMessage``) and speaker B the assistant
    (``AIMessage``); ``name`` holds the speaker's first name. Some sessions open with
    speaker B, so two same-role messages can meet at a session boundary. A turn that shared a
    photo gets ``" [shared a photo: <blip_caption>]"`` appended, as the caption is all a
    text model can see of it. With ``session_dates`` the first turn of each session starts
    with ``"[<session date_time>] "``: many QA answers are relative to it. ``dia_id``, the
    session number and its date are in ``response_metadata`` (for mapping QA evidence).
    Ids are ``locomo-<sample_id>-<i>``. CC BY-NC: never ship this data in the package.
    """
    path = require_data(LOCOMO) / "locomo10.json"
    conversations: list[list[BaseMessage]] = []
    for sample in _read_json(path):
        conversation = sample["conversation"]
        messages: list[BaseMessage] = []
        session = 1
        while f"session_{session}" in conversation:
            date = conversation.get(f"session_{session}_date_time", "")
            for k, turn in enumerate(conversation[f"session_{session}"]):
                text = turn["text"]
                if turn.get("blip_caption"):
                    text = f"{text} [shared a photo: {turn['blip_caption']}]"
                if session_dates and k == 0 and date:
                    text = f"[{date}] {text}"
                fields: dict[str, Any] = {
                    "content": text,
                    "name": turn["speaker"],
                    "id": f"locomo-{sample['sample_id']}-{len(messages)}",
                    "response_metadata": {
                        "dia_id": turn["dia_id"],
                        "session": session,
                        "session_date_time": date,
                    },
                }
                is_user = turn["speaker"] == conversation["speaker_a"]
                messages.append(HumanMessage(**fields) if is_user else AIMessage(**fields))
            session += 1
        conversations.append(messages)
    return conversations


def concatenate_sessions(runs: Sequence[Sequence[BaseMessage]], n: int) -> list[BaseMessage]:
    """The first ``n`` runs as one long session, e.g. to push tau-bench past a context window.

    Only the first run's leading system message is kept; later system messages are dropped,
    since one agent has one system prompt (tau-bench's is the same 6k-character policy in
    every run). Message ids stay unique (they name their run); tool-call ids may then repeat
    across runs as well as within them. The message objects are shared with ``runs``.
    """
    if not 1 <= n <= len(runs):
        raise ValueError(f"n must be between 1 and {len(runs)} (the number of runs), got {n}")
    session: list[BaseMessage] = []
    for run in runs[:n]:
        session.extend(m for m in run if not (session and isinstance(m, SystemMessage)))
    return session
