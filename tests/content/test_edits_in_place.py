"""An edit of a summarized message is seen, also when it is made in place.

An in-memory graph (no checkpointer), or two model calls of one run, hand the compaction the
same message objects again; a review that changes a tool call's arguments, or a block's text,
may change them where they lie. The next call must not serve the summary of the old text.
Fresh objects from a checkpointer, edited before they were saved, are the other way in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from conversations import graph_input
from fakes import RecordingSummarizer, ai_tool_call
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph_compaction import SummaryStore, create_compaction_graph
from langgraph_compaction.content.history_scan import HistoryIndex

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
CONFIG = {"trigger": {"type": "tokens", "value": 2000}, "keep": {"type": "messages", "value": 6}}
_SERDE = JsonPlusSerializer()


def _history() -> list[BaseMessage]:
    """Turns of a request, a tool call, its result and an answer of text blocks."""
    messages: list[BaseMessage] = [SystemMessage("You book trips.", id="sys")]
    for turn in range(12):
        messages.append(HumanMessage(f"request {turn} " + "r" * 300, id=f"h{turn}"))
        args = {"city": "Oslo" if turn == 1 else f"city-{turn}", "nights": 2}
        messages.append(ai_tool_call("book_hotel", args, f"call-{turn}", msg_id=f"ai{turn}"))
        messages.append(
            ToolMessage("booked " + "b" * 300, tool_call_id=f"call-{turn}", id=f"t{turn}")
        )
        note = "Tromso it is" if turn == 1 else f"done {turn}"
        messages.append(AIMessage([{"type": "text", "text": note}], id=f"done{turn}"))
    return messages


def _edit_arguments(messages: Sequence[BaseMessage]) -> None:
    call = messages[6]  # turn 1's tool call, well inside the summarized prefix
    assert isinstance(call, AIMessage) and call.tool_calls[0]["args"]["city"] == "Oslo"
    call.tool_calls[0]["args"]["city"] = "Bergen"


def _edit_block(messages: Sequence[BaseMessage]) -> None:
    answer = messages[8]  # turn 1's answer
    assert isinstance(answer.content, list) and isinstance(answer.content[0], dict)
    assert answer.content[0]["text"] == "Tromso it is"
    answer.content[0]["text"] = "Bergen it is"


def _loaded(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    loaded: list[BaseMessage] = _SERDE.loads_typed(_SERDE.dumps_typed(list(messages)))
    return loaded


Edit = Callable[[Sequence[BaseMessage]], None]
EDITS: dict[str, tuple[Edit, str]] = {
    "tool-call-arguments": (_edit_arguments, "Oslo"),
    "block-text": (_edit_block, "Tromso"),
}


WAYS_IN = {
    "same-objects": (False, False),
    "from-a-checkpointer": (True, True),
    "same-objects-then-a-checkpointer": (False, True),
}
"""Whether the calls before the edit get fresh objects, and whether the call after it does."""


@pytest.mark.parametrize(("edit", "old"), EDITS.values(), ids=list(EDITS))
@pytest.mark.parametrize(("fresh_before", "fresh_after"), WAYS_IN.values(), ids=list(WAYS_IN))
def test_an_edit_of_a_summarized_message_is_never_served_the_old_summary(
    store: SummaryStore, edit: Edit, old: str, fresh_before: bool, fresh_after: bool
) -> None:
    """The same objects edited in place (an in-memory graph), fresh ones edited before a
    checkpointer saved them, and the objects of a run edited in place and then saved."""
    summarizer = RecordingSummarizer()
    graph = create_compaction_graph(CONFIG, model=summarizer, store=store)
    history = _history()

    def given() -> list[BaseMessage]:
        return _loaded(history) if fresh_before else history

    first = graph.invoke(graph_input(given()), THREAD)["compaction"]
    assert first.action == "summarized" and old in summarizer.calls[0].transcript
    held = graph.invoke(graph_input(given()), THREAD)["compaction"]  # the summary is held
    assert held.action == "reused" and held.summary_id == first.summary_id
    edit(history)  # in place
    after = _loaded(history) if fresh_after else history
    again = graph.invoke(graph_input(after), THREAD)["compaction"]
    assert again.action == "summarized" and again.summary_id != first.summary_id
    assert "Bergen" in summarizer.calls[-1].transcript
    assert old not in summarizer.calls[-1].transcript


@pytest.mark.parametrize(("edit", "old"), EDITS.values(), ids=list(EDITS))
def test_an_edit_in_place_is_recounted_and_rehashed(edit: Edit, old: str) -> None:
    history = _history()
    index = HistoryIndex()
    before = index.scan(("ns", "t"), history).prefix_hash(20)
    edit(history)
    after = index.scan(("ns", "t"), history)
    assert after.prefix_hash(20) != before
    assert after.prefix_hash(20) == HistoryIndex().scan(("ns", "t"), history).prefix_hash(20)
    assert after.total == count_tokens_approximately(history)


def test_what_is_not_copied_is_held_and_compared_by_its_own_equality() -> None:
    """An object of another kind (an artifact) is held, not copied: an edit of it in place
    is not seen, as the docs say; replacing it is."""
    history = _history()
    artifact = {"rows": [1, 2]}

    class Rows:
        def __init__(self) -> None:
            self.rows = [1, 2]

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Rows) and other.rows == self.rows

        __hash__ = None  # type: ignore[assignment]

    held = Rows()
    history[3] = ToolMessage("booked", tool_call_id="call-0", id="t0", artifact=held)
    history[7] = ToolMessage("booked", tool_call_id="call-1", id="t1", artifact=artifact)
    index = HistoryIndex()
    index.scan(("ns", "t"), history)
    artifact["rows"].append(3)  # a dict: copied, so the edit is seen
    assert index.scan(("ns", "t"), history).memo.fields[7]["artifact"] == {"rows": [1, 2, 3]}
    held.rows.append(3)  # held: the copy is the object itself
    assert index.scan(("ns", "t"), history).memo.fields[3]["artifact"] is held
