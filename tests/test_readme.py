"""The README's Python snippets run, in order, so the README cannot drift from the code.

They run as written; only ``init_chat_model`` is replaced, at its import site, by an offline
stand-in (a scripted agent model answering at a real model's length, and the recording
summarizer), so each way in really chats and really compacts.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import langchain.chat_models
import pytest
from fakes import FakeToolCallingModel, RecordingSummarizer
from langchain_core.language_models import BaseChatModel

README = Path(__file__).resolve().parents[1] / "README.md"

_REPLY = (
    "Here is a plan that keeps to the budget. Day one: the Alfama and the castle in the "
    "morning, the tram 28 to Estrela after lunch, dinner in Bairro Alto. "
) * 12
"""About 400 tokens: a real model's answer to a trip-planning question is this long."""


def _snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # create_react_agent is deprecated
def test_readme_snippets_chat_and_compact_in_each_way_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    agent_model = FakeToolCallingModel(script=[_REPLY] * 200)  # no profile: no window known
    summarizer = RecordingSummarizer()

    models: dict[str, BaseChatModel] = {
        "openai:gpt-4.1-mini": agent_model,
        "openai:gpt-4.1-nano": summarizer,
    }

    def init_chat_model(model: str, **kwargs: Any) -> BaseChatModel:
        assert model in models, f"the README names a model this test has no stand-in for: {model}"
        return models[model]

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_chat_model)
    module = types.ModuleType("readme_snippets")  # type hints of snippet classes resolve here
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    snippets = _snippets()
    assert len(snippets) == 4, "the setup and the three ways in"
    exec(compile(snippets[0], str(README), "exec"), namespace)
    assert capsys.readouterr().out == ""
    turns = len(namespace["QUESTIONS"])
    for way, snippet in enumerate(snippets[1:], start=1):
        exec(compile(snippet, str(README), "exec"), namespace)
        out = capsys.readouterr().out
        # Every turn's messages stay in the state: the history is never cut.
        counts = [int(n) for n in re.findall(r"^(\d+) messages in the state", out, re.M)]
        assert counts == [2 * turn for turn in range(1, turns + 1)], (way, out)
        assert "compaction event: context_compacting" in out, (way, out)
        assert "compaction event: context_compacted" in out, (way, out)
        assert "context_compaction_failed" not in out, (way, out)
        summaries = namespace["store"].list_summaries(f"way-{way}")
        assert summaries, f"way {way} stored no summary"
        assert out.count("context_compacted") == len(summaries)
    # The agent model saw a summary in place of the oldest messages on the last turn.
    assert agent_model.saw_summary()
    assert summarizer.call_count >= 3


def test_readme_fits_a_screen_and_its_links_resolve() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert targets
    missing = [t for t in targets if "://" not in t and not (README.parent / t).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"
