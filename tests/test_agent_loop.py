"""The agent-loop example runs offline: it summarizes, reuses, and a second process reuses too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

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
