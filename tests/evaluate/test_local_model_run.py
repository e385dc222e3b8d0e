"""The command end to end with the local model (llama.cpp's server, SmolLM2-135M) as the
summarizer, the agent and the judge, on one short conversation. A 135M model's questions,
answers and grades are poor: this checks the plumbing (every call goes over HTTP to a real
server, structured output included), never the wording."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from _evaluate_support import evaluate, support_conversation, write_conversations

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from _small_model import SMALL_MODEL_SUMMARY_PROMPT, SMALL_MODEL_UPDATE_PROMPT

pytestmark = pytest.mark.slow  # seconds per model call
LOCAL_MODEL_ENV = "COMPACTION_LOCAL_MODEL_URL"


def test_the_local_model_summarizes_answers_and_judges(tmp_path: Path) -> None:
    url = os.environ.get(LOCAL_MODEL_ENV)
    if not url:
        pytest.skip(
            f"no local model server: {LOCAL_MODEL_ENV} is not set (.ci/run and scripts/demo "
            "start llama.cpp's server with SmolLM2-135M-Instruct and set it)"
        )
    config = tmp_path / "compaction.yaml"
    config.write_text(
        json.dumps(
            {
                "trigger": {"type": "tokens", "value": 300},
                "keep": {"type": "messages", "value": 4},
                "max_summary_tokens": 128,
                "parameters": {"extra_body": {"max_tokens": 128}},
                "summary_prompt": SMALL_MODEL_SUMMARY_PROMPT,
                "update_prompt": SMALL_MODEL_UPDATE_PROMPT,
            }
        )
    )
    conversations = write_conversations(tmp_path / "one.jsonl", [support_conversation(4)])
    out = tmp_path / "run.json"
    result = evaluate(
        conversations,
        "--config",
        config,
        "--agent-model",
        "local",
        "--judge",
        "local",
        "--json",
        out,
        "--html",
        tmp_path / "run.html",
        local_url=url,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["settings"]["model"] == "local"  # no --model: the local model summarizes
    run = data["results"][0]
    assert len(run["calls"]) == 8
    summarized = [c for c in run["calls"] if c["action"] == "summarized"]
    assert summarized and all(c["summary_input_tokens"] > 0 for c in summarized)
    assert run["compactions"]
    for probe in run["probes"]:
        assert probe["kind"] in {"fact", "artifact", "next_step", "decision"}
        assert isinstance(probe["right_compacted"], bool) and isinstance(probe["right_full"], bool)
    assert "total" in result.stdout
