"""The agent-loop example runs offline: it summarizes, reuses, and a second process reuses too.

Its files stay where a person can open them, and its last lines say how.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "agent_loop.py"


def _run(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COMPACTION_LOCAL_MODEL_URL"}
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_agent_loop_streams_compaction_and_a_second_process_reuses(tmp_path: Path) -> None:
    first = _run("--data-dir", str(tmp_path), "--turns", "18")
    assert "summarizer: offline stand-in" in first
    actions = re.findall(r"^turn +\d+\.\d +(\w+) ", first, flags=re.MULTILINE)
    assert actions.index("summarized") < actions.index("reused")
    assert ">> context_compacting" in first and ">> context_compacted" in first
    assert "the checkpoint holds 52 messages" in first  # 18 turns, 8 of them with a tool call

    second = _run("--data-dir", str(tmp_path), "--say", "Thanks!")
    assert re.search(r"^turn 19\.1 +reused ", second, flags=re.MULTILINE), second
    assert "1 model calls, 0 summary calls" in second
    assert "the checkpoint holds 54 messages" in second


@pytest.mark.slow
def test_the_files_stay_and_the_run_says_how_to_look_at_them(tmp_path: Path) -> None:
    out = _run("--data-dir", str(tmp_path), "--turns", "16")

    store = tmp_path / "compaction.db"
    assert store.stat().st_size > 0 and (tmp_path / "checkpoints.db").exists()
    tail = out[out.index("Two ways to look at them:") :]
    command = tail.splitlines()[2].strip().rstrip("\\").split() + tail.splitlines()[3].split()
    assert command[1:4] == ["-m", "langgraph_compaction.store", "inspect"], command
    assert f"open {store} in any SQLite browser" in tail
    # The printed command works as printed (the URL is quoted for a shell).
    argv = [sys.executable, *command[1:]]
    argv[argv.index("--url") + 1] = argv[argv.index("--url") + 1].strip("'")
    shown = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    assert "v1  id " in shown.stdout and "## Goal" in shown.stdout

    # A new replay starts afresh in the same folder instead of appending to the old thread.
    again = _run("--data-dir", str(tmp_path), "--turns", "16")
    assert "(removed the previous run's compaction.db, checkpoints.db" in again
    assert "the checkpoint holds 46 messages" in again


@pytest.mark.slow
def test_help_documents_the_data_dir() -> None:
    out = _run("--help")

    assert "--data-dir" in out and "demo-data/ in the checkout" in " ".join(out.split())
