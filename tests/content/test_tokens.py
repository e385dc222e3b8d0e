"""Token counts and prefix hashes of a history: lazy where it can be, exact everywhere.

Stored summaries are found by their prefix hash, so its bytes are part of the store's format:
the golden values below may only change with a new ``HASH_TAG``. Hashes stored by earlier
versions (``v2:`` and the untagged chain) must keep matching.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence

import pytest
from conversations import chat, tool_batch
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph_compaction.content import history_scan as _scan
from langgraph_compaction.content import prefix_hash as _hash
from langgraph_compaction.content.estimate import estimate_tokens
from langgraph_compaction.content.history_scan import HistoryIndex, HistoryScan
from langgraph_compaction.content.prefix_hash import HASH_TAG

KEY = ("ns", "t")
_SERDE = JsonPlusSerializer()


def _history() -> list[BaseMessage]:
    return [
        SystemMessage("You are terse.", id="s"),
        HumanMessage('Ünïcode "quotes" and \\ back', id="h1", name="ana"),
        AIMessage(
            "", id="a1", tool_calls=[{"name": "grep", "args": {"q": "x", "n": 2}, "id": "c1"}]
        ),
        ToolMessage("3 hits", tool_call_id="c1", name="grep", id="t1"),
        AIMessage([{"type": "text", "text": "blocks"}], id="a2"),
        HumanMessage("no id"),
    ]


def _loaded(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages as a checkpointer hands them back: new objects, JSON-like values."""
    loaded: list[BaseMessage] = _SERDE.loads_typed(_SERDE.dumps_typed(list(messages)))
    return loaded


# What versions before HASH_TAG stored for _history()[:1] ... [:6] (a chain of JSON digests).
LEGACY = (
    "af6d7e9bd3be7bcd3ec3f0ba29ca598c",
    "e73f9580aaac597e28c60d1c594b8206",
    "5099933fbbbbb36927ba836cd26527ee",
    "78e00d588bc052dd6d21ca8831f8f84a",
    "cf711b8395a3637ef72b36d7b34c3d05",
    "2db9b2513af5c6e06e3a1b3463957616",
)
# What the versions before v3 stored (each message's row pickled).
V2 = (
    "v2:3e7782065ff570f9a85bc197ee66a339",
    "v2:9bdc4f6be2685b55de93438a138ac00d",
    "v2:12107712b112c3bf5c3c5d9afbfdb410",
    "v2:228b3531ae3ca377ee3fc0656c29d292",
    "v2:8cc3e73ba9a7399cea507162d161b7b0",
    "v2:e87f9b5a100d23235096024fc40b3efd",
)
CURRENT = (
    "v3:82670ad11cbe0c1809ebb522b3fcdc9d",
    "v3:90d59a1ee0e41cbc285aa2591f82877a",
    "v3:57be8602216d0c846cda25386f3ac1d1",
    "v3:12a3f75f46b227f483a8935fdf1f574d",
    "v3:2373b8402e703b98494d00fbe6099226",
    "v3:ef86811025ac5aadf299951896e79c3a",
)


def _documented(messages: Sequence[BaseMessage]) -> str:
    """The prefix hash as the docs define it, written out with nothing but the standard library."""
    hasher = hashlib.blake2b(digest_size=16)
    for m in messages:
        row = [m.type, m.id, m.name, getattr(m, "tool_call_id", None), m.content]
        row.append(getattr(m, "tool_calls", None))
        text = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        hasher.update(text.encode("ascii") + b",")
    return HASH_TAG + hasher.hexdigest()


def _per_message(messages: Sequence[BaseMessage]) -> int:
    """The default counter behind another name: the index then counts one message at a time."""
    return count_tokens_approximately(messages)


def test_the_stored_formats_do_not_change() -> None:
    history = _history()
    scan = HistoryIndex().scan(KEY, history)
    assert tuple(scan.prefix_hash(end) for end in range(1, 7)) == CURRENT
    assert tuple(_documented(history[:end]) for end in range(1, 7)) == CURRENT
    assert tuple(scan.legacy_prefix_hash(end) for end in range(1, 7)) == LEGACY
    assert tuple(scan.memo.hashes.v2_digest(scan.memo.fields, end) for end in range(1, 7)) == V2


def test_a_checkpointer_round_trip_keeps_the_hash() -> None:
    """Every turn, and every worker, sees the history as a checkpointer hands it back."""
    scan = HistoryIndex().scan(KEY, _loaded(_history()))
    assert tuple(scan.prefix_hash(end) for end in range(1, 7)) == CURRENT


def test_summaries_stored_by_earlier_versions_still_match() -> None:
    scan = HistoryIndex().scan(KEY, _history())
    for stored in (LEGACY, V2, CURRENT):
        assert scan.matches(4, stored[3])
        assert not scan.matches(4, stored[2]) and not scan.matches(3, stored[3])
    edited = _history()
    edited[1] = HumanMessage("changed", id="h1", name="ana")
    edited_scan = HistoryIndex().scan(KEY, edited)
    for stored in (LEGACY, V2, CURRENT):
        assert not edited_scan.matches(4, stored[3]) and edited_scan.matches(1, stored[0])


def _odd_values() -> list[BaseMessage]:
    """Values a checkpointer hands back in another form (a tuple as a list), a dict whose keys
    came in another order, a set (iterated in another order by each process)."""
    args = {"point": (1, 2), "tags": {"alpha", "beta", "gamma"}}
    calls = [{"name": "f", "args": args, "id": "c"}]
    return [
        HumanMessage("hi", id="h"),
        AIMessage("", id="a", tool_calls=calls),
        ToolMessage("done", tool_call_id="c", id="t"),
        AIMessage([{"type": "text", "text": "ok", "extras": {"z": 1, "y": (3,)}}], id="a2"),
    ]


def test_the_same_messages_hash_the_same_however_they_arrive() -> None:
    """In memory (as the run made them), loaded from a checkpointer, with dict keys in another
    order: one prefix, one hash. Pickled rows told a tuple from the list it is loaded as."""
    history = _odd_values()
    reordered = _odd_values()
    content = reordered[3].content
    assert isinstance(content, list) and isinstance(content[0], dict)
    content[0] = dict(reversed(list(content[0].items())))
    hashes = {
        HistoryIndex().scan(KEY, messages).prefix_hash(4)
        for messages in (history, _loaded(history), reordered, _loaded(reordered))
    }
    assert len(hashes) == 1


_SET_HASH = """
from langchain_core.messages import AIMessage
from langgraph_compaction.content.history_scan import HistoryIndex
call = {"name": "f", "args": {"tags": {"alpha", "beta", "gamma", "delta"}}, "id": "c"}
print(HistoryIndex().scan(("ns", "t"), [AIMessage("", id="a", tool_calls=[call])]).prefix_hash(1))
"""


@pytest.mark.slow  # another process: seconds
def test_a_restarted_worker_hashes_a_set_as_the_last_one_did() -> None:
    """Each process iterates a set of strings in its own order (hash randomization)."""
    seen = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _SET_HASH], env=env, capture_output=True, text=True, check=True
        )
        seen.add(done.stdout.strip())
    assert len(seen) == 1 and seen.pop().startswith(HASH_TAG)


def _long(size: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("sys", id="sys")]
    turn = 0
    while len(messages) < size:
        messages += chat(2, system=False, prefix=f"c{turn}") + tool_batch(f"b{turn}", 2)
        turn += 1
    return messages[:size]


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 400),
    steps=st.lists(st.integers(1, 80), max_size=4),
    asks=st.lists(st.integers(0, 720), max_size=12),
)
def test_lazy_counts_equal_counting_each_message(
    size: int, steps: list[int], asks: list[int]
) -> None:
    """With langchain-core's list counter a restarted worker counts the history in one call;
    the default counter keeps its newest messages' counts from its one pass. Every figure
    asked for is exact."""
    history = _long(size + sum(steps))
    lazy, eager = HistoryIndex(count_tokens_approximately), HistoryIndex(_per_message)
    default = HistoryIndex()
    assert lazy.additive and not eager.additive
    end = size
    for step in [0, *steps]:
        end += step
        messages = history[:end]
        a, b = lazy.scan(KEY, messages), eager.scan(KEY, messages)
        own = default.scan(KEY, messages)
        if step == 0:  # counted in one call; later messages one by one
            assert a.memo.counts.split == end and len(a.memo.counts.running) == 1
        if step == 0:  # one pass: the newest messages one by one, the rest one total
            tail = min(end, _scan._FRESH_TAIL)
            assert own.memo.counts.split == end - tail
            assert len(own.memo.counts.running) == tail + 1
        assert own.total == estimate_tokens(messages)
        for ask in asks:
            at = ask % (end + 1)
            assert a.prefix(at) == b.prefix(at) == own.prefix(at)
            assert own.tokens_of(at // 2, at) == b.tokens_of(at // 2, at)
            assert a.tokens_between(at // 2, at) == b.tokens_between(at // 2, at)
            if at < end:
                assert a.token(at) == b.token(at) == count_tokens_approximately([messages[at]])
            each = [count_tokens_approximately([m]) for m in messages[at // 2 : at]]
            assert a.tokens_of(at // 2, at) == b.tokens_of(at // 2, at) == each
            need = a.prefix(at) + 1
            assert a.first_reaching(need, at // 3, end + 1) == b.first_reaching(
                need, at // 3, end + 1
            )
        assert a.total == b.total == count_tokens_approximately(messages)


@settings(max_examples=40, deadline=None)
@given(size=st.integers(1, 300), cut=st.integers(0, 300), grow=st.lists(st.integers(1, 70)))
def test_a_growing_thread_hashes_as_a_fresh_scan(size: int, cut: int, grow: list[int]) -> None:
    history = _long(size + sum(grow))
    index, end = HistoryIndex(), size
    index.scan(KEY, history[:end]).prefix_hash(min(cut, end))
    for step in grow:
        end += step
        scan = index.scan(KEY, history[:end])
        fresh = HistoryIndex().scan(KEY, history[:end])
        for at in {0, min(cut, end), end, end - 1, (end // 64) * 64}:
            assert scan.prefix_hash(at) == fresh.prefix_hash(at)
            assert scan.prefix_hash(at).startswith(HASH_TAG)


def _scan_after(previous: list[BaseMessage], current: list[BaseMessage]) -> HistoryScan:
    index = HistoryIndex()
    index.scan(KEY, previous).prefix_hash(len(previous))
    return index.scan(KEY, current)


def test_any_edit_is_seen_and_recounted() -> None:
    history = _long(150)
    scan = HistoryIndex().scan(KEY, history)
    before = scan.prefix_hash(150)
    call = next(i for i, m in enumerate(history) if isinstance(m, AIMessage) and m.tool_calls)
    edits: list[list[BaseMessage]] = []
    content = list(history)
    content[70] = history[70].model_copy(update={"content": "edited"})
    edits.append(content)
    arguments = list(history)
    ai = history[call]
    assert isinstance(ai, AIMessage)
    calls = [{**ai.tool_calls[0], "args": {"q": "reviewed"}}]
    arguments[call] = ai.model_copy(update={"tool_calls": calls})
    edits.append(arguments)
    for edited in edits:
        rescan = _scan_after(history, edited)
        assert rescan.prefix_hash(150) != before
        assert rescan.total == count_tokens_approximately(edited)
    in_place = _long(150)
    index = HistoryIndex()
    index.scan(KEY, in_place)
    in_place[3].content = "changed where it lies"  # the same objects, mutated
    assert index.scan(KEY, in_place).total == count_tokens_approximately(in_place)


def test_a_shorter_history_reuses_its_prefix() -> None:
    history = _long(130)
    index = HistoryIndex()
    index.scan(KEY, history)
    scan = index.scan(KEY, history[:100])
    assert scan.total == count_tokens_approximately(history[:100])
    assert scan.prefix_hash(100) == HistoryIndex().scan(KEY, history[:100]).prefix_hash(100)


def test_walking_a_history_counted_in_one_call_stays_linear() -> None:
    """Asking for every prefix and every message, in either order, counts each message a few
    times at most, not once per question."""
    history = _long(2000)
    counted: list[int] = []

    def counting(messages: Sequence[BaseMessage]) -> int:
        counted.append(len(messages))
        return count_tokens_approximately(messages)

    each = [count_tokens_approximately([m]) for m in history]
    prefixes = [sum(each[:at]) for at in range(0, 2001, 250)]
    for order, tokens_too in (
        (range(2001), False),
        (range(2000, -1, -1), False),
        (range(2001), True),
    ):
        index = HistoryIndex()
        index.counter = counting  # the default counter, watched: lazy counting stays on
        assert index.additive
        counted.clear()
        scan = index.scan(KEY, history)
        for at in order:
            prefix = scan.prefix(at)
            if at % 250 == 0:
                assert prefix == prefixes[at // 250]
            if tokens_too and at < 2000:
                assert scan.token(at) == each[at]
        assert sum(counted) <= 3 * len(history)


@settings(max_examples=80, deadline=None)
@given(
    texts=st.lists(st.text(max_size=30), min_size=1, max_size=70),
    odd=st.lists(st.integers(0, 69), max_size=3),
)
def test_a_run_hashes_as_its_messages_one_by_one(texts: list[str], odd: list[int]) -> None:
    """A run is written as one JSON array and its brackets dropped; it must give the bytes of
    its messages written one by one, odd ones (that JSON cannot write) included."""
    fields: list[dict[str, object]] = [
        {"type": "human", "id": f"m{i}", "name": None, "content": text}
        for i, text in enumerate(texts)
    ]
    for i in odd:
        if i < len(fields):
            cycle: list[object] = [{"type": "text", "text": "x", "lock": threading.Lock()}]
            if i % 2:
                cycle.append(cycle)  # a cycle: no JSON at all
            fields[i]["content"] = cycle
    one_by_one = b"".join(_hash.run_bytes([f]) for f in fields)
    assert _hash.run_bytes(fields) == one_by_one


def test_long_runs_and_long_values_hash_as_their_messages_one_by_one() -> None:
    """Nothing batches: a run of 2,500 messages, a content list of 2,500 blocks, tool call
    arguments of 1,500 keys give the bytes of the messages written one by one."""
    blocks = [{"type": "text", "text": str(i)} for i in range(2500)]
    args = {f"k{i}": i for i in range(1500)}
    fields: list[dict[str, object]] = [
        {"type": "ai", "id": f"m{i}", "name": None, "content": blocks if i == 7 else "x"}
        | ({"tool_calls": [{"name": "f", "args": args, "id": "c"}]} if i == 9 else {})
        for i in range(2500)
    ]
    one_by_one = b"".join(_hash.run_bytes([f]) for f in fields)
    assert _hash.run_bytes(fields) == one_by_one
    for cut in (1, 63, 64, 1000, 1001, 2499):
        assert _hash.run_bytes(fields[:cut]) + _hash.run_bytes(fields[cut:]) == one_by_one


def test_a_growing_thread_hashes_only_its_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    history = _long(400)
    hashed: list[int] = []
    run_bytes = _hash.run_bytes

    def counting(fields: Sequence[dict[str, object]]) -> bytes:
        hashed.append(len(fields))
        return run_bytes(fields)

    monkeypatch.setattr(_hash, "run_bytes", counting)
    index = HistoryIndex()
    for end in range(200, 401):
        index.scan(KEY, history[:end]).prefix_hash(end)  # as each pruning epoch check does
    assert sum(hashed) == 400  # each message once
