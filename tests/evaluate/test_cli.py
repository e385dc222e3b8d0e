"""``python -m langgraph_compaction.evaluate`` as a user runs it: a subprocess, an
OpenAI-compatible stand-in server for the models, real stores and checkpointers."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from _evaluate_support import (
    REPO,
    evaluate,
    one_line_error,
    support_conversation,
    write_conversations,
)
from _openai_standin import StandIn, openai_standin
from _store_support import pg_schema, raw_transaction
from langchain_core.messages import AnyMessage, BaseMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph, add_messages
from sqlalchemy import text
from typing_extensions import TypedDict

from langgraph_compaction import SummaryStore

CONFIG = """summarization:
  trigger: {type: tokens, value: 700}
  keep: {type: messages, value: 6}
"""


@pytest.fixture(scope="module")
def standin() -> Iterator[StandIn]:
    with openai_standin() as server:
        yield server


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    config = tmp_path / "compaction.yaml"
    config.write_text(CONFIG)
    conversations = write_conversations(
        tmp_path / "conversations.jsonl",
        [support_conversation(10, tag="a"), support_conversation(4, tag="b")],
    )
    return {"config": config, "conversations": conversations, "dir": tmp_path}


def on_standin(
    standin: StandIn, files: dict[str, Path], *args: str | Path
) -> subprocess.CompletedProcess[str]:
    """The command on the test's conversations and config, the stand-in as summarizer."""
    return evaluate(
        files["conversations"],
        "--config",
        files["config"],
        "--model",
        "openai:standin",
        *args,
        base_url=standin.url,
    )


def test_a_file_gives_the_table_the_json_and_the_page(
    standin: StandIn, files: dict[str, Path]
) -> None:
    out, page = files["dir"] / "run.json", files["dir"] / "run.html"
    result = on_standin(standin, files, "--json", out, "--html", page)
    assert result.returncode == 0, result.stderr
    assert "jsonl:1" in result.stdout and "jsonl:2" in result.stdout and "total" in result.stdout
    assert "100%" in result.stderr and "call" in result.stderr  # the progress bar
    data = json.loads(out.read_text(encoding="utf-8"))
    first, second = data["results"]
    assert first["name"].endswith("conversations.jsonl:1") and len(first["calls"]) == 20
    assert (
        first["compactions"] and first["totals"]["tokens_with"] < first["totals"]["tokens_without"]
    )
    assert first["bill_with"]["summarizer"] > 0 and second["bill_with"]["summarizer"] == 0
    assert sum(first["totals"]["identifiers"].values()) == len(
        [f for f in first["fates"] if f["kind"] == "identifier"]
    )
    assert data["settings"]["model"] == "openai:standin"
    assert "claude-sonnet-4-5" in data["settings"]["prices"]
    assert data["settings"]["config"]["trigger"] == [{"type": "tokens", "value": 700}]
    summaries = [r for r in standin.requests if "ORD-" in json.dumps(r["messages"])]
    assert summaries, "the summarizer is the stand-in, reached over HTTP"
    assert page.read_text(encoding="utf-8").count("<svg") == 2


def test_probes_are_written_answered_and_graded(standin: StandIn, files: dict[str, Path]) -> None:
    out = files["dir"] / "run.json"
    result = on_standin(
        standin,
        files,
        "--agent-model",
        "openai:standin",
        "--judge",
        "openai:standin",
        "--json",
        out,
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    assert "100%" not in result.stderr  # --quiet: no progress bar
    first = json.loads(out.read_text(encoding="utf-8"))["results"][0]
    probes = first["probes"]
    assert probes and {p["call"] for p in probes} <= {c["call"] for c in first["compactions"]}
    assert all(p["question"] and p["expected"] and p["answer_full"] for p in probes)
    right_full = first["totals"]["probes_right_full"]
    assert right_full is not None and right_full >= first["totals"]["probes_right_compacted"]


def test_a_store_url_keeps_the_summaries(standin: StandIn, files: dict[str, Path]) -> None:
    database = files["dir"] / "kept.db"
    result = on_standin(standin, files, "--store", f"sqlite:///{database}", "--quiet")
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(database) as db:
        threads = [t for (t,) in db.execute("SELECT DISTINCT thread_id FROM compaction_summaries")]
    assert len(threads) == 1 and threads[0].startswith("evaluate-")
    store = SummaryStore(f"sqlite:///{database}")
    try:
        assert store.list_summaries(threads[0])[0].model == "standin"
    finally:
        store.close()


@pytest.mark.slow
def test_a_postgresql_store(standin: StandIn, files: dict[str, Path]) -> None:
    with pg_schema() as url:
        result = on_standin(standin, files, "--store", url, "--quiet")
        assert result.returncode == 0, result.stderr
        with raw_transaction(url) as connection:
            rows = connection.execute(text("SELECT thread_id, model FROM compaction_summaries"))
            threads = {(thread.split("-")[0], model) for thread, model in rows}
        assert threads == {("evaluate", "standin")}


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _checkpointed(path: Path, thread: str, messages: Sequence[BaseMessage]) -> str:
    """A real graph that records ``messages`` on ``thread`` in a SQLite checkpointer."""
    builder = StateGraph(State)
    builder.add_node("agent", lambda state: {})
    builder.add_edge(START, "agent")
    connection = sqlite3.connect(path, check_same_thread=False)
    graph = builder.compile(checkpointer=SqliteSaver(connection))
    half = len(messages) // 2
    config: Any = {"configurable": {"thread_id": thread}}
    for part in (messages[:half], messages[half:]):
        update: Any = {"messages": list(part)}
        graph.invoke(update, config)
    connection.close()
    return f"sqlite:///{path}"


def test_threads_of_a_checkpointer(standin: StandIn, files: dict[str, Path]) -> None:
    url = _checkpointed(files["dir"] / "agent.db", "t-1", support_conversation(8))
    out = files["dir"] / "run.json"
    result = evaluate(
        "--checkpointer",
        url,
        "--thread",
        "t-1",
        "--config",
        files["config"],
        "--model",
        "openai:standin",
        "--price-model",
        "openai:gpt-4.1",
        "--json",
        out,
        "--quiet",
        base_url=standin.url,
    )
    assert result.returncode == 0, result.stderr
    assert "thread t-1" in result.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [r["name"] for r in data["results"]] == ["thread t-1"]
    assert len(data["results"][0]["calls"]) == 16
    assert "openai:gpt-4.1" in data["settings"]["prices"]
    unknown = evaluate(
        "--checkpointer", url, "--thread", "t-2", "--model", "openai:standin", base_url=standin.url
    )
    assert "t-2" in one_line_error(unknown)


def test_a_prices_file_sets_the_bill(standin: StandIn, files: dict[str, Path]) -> None:
    prices = files["dir"] / "prices.yaml"
    prices.write_text("agent: {input: 1000000, output: 0}\n")  # a dollar a token, no cache
    out = files["dir"] / "run.json"
    result = on_standin(standin, files, "--prices", prices, "--json", out, "--quiet")
    assert result.returncode == 0, result.stderr
    first = json.loads(out.read_text(encoding="utf-8"))["results"][0]
    assert first["bill_without"]["total"] == pytest.approx(first["totals"]["tokens_without"])
    summary_in = sum(c["summary_input_tokens"] for c in first["calls"])
    assert first["bill_with"]["total"] == pytest.approx(first["totals"]["tokens_with"] + summary_in)


@pytest.mark.parametrize(
    ("lines", "named"),
    [
        (['[{"role": "user", "content": "hi"}]', '{"role": "user", "content": '], ":2: not JSON"),
        (['[{"role": "robot", "content": "beep"}]'], ":1: message"),
    ],
    ids=["not-json", "no-schema"],
)
def test_a_bad_line_is_named_and_nothing_is_written(
    tmp_path: Path, lines: list[str], named: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, page = tmp_path / "run.json", tmp_path / "run.html"
    error = one_line_error(evaluate(path, "--model", "openai:x", "--json", out, "--html", page))
    assert f"{path}{named}" in error
    assert not out.exists() and not page.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    assert str(missing) in one_line_error(evaluate(missing, "--model", "openai:x"))


def test_a_model_that_cannot_be_reached_is_named(files: dict[str, Path]) -> None:
    out = files["dir"] / "run.json"
    result = evaluate(
        files["conversations"],
        "--model",
        "openai:standin",
        "--json",
        out,
        base_url="http://127.0.0.1:9/v1",  # the discard port: nothing listens
    )
    error = one_line_error(result)
    assert "--model openai:standin: cannot be reached" in error
    assert not out.exists()


def test_without_a_model_it_names_both_ways(files: dict[str, Path]) -> None:
    error = one_line_error(evaluate(files["conversations"]))
    assert "--model provider:model" in error and "COMPACTION_LOCAL_MODEL_URL" in error


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--judge", "openai:standin"], "--judge openai:standin: needs --agent-model"),
        (["--config", "missing.yaml"], "--config config file not found: missing.yaml"),
        (
            ["--json", "no/such/folder/run.json"],
            "no/such/folder/run.json: its folder does not exist",
        ),
        (["--thread", "t-1"], "--thread needs --checkpointer"),
        (["--model", "gpt-4.1"], "--model gpt-4.1: name a model as provider:model"),
    ],
    ids=["judge-alone", "config", "json-folder", "thread-alone", "model-name"],
)
def test_bad_options_are_named(files: dict[str, Path], args: list[str], named: str) -> None:
    assert named in one_line_error(evaluate(files["conversations"], *args))


def test_without_the_extra_it_names_the_extra(files: dict[str, Path]) -> None:
    blocker = (
        "import sys, runpy\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'genai_prices':\n"
        "            raise ModuleNotFoundError(\"No module named 'genai_prices'\", name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "sys.argv = ['evaluate', sys.argv[1]]\n"
        "runpy.run_module('langgraph_compaction.evaluate', run_name='__main__')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", blocker, str(files["conversations"])],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    error = one_line_error(result)
    assert "pip install 'langgraph-compaction[evaluate]'" in error and "genai_prices" in error


def test_a_conversation_mode_config_summarizes_with_the_agents_model(
    standin: StandIn, files: dict[str, Path]
) -> None:
    config = files["dir"] / "conversation.yaml"
    config.write_text(CONFIG + "  summary_context: conversation\n")
    out = files["dir"] / "run.json"
    result = evaluate(
        files["conversations"], "--config", config, "--model", "openai:standin",
        "--json", out, "--quiet", base_url=standin.url,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    first = json.loads(out.read_text(encoding="utf-8"))["results"][0]
    assert first["compactions"] and first["bill_with"]["summarizer"] > 0
    # The summary call is the conversation itself, then one request: no transcript prompt.
    asks = [r["messages"] for r in standin.requests if "Stop the task here" in json.dumps(r)]
    assert asks and all(len(messages) > 2 for messages in asks)
