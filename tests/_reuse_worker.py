"""One process of the cross-process reuse tests: build everything afresh, compact, report JSON.

Run as ``python tests/_reuse_worker.py --db PATH --thread T STEP [STEP ...]``. Each step is
one compaction call, in order, on the same graph and thread:

- ``base``: the conversation of `TURNS` user turns (ending with a user message);
- ``extended``: the same conversation with two more turns appended;
- ``edited``: ``base`` with the early user message `EDITED_INDEX` rewritten, same id.

The graph, the store and the summarizer are created in this process from the file alone, so
nothing but the SQLite file links one process to the next. One JSON object per step is
printed to stdout, one per line.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, cast

from fakes import RecordingSummarizer, message_text
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    messages_to_dict,
)
from langchain_core.runnables import RunnableConfig

from langgraph_compaction import SummaryStore, create_compaction_graph

TURNS = 30
EDITED_INDEX = 3
"""Index of the rewritten message in ``edited``: the second user message, deep in the prefix."""
EDITED_TEXT = "EDITED: actually, I want to fly to Reykjavik instead, on the 14th of March."
CONFIG: dict[str, Any] = {
    "trigger": {"type": "tokens", "value": 2000},
    "keep": {"type": "messages", "value": 6},
    "max_summary_tokens": 256,
}


def conversation(turns: int) -> list[BaseMessage]:
    """A system prompt and ``turns`` user turns; every turn but the last has an answer."""
    messages: list[BaseMessage] = [
        SystemMessage(content="You are a travel agent. Be brief.", id="system")
    ]
    for k in range(turns):
        ask = f"turn {k}: I need a flight from city {k} to city {k + 1}, economy, one adult. "
        messages.append(HumanMessage(content=ask * 3, id=f"user-{k}"))
        if k < turns - 1:
            reply = f"reply {k}: flight LH{400 + k} departs 09:{k % 60:02d}, fare 1{k:02d} EUR. "
            messages.append(AIMessage(content=reply * 3, id=f"ai-{k}"))
    return messages


def step_messages(step: str) -> list[BaseMessage]:
    if step == "base":
        return conversation(TURNS)
    if step == "extended":
        return conversation(TURNS + 2)
    if step == "edited":
        messages = conversation(TURNS)
        original = messages[EDITED_INDEX]
        messages[EDITED_INDEX] = original.model_copy(update={"content": EDITED_TEXT})
        return messages
    raise SystemExit(f"unknown step {step!r}: use base, extended or edited")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True, help="path of the SQLite summary store")
    parser.add_argument("--thread", required=True)
    parser.add_argument("steps", nargs="+")
    args = parser.parse_args()

    store = SummaryStore(f"sqlite:///{args.db}")
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    config: RunnableConfig = {"configurable": {"thread_id": args.thread}}
    for step in args.steps:
        messages = step_messages(step)
        before = summarizer.call_count
        result = graph.invoke({"messages": cast(list[AnyMessage], messages)}, config)
        report = result["compaction"]
        output: list[BaseMessage] = result["llm_input_messages"]
        summaries = [m for m in output if m.name == "summary"]
        calls = summarizer.calls[before:]
        line = {
            "step": step,
            "pid": os.getpid(),
            "action": report.action,
            "summary_id": report.summary_id,
            "summary_version": report.summary_version,
            "summarizer_calls": len(calls),
            "transcripts": [call.transcript for call in calls],
            "summary_text": message_text(summaries[0]) if len(summaries) == 1 else None,
            "summary_count": len(summaries),
            "input_messages": len(messages),
            "llm_input": messages_to_dict(output),
            "store": [
                {
                    "id": r.id,
                    "version": r.version,
                    "parent_id": r.parent_id,
                    "kind": r.kind,
                    "summary": r.summary,
                    "covered_messages": r.covered_messages,
                }
                for r in store.list_summaries(args.thread)
            ],
        }
        print(json.dumps(line, sort_keys=True), flush=True)
    store.close()


if __name__ == "__main__":
    main()
