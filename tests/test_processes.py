"""A summary made by one process is reused by the next, through the SQLite file alone.

Every process here is a fresh interpreter running ``tests/_reuse_worker.py``: it builds the
store, the summarizer (a `RecordingSummarizer`) and the compaction graph afresh, runs its
steps and reports each as a JSON line on stdout. Process A compacts a long conversation
once; the tests copy A's store file and start the later processes on the copy.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _reuse_worker import EDITED_INDEX, EDITED_TEXT, TURNS, conversation

pytestmark = pytest.mark.slow  # the fixtures run worker processes
WORKER = Path(__file__).with_name("_reuse_worker.py")
THREAD = "thread-across-processes"

Result = dict[str, Any]


class Worker:
    """One worker process, started at once so that independent processes overlap."""

    def __init__(self, db: Path, *steps: str, thread: str = THREAD) -> None:
        self.steps = steps
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-W",
                "error",
                str(WORKER),
                "--db",
                str(db),
                "--thread",
                thread,
                *steps,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=WORKER.parent,
        )

    def results(self) -> list[Result]:
        """Wait for the process; its JSON lines, one per step (warnings are errors there)."""
        try:
            stdout, stderr = self.process.communicate(timeout=180)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.communicate()
        assert self.process.returncode == 0, stderr
        results = [json.loads(line) for line in stdout.splitlines() if line.strip()]
        assert [r["step"] for r in results] == list(self.steps), stdout
        return results


def run_worker(db: Path, *steps: str) -> list[Result]:
    """Run one worker in a fresh interpreter and wait for it."""
    return Worker(db, *steps).results()


def copy_store(source: Path, folder: Path) -> Path:
    """A copy of A's store file (with its WAL side files, if SQLite left any)."""
    target = folder / "summaries.db"
    for suffix in ("", "-wal", "-shm"):
        side = source.with_name(source.name + suffix)
        if side.exists():
            shutil.copy(side, target.with_name(target.name + suffix))
    return target


@pytest.fixture(scope="module")
def process_a(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result]:
    """Process A: compact the base conversation once; the store file and A's report."""
    db = tmp_path_factory.mktemp("process_a") / "summaries.db"
    (result,) = run_worker(db, "base")
    return db, result


AfterA = dict[str, tuple[Path, list[Result]]]


@pytest.fixture(scope="module")
def after_a(process_a: tuple[Path, Result], tmp_path_factory: pytest.TempPathFactory) -> AfterA:
    """The processes that follow A, each on its own copy of A's file, run side by side."""
    db_a, _ = process_a
    plans = {
        "reuse": ("base", "extended"),
        "edit_cold": ("edited",),
        "edit_warm": ("base", "edited"),
    }
    workers = {}
    for name, steps in plans.items():
        db = copy_store(db_a, tmp_path_factory.mktemp(name))
        workers[name] = (db, Worker(db, *steps))
    # Two processes compacting the same conversation at once, on a new file of their own.
    racing = tmp_path_factory.mktemp("racing") / "summaries.db"
    for name in ("race_1", "race_2"):
        workers[name] = (racing, Worker(racing, "base", "base"))
    return {name: (db, worker.results()) for name, (db, worker) in workers.items()}


def test_process_a_summarizes_the_long_conversation(process_a: tuple[Path, Result]) -> None:
    _, a = process_a
    assert a["action"] == "summarized"
    assert a["summarizer_calls"] >= 1
    assert a["summary_version"] == 1
    assert a["summary_count"] == 1
    assert len(a["llm_input"]) < a["input_messages"]
    (row,) = a["store"]
    assert row["id"] == a["summary_id"] and row["kind"] == "initial"
    assert a["summary_text"].endswith(row["summary"])


def test_process_b_reuses_a_summary_without_a_model_call(
    process_a: tuple[Path, Result], after_a: AfterA
) -> None:
    _, a = process_a
    _, (same, extended) = after_a["reuse"]
    assert same["pid"] != a["pid"]

    assert same["action"] == "reused"
    assert same["summarizer_calls"] == 0
    assert same["summary_id"] == a["summary_id"]
    # Reusing reproduces the model input byte for byte (provider prompt caches key on it).
    assert json.dumps(same["llm_input"]) == json.dumps(a["llm_input"])

    assert extended["action"] == "reused"
    assert extended["summarizer_calls"] == 0
    assert extended["summary_id"] == a["summary_id"]
    assert extended["input_messages"] == a["input_messages"] + 4
    assert extended["llm_input"][: len(a["llm_input"])] == a["llm_input"]
    assert len(extended["llm_input"]) == len(a["llm_input"]) + 4
    assert extended["store"] == a["store"], "reuse must not write a new summary"


def _sentence(index: int) -> str:
    """The first sentence of a message of the base conversation (it repeats inside it)."""
    content = conversation(TURNS)[index].content
    assert isinstance(content, str)
    return content.split(". ")[0]


def _assert_fresh_summary_of_edit(edited: Result, a: Result) -> None:
    assert edited["action"] == "summarized"
    assert edited["summarizer_calls"] >= 1
    assert edited["summary_id"] != a["summary_id"]
    assert edited["summary_text"] != a["summary_text"]
    assert edited["summary_count"] == 1
    sent = " ".join(edited["transcripts"])
    assert EDITED_TEXT in sent
    assert _sentence(EDITED_INDEX) not in sent
    assert _sentence(EDITED_INDEX + 2) in sent  # the next user message: the check can see
    # The old summary's text is never sent, neither to the model nor as a "previous summary".
    stale = next(row["summary"] for row in a["store"] if row["id"] == a["summary_id"])
    assert stale not in edited["summary_text"]
    assert all(stale not in transcript for transcript in edited["transcripts"])
    new_row = next(row for row in edited["store"] if row["id"] == edited["summary_id"])
    assert new_row["kind"] == "initial" and new_row["parent_id"] is None
    assert new_row["version"] == 2
    # The edited message itself went into the summary, not into the kept window.
    kept_ids = [m["data"]["id"] for m in edited["llm_input"]]
    assert conversation(TURNS)[EDITED_INDEX].id not in kept_ids


def test_edited_history_in_a_fresh_process_gets_a_fresh_summary(
    process_a: tuple[Path, Result], after_a: AfterA
) -> None:
    _, a = process_a
    db, (edited,) = after_a["edit_cold"]
    _assert_fresh_summary_of_edit(edited, a)

    # A third process finds both lineages and serves each history its own summary.
    edited_again, base_again = run_worker(db, "edited", "base")
    assert edited_again["action"] == "reused"
    assert edited_again["summarizer_calls"] == 0
    assert edited_again["summary_id"] == edited["summary_id"]
    assert edited_again["llm_input"] == edited["llm_input"]
    assert base_again["action"] == "reused"
    assert base_again["summarizer_calls"] == 0
    assert base_again["summary_id"] == a["summary_id"]
    assert base_again["llm_input"] == a["llm_input"]


def test_edited_history_after_a_reuse_in_the_same_process_gets_a_fresh_summary(
    process_a: tuple[Path, Result], after_a: AfterA
) -> None:
    _, a = process_a
    # The first step warms the process's caches (token counts, prefix hashes) on the
    # original content of the message that the second step rewrites under the same id.
    _, (same, edited) = after_a["edit_warm"]
    assert same["action"] == "reused" and same["summary_id"] == a["summary_id"]
    _assert_fresh_summary_of_edit(edited, a)


def test_two_processes_compacting_at_once_store_one_summary(after_a: AfterA) -> None:
    """Both may summarize; the unique key keeps one row and both serve that row."""
    _, (one, one_again) = after_a["race_1"]
    _, (two, two_again) = after_a["race_2"]
    assert one["pid"] != two["pid"]
    assert {one["action"], two["action"]} <= {"summarized", "reused"}
    assert "summarized" in {one["action"], two["action"]}
    assert one["summary_id"] == two["summary_id"]
    assert one["llm_input"] == two["llm_input"]
    assert len(two_again["store"]) == len(one_again["store"]) == 1
    assert one_again["action"] == two_again["action"] == "reused"
    assert one_again["summary_id"] == two_again["summary_id"] == one["summary_id"]
