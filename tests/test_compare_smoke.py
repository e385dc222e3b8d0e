"""``benchmarks/compare.py --quick`` runs end to end and writes its table, JSON and progress."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from traces import shared_data_dir

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "compare.py"
WORKLOADS = ("tau-bench-airline", "swe-gym-openhands-sample", "locomo")


def test_compare_quick_writes_table_and_json(tmp_path: Path) -> None:
    pytest.importorskip(
        "langmem", reason="benchmark-only dependency: pip install -r benchmarks/requirements.txt"
    )
    pytest.importorskip(
        "bpe_openai", reason="benchmark-only dependency: pip install -r benchmarks/requirements.txt"
    )
    missing = [name for name in WORKLOADS if not (shared_data_dir() / name).is_dir()]
    if missing:
        pytest.skip(f"shared data {shared_data_dir()} lacks {', '.join(missing)}: it is replayed")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "[compare] replay tau: compaction" in done.stderr  # progress goes to stderr
    (result,) = tmp_path.glob("compare-*.json")
    report = json.loads(result.read_text(encoding="utf-8"))
    assert set(report["replay"]) == {"tau", "swe", "locomo"}
    for systems in report["replay"].values():
        assert set(systems) == {"compaction", "langchain", "langmem"}
        ours = systems["compaction"]
        assert ours["history_kept"] is True
        assert ours["violation_turns"] == 0
        billing = ours["billing"]
        assert 0 <= billing["cached_share"] <= 1
        assert billing["billed_per_100_turns"] > 0
    assert set(report["growth"]["tau"]) == {"100", "1000"}
    assert report["tokens"]["tau"]["calibrated"]["p95"] >= 0
    assert "| workload | system | turns |" in done.stdout
    assert "Billed input under prompt caching" in done.stdout
    assert result.with_suffix(".md").is_file()
