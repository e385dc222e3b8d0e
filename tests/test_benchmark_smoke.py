"""The benchmarks run end to end in their quick mode and print their figures."""

from __future__ import annotations

import json
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


def test_integrity_quick_prints_the_table_and_the_ledger_adds(tmp_path: Path) -> None:
    """The fake summarizer names no identifier: what the input holds of the covered part
    beyond the kept messages is the ledger's doing, and every user identifier is there."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "integrity.py"
    for name in ("tau-bench-airline", "swe-gym-openhands-sample", "locomo"):
        if not (shared_data_dir() / name).is_dir():
            pytest.skip(f"shared data {shared_data_dir()} is absent: the benchmark replays it")
    figures = tmp_path / "integrity.json"
    done = subprocess.run(
        [sys.executable, str(script), "--quick", "--json", str(figures)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert [row[0] for row in rows if row and row[0] in ("tau", "swe", "locomo")] == [
        "tau",
        "swe",
        "locomo",
    ]
    assert "[integrity]" in done.stderr  # progress goes to stderr
    workloads = json.loads(figures.read_text(encoding="utf-8"))["summarizers"]["fake"]["workloads"]
    for name, row in workloads.items():
        assert row["compactions"] >= 1, name
        assert row["failed_calls"] == 0, (name, row["errors"])
        assert row["ids_with"] > row["ids_without"], name
        assert row["user_with"] == 1.0, name
        assert 0 < row["ledger_tokens_median"] <= 400, name
        assert row["ms_per_200"] > 0, name
