"""The README's Python snippets run, in order, so the README cannot drift from the code."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

README = Path(__file__).resolve().parents[1] / "README.md"


def _snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # create_react_agent is deprecated
def test_readme_snippets_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text(
        "summarization:\n  trigger: {type: tokens, value: 2000}\n  maxSummaryTokens: 300\n"
    )
    module = types.ModuleType("readme_snippets")  # type hints of snippet classes resolve here
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    namespace |= {
        "summarizer": RecordingSummarizer(),
        "agent_model": FakeToolCallingModel(),
        "checkpointer": InMemorySaver(),
        "tools": [],
        "inputs": {"messages": [HumanMessage("hello")]},
        "config": {"configurable": {"thread_id": "readme"}},
    }
    snippets = _snippets()
    assert len(snippets) >= 5
    for snippet in snippets:
        exec(compile(snippet, str(README), "exec"), namespace)
    assert namespace["config"].max_summary_tokens == 1024
    result = namespace["graph"].invoke(
        {"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "readme"}}
    )
    assert result["compaction"].action == "passthrough"
