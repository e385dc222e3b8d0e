"""The overhead benchmark runs end to end (``--quick``) and prints its table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "overhead.py"


def test_overhead_quick_prints_the_table() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if line.strip())
    assert header.split() == [
        "size",
        "scenario",
        "median",
        "ms",
        "p95",
        "ms",
        "floor",
        "median",
        "ms",
        "overhead",
        "ms",
        "aim",
        "ms",
    ]
    assert "passthrough" in result.stdout
    assert "reuse" in result.stdout
    assert "[overhead]" in result.stderr  # progress goes to stderr
