"""``benchmarks/bill.py --quick`` runs end to end and writes its dollar table and JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from traces import shared_data_dir

from langgraph_compaction import CompactionConfig

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bill.py"
WORKLOADS = ("tau-bench-airline", "swe-gym-openhands-sample", "locomo")
PAIRS = {"sonnet-4.5+haiku-4.5", "gpt-4.1+4.1-mini", "4.1-mini+4.1-nano"}


@pytest.mark.slow
def test_bill_quick_writes_dollar_table_and_json(tmp_path: Path) -> None:
    pytest.importorskip(
        "langchain.agents.middleware.summarization",
        reason="benchmark-only dependency: pip install -r benchmarks/requirements.txt",
    )
    pytest.importorskip("genai_prices", reason="prices: pip install langgraph-compaction[evaluate]")
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
    assert "[bill] replay swe: compaction" in done.stderr  # progress goes to stderr
    (result,) = tmp_path.glob("bill-*.json")
    report = json.loads(result.read_text(encoding="utf-8"))
    expected = {"none", "compaction", "langchain", "masking-3", "masking-rolling-3"}
    expected.add("compaction+masking-3")
    if "summary_context" in CompactionConfig.model_fields:
        expected.add("compaction-conversation")
    else:
        assert "compaction-conversation rows skipped" in done.stdout
    rows = {(r["workload"], r["pair"], r["system"]): r for r in report["rows"]}
    assert set(rows) == {
        (w, p, s) for w in ("tau", "swe", "locomo") for p in PAIRS for s in expected
    }
    for (workload, pair, system), row in rows.items():
        assert row["total_usd"] == pytest.approx(row["agent_input_usd"] + row["summarizer_usd"])
        assert row["agent_input_usd"] > 0
        assert 0 <= row["compaction_share"] < 1
        if system in ("none", "langchain"):
            assert row["vs_" + ("none" if system == "none" else "langchain")] == 1
        if system == "none" or system.startswith("masking"):
            assert row["summarizer_usd"] == 0 and row["summary_calls"] == 0
        if workload == "swe" and system == "compaction":
            assert row["summary_calls"] > 0 and row["summarizer_usd"] > 0
        assert row["cache_read_tokens"] <= row["agent_input_tokens"]
        if pair.startswith("sonnet"):  # Anthropic: a breakpoint at the end of every call
            assert row["cache_write_tokens"] > 0
        else:  # OpenAI's automatic caching bills no writes
            assert row["cache_write_tokens"] == 0 and row["cache_read_tokens"] > 0
    for pair in PAIRS:  # the quick LoCoMo thread stays under the trigger: no system compacts
        totals = {rows[("locomo", pair, s)]["total_usd"] for s in expected}
        assert len(totals) == 1
    assert set(report["tool_heavy_verdict"]) == {"masking-3", "masking-rolling-3"} | {
        "compaction+masking-3"
    }
    text = result.with_suffix(".txt").read_text(encoding="utf-8")
    assert "workload pair" in text and "Masking cheaper than the default" in text
    assert text in done.stdout
