"""The ranking variants tried for total recall, on raw SQLite FTS5 over every LoCoMo turn.

Run through ``python benchmarks/recall.py --study``. Each variant indexes every turn of each
conversation (no compaction, no session header messages) in an in-memory FTS5 table and
searches every question of categories 1-4 with its words, stop words removed (OR of
terms); recall@k as in ``recall.py``. That table led to the store's columns and weights.

Then :func:`pipeline_study`: the conversations replayed through the real pipeline into a
SQLite store once, and the store's own search run with one of its second-pass knobs turned
off at a time (``store.sql.search`` module constants), to show what each is worth.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from langgraph_compaction.store.schema.fulltext import query_terms

__all__ = ["VARIANTS", "pipeline_study", "study"]

VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("plain bm25, stop words removed", {}),
    ("+ photo captions", {"captions": True}),
    ("+ porter stemming", {"captions": True, "porter": True}),
    ("+ neighbours +-1 in one column, weight 0.4", {"captions": True, "porter": True,
                                                    "window": 1, "previous": 0.4, "next": 0.4}),
    ("+ neighbours +-2, weight 0.4", {"captions": True, "porter": True, "window": 2,
                                      "previous": 0.4, "next": 0.4}),
    ("+ neighbours +-3, weight 0.4", {"captions": True, "porter": True, "window": 3,
                                      "previous": 0.4, "next": 0.4}),
    ("+-2, session date column 0.6", {"captions": True, "porter": True, "window": 2,
                                      "previous": 0.4, "next": 0.4, "date": 0.6}),
    ("  + speaker name column 0.3", {"captions": True, "porter": True, "window": 2,
                                     "previous": 0.4, "next": 0.4, "date": 0.6, "name": 0.3}),
    ("  + name boost x1.4", {"captions": True, "porter": True, "window": 2, "previous": 0.4,
                             "next": 0.4, "date": 0.6, "boost": 1.4}),
    ("  + name boost x2.2", {"captions": True, "porter": True, "window": 2, "previous": 0.4,
                             "next": 0.4, "date": 0.6, "boost": 2.2}),
    ("shipped: previous 0.5, next 0.3, date 0.6, boost x1.8",
     {"captions": True, "porter": True, "window": 2, "previous": 0.5, "next": 0.3,
      "date": 0.6, "boost": 1.8}),
]  # fmt: skip


def _turns(conversation: dict[str, Any], captions: bool) -> list[tuple[str, str, str, str, int]]:
    conv, out, n = conversation["conversation"], [], 1
    while f"session_{n}" in conv:
        for turn in conv[f"session_{n}"]:
            text = turn["text"]
            if captions and turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            date = conv[f"session_{n}_date_time"]
            out.append((turn["dia_id"], turn["speaker"], text, date, n))
        n += 1
    return out


def _recall(conversations: list[dict[str, Any]], o: dict[str, Any]) -> dict[int, list[float]]:
    totals: dict[int, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    tokenizer = "porter unicode61" if o.get("porter") else "unicode61"
    window = o.get("window", 0)
    for conversation in conversations:
        turns = _turns(conversation, o.get("captions", False))
        db = sqlite3.connect(":memory:")
        db.execute(f"CREATE VIRTUAL TABLE f USING fts5(text, prev, next, date, name, "
                   f"tokenize='{tokenizer}')")  # fmt: skip
        for i, (_, speaker, text, date, session) in enumerate(turns):
            side = [j for j in range(i - window, i + window + 1) if 0 <= j < len(turns)]
            prev = " ".join(turns[j][2] for j in side if j < i and turns[j][4] == session)
            nxt = " ".join(turns[j][2] for j in side if j > i and turns[j][4] == session)
            db.execute("INSERT INTO f(rowid, text, prev, next, date, name) VALUES (?,?,?,?,?,?)",
                       (i, text, prev, nxt, date, speaker))  # fmt: skip
        where = {t[0]: i for i, t in enumerate(turns)}
        names = {t[1].lower() for t in turns}
        weights = [1.0, *(float(o.get(k, 0)) for k in ("previous", "next", "date", "name"))]
        for question in conversation["qa"]:
            ids = [i for e in question.get("evidence", []) for i in re.split(r"[\s;,]+", e) if i]
            wanted = {where[e] for e in ids if e in where}
            terms = query_terms(question["question"])
            if question["category"] == 5 or not wanted or not terms:
                continue
            boosted = [t for t in terms if t in names]
            marks = ",".join("?" * len(boosted)) or "''"
            found = [
                row[0]
                for row in db.execute(
                    f"SELECT rowid FROM f WHERE f MATCH ? ORDER BY bm25(f, "
                    f"{', '.join(map(str, weights))}) * (CASE WHEN lower(name) IN ({marks}) "
                    f"THEN {o.get('boost', 1.0)} ELSE 1.0 END) LIMIT 10",
                    (" OR ".join(f'"{t}"' for t in terms), *boosted),
                )
            ]
            row = totals[question["category"]]
            row[0] += 1
            row[1] += len(wanted & set(found[:5])) / len(wanted)
            row[2] += len(wanted & set(found)) / len(wanted)
    return totals


def study(conversations: list[dict[str, Any]]) -> None:
    """Print one line per variant: recall@5 / @10 per category and overall."""
    print("| variant | 1 | 2 | 3 | 4 | all @5 | all @10 |")
    print("| --- | --- | --- | --- | --- | ---: | ---: |")
    for label, options in VARIANTS:
        totals = _recall(conversations, options)
        cells = [f"{r[1] / r[0]:.2f} / {r[2] / r[0]:.2f}" for _, r in sorted(totals.items())]
        n, at5, at10 = (sum(r[i] for r in totals.values()) for i in range(3))
        print(f"| {label} | {' | '.join(cells)} | {at5 / n:.3f} | {at10 / n:.3f} |", flush=True)


def _knobs(**values: Any) -> Callable[[], None]:
    """Set ``store.sql.search`` constants (the statements are rebuilt); returns the undo."""
    from langgraph_compaction.store.sql import search as search_sql

    old = {name: getattr(search_sql, name) for name in values}

    def apply(settings: dict[str, Any]) -> None:
        for name, value in settings.items():
            setattr(search_sql, name, value)
        search_sql._BOOST = (
            f"(CASE WHEN lower(m.name) IN :names THEN {search_sql.NAME_BOOST} ELSE 1.0 END)"
        )
        search_sql._sqlite_search.cache_clear()
        search_sql._postgres_search.cache_clear()

    apply(values)
    return lambda: apply(old)


PIPELINE_VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("shipped", {}),
    ("without word coverage (COVERAGE 0)", {"COVERAGE": 0.0}),
    ("without the when preference", {"_WHEN_BOOST": 1.0}),
    ("names searched as words, no boost", {"_names_in": lambda conn, scope, terms: []}),
    ("name boost x1.8 instead of x2.2", {"NAME_BOOST": 1.8}),
    ("coverage 1.0 instead of 0.5", {"COVERAGE": 1.0}),
]


def _replayed(store: Any, thread: str, history: Any) -> int:
    """The replay already in the store: how many messages its last summary covers."""
    latest = store.latest_summaries(thread, namespace="bench", limit=1)
    return int(latest[0].covered_messages) if latest else 0


def pipeline_study(
    conversations: list[dict[str, Any]], measure: Callable[..., dict[int, list[float]]]
) -> None:
    """The store's search with one knob changed at a time, on a pipeline replay."""
    from langgraph_compaction import SummaryStore

    print("\n| pipeline replay, SQLite | 1 | 2 | 3 | 4 | all @5 | all @10 |")
    print("| --- | --- | --- | --- | --- | ---: | ---: |")
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/study.db"
        for n, (label, knobs) in enumerate(PIPELINE_VARIANTS):
            undo = _knobs(**knobs)
            try:
                with SummaryStore(url) as store:
                    totals = measure(store, conversations, None if n == 0 else _replayed)
            finally:
                undo()
            cells = [f"{r[1] / r[0]:.2f} / {r[2] / r[0]:.2f}" for _, r in sorted(totals.items())]
            n, at5, at10 = (sum(r[i] for r in totals.values()) for i in range(3))
            print(f"| {label} | {' | '.join(cells)} | {at5 / n:.3f} | {at10 / n:.3f} |", flush=True)
