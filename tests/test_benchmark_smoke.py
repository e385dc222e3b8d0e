"""The benchmarks run end to end in their quick mode and print their figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from traces import shared_data_dir

pytestmark = pytest.mark.slow  # each runs a benchmark in a child process
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
        "1-node",
        "ms",
        "2-node",
        "ms",
        "own",
        "ms",
        "counter",
        "ms",
        "passes",
        "own",
        "passes",
    ]
    assert "passthrough" in result.stdout
    assert "reuse" in result.stdout
    assert "restart" in result.stdout
    assert "[overhead]" in result.stderr  # progress goes to stderr


def test_precompaction_benchmark_quick_mode_runs() -> None:
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "precompaction.py"
    traces_absent = not (shared_data_dir() / "tau-bench-airline").is_dir()
    if traces_absent:
        pytest.skip(f"shared data {shared_data_dir()} is absent: the benchmark replays it")
    done = subprocess.run(
        [sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "p95 added latency with pre-compaction" in done.stdout


def test_agent_turn_quick_prints_both_configurations() -> None:
    """A real create_agent on SqliteSaver, with and without the middleware, in quick mode."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "agent_turn.py"
    done = subprocess.run(
        [sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("  1000")]
    assert [row[1] for row in rows] == ["passthrough", "reuse"]
    assert "[agent_turn]" in done.stderr  # progress goes to stderr
