"""Instructions (DESIGN 6.11): ``summary_instructions`` and a run's ``instruction`` end every
summary prompt, after the transcript, built-in or custom template alike, in every chunk."""

from __future__ import annotations

from typing import Any

import pytest
from _doors import DOORS, MODES, TRIGGER, Door, Mode, build_agent, history, run, thread_config
from fakes import FakeToolCallingModel, RecordingSummarizer
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_compaction import SummaryStore
from langgraph_compaction.config.prompts import DEFAULT_SUMMARY_PROMPT
from langgraph_compaction.summary.prompts import add_instructions

CONFIGURED = "Keep every file path and every error name verbatim."
PER_RUN = "保留所有端口号 / أبقِ أسماء الملفات كما هي"


def _tail(instructions: str) -> str:
    return f"\n\nAdditional instructions:\n{instructions}"


def test_add_instructions_appends_after_the_prompt_and_keeps_it() -> None:
    prompt = "<conversation>\nuser: привет\n</conversation>\n\nSummarize."
    assert add_instructions(prompt, "  Сохрани имена файлов.  ") == (
        prompt + _tail("Сохрани имена файлов.")
    )
    assert add_instructions(prompt, None) == prompt
    assert add_instructions(prompt, " \n ") == prompt


@pytest.mark.parametrize("mode", MODES)
async def test_configured_instructions_end_every_chunk_of_a_call(
    store: SummaryStore, mode: Mode
) -> None:
    summarizer = RecordingSummarizer()
    config = {**TRIGGER, "summary_instructions": CONFIGURED, "trim_tokens_to_summarize": 40}
    agent = build_agent(
        "parent", FakeToolCallingModel(), InMemorySaver(), store, config, model=summarizer
    )
    await run(agent, {"messages": history(10)}, thread_config(f"chunks-{mode}"), mode)
    prompts = [call.prompt for call in summarizer.calls]
    assert len(prompts) >= 2  # the evicted messages took several calls
    for prompt in prompts:
        assert prompt.endswith(_tail(CONFIGURED))
        assert prompt.index("</conversation>") < prompt.index("Additional instructions:")
    # Added to the built-in prompt, never in its place: its request is still there.
    assert DEFAULT_SUMMARY_PROMPT.split("{messages}")[1].strip() in prompts[0]
    assert "Update the checkpoint summary" in prompts[1]


@pytest.mark.parametrize("mode", MODES)
async def test_instructions_follow_a_custom_template(store: SummaryStore, mode: Mode) -> None:
    summarizer = RecordingSummarizer()
    config = {
        **TRIGGER,
        "summary_prompt": "Résume la conversation ci-dessus : {messages}\nSois bref.",
        "summary_instructions": CONFIGURED,
    }
    agent = build_agent(
        "parent", FakeToolCallingModel(), InMemorySaver(), store, config, model=summarizer
    )
    await run(agent, {"messages": history(10)}, thread_config(f"custom-{mode}"), mode)
    (call,) = summarizer.calls
    assert call.prompt.startswith("Résume la conversation ci-dessus : user: ")
    assert call.prompt.endswith("Sois bref." + _tail(CONFIGURED))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("door", DOORS)
async def test_a_runs_instruction_joins_the_configured_ones_through_every_door(
    store: SummaryStore, door: Door, mode: Mode
) -> None:
    summarizer = RecordingSummarizer()
    config: dict[str, Any] = {**TRIGGER, "summary_instructions": CONFIGURED}
    agent = build_agent(
        door, FakeToolCallingModel(), InMemorySaver(), store, config, model=summarizer
    )
    thread = f"run-{door}-{mode}"
    # Six messages stay under the trigger: force compacts them anyway.
    forced = thread_config(thread, force=True, instruction=PER_RUN)
    await run(agent, {"messages": history(6)}, forced, mode)
    (call,) = summarizer.calls
    assert call.prompt.endswith(_tail(f"{CONFIGURED}\n\n{PER_RUN}"))
    assert await store.alist_summaries(thread)


@pytest.mark.parametrize("door", DOORS)
async def test_a_runs_instruction_applies_to_that_call_only(
    store: SummaryStore, door: Door
) -> None:
    summarizer = RecordingSummarizer()
    agent = build_agent(
        door, FakeToolCallingModel(), InMemorySaver(), store, TRIGGER, model=summarizer
    )
    thread = f"once-{door}"
    await run(
        agent,
        {"messages": history(6)},
        thread_config(thread, force=True, instruction=PER_RUN),
        "async",
    )
    await run(agent, {"messages": history(2, start=6)}, thread_config(thread, force=True), "async")
    first, second = summarizer.calls
    assert first.prompt.endswith(_tail(PER_RUN))
    assert "Additional instructions:" not in second.prompt
