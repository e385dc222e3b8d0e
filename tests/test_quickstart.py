"""The quickstart demo runs offline end to end and shows a summary made, then reused."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


@pytest.mark.slow
def test_quickstart_summarizes_then_reuses() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    actions = re.findall(r"^turn +\d+\.\d +(\w+) ", result.stdout, flags=re.MULTILINE)
    assert "summarized" in actions
    assert "reused" in actions
    assert actions.index("summarized") < actions.index("reused")
    assert ">> context_compacting" in result.stdout
    assert ">> context_compacted" in result.stdout
    assert "llm_input_messages checkpointed: False" in result.stdout
