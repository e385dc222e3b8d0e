"""The identifier check of a new summary (DESIGN 6.13): what it must keep, and what it kept.

A summary covers a prefix of the conversation. What it must keep is the *trail* of that
prefix: the identifiers (``content.identifiers``) and tool artifacts (``content.artifacts``)
of the messages it newly covers, merged with the previous summary's own trail, read from the
JSON items stored with its row, so that an identifier an update drops is checked like a new
one and no fact fades over a few updates. The check is deterministic: an identifier is kept
when the prose holds it verbatim (after 6.10's folding); the rest and the artifacts go to the
ledger (``summary.ledger``). The items are stored with the row (``integrity_items``) for the
next update to merge, bounded so that a long coding thread's row stays small.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, get_args

from langchain_core.messages import BaseMessage

from langgraph_compaction.content.artifacts import Artifact, find_artifacts
from langgraph_compaction.content.artifacts import Outcome as ArtifactOutcome
from langgraph_compaction.content.identifiers import (
    SOURCE_WEIGHT,
    Identifier,
    IdentifierKind,
    Source,
    find_identifiers,
    identifiers_in,
)
from langgraph_compaction.content.writing_systems import fold_text
from langgraph_compaction.pipeline.report import IntegrityReport
from langgraph_compaction.summary.ledger import build_ledger, holds, join_ledger, split_ledger

__all__ = [
    "ITEMS_VERSION",
    "MAX_ARTIFACT_ITEMS",
    "MAX_IDENTIFIER_ITEMS",
    "Checked",
    "Trail",
    "check_summary",
    "dump_items",
    "load_items",
    "merge_trails",
    "summary_trail",
    "trail_of",
    "user_kept_share",
]

ITEMS_VERSION = 1
MAX_IDENTIFIER_ITEMS = 1000
"""Identifiers kept in a row's items (the weightiest); the rest are not carried forward."""
MAX_ARTIFACT_ITEMS = 300
"""Artifacts kept in a row's items."""


@dataclass(frozen=True, slots=True)
class Trail:
    """What a summary must keep: identifiers and artifacts, oldest first."""

    identifiers: tuple[Identifier, ...] = ()
    artifacts: tuple[Artifact, ...] = ()


@dataclass(frozen=True, slots=True)
class Checked:
    """A summary's prose checked against its trail: the text to store, its figures, its items."""

    text: str
    """The prose, then the ledger when one was written."""
    report: IntegrityReport
    items: str
    """The trail as JSON, for the row's ``integrity_items``."""
    missing_user: tuple[Identifier, ...]
    """User identifiers the prose does not hold (what a repair call names)."""


def trail_of(
    messages: Sequence[BaseMessage], positions: Sequence[int], exclude: Collection[str] = ()
) -> Trail:
    """The identifiers and artifacts of ``messages[i]`` for ``i`` in ``positions``."""
    return Trail(
        find_identifiers(messages, positions, exclude), find_artifacts(messages, positions)
    )


def summary_trail(text: str, exclude: Collection[str] = ()) -> Trail:
    """The trail of a summary stored without items (a person's edit, a row made before the
    check existed): the identifiers its text holds, ledger included, as source ``summary``."""
    seen: dict[str, Identifier] = {}
    for found, kind in identifiers_in(text):
        if found in exclude:
            continue
        old = seen.get(found)
        mentions = 1 if old is None else old.mentions + 1
        seen[found] = Identifier(found, kind, "summary", "summary", -1, mentions)
    return Trail(tuple(seen.values()))


def merge_trails(older: Trail, newer: Trail) -> Trail:
    """One trail: mentions and calls add up, the newer position, outcome and message win,
    an identifier keeps its weightiest source, an artifact that changed something stays so."""
    identifiers: dict[str, Identifier] = {i.text: i for i in older.identifiers}
    for new in newer.identifiers:
        old = identifiers.get(new.text)
        if old is not None:
            source = max(old.source, new.source, key=SOURCE_WEIGHT.__getitem__)
            new = replace(new, source=source, mentions=old.mentions + new.mentions)
        identifiers[new.text] = new
    artifacts: dict[tuple[str, str], Artifact] = {(a.tool, a.target): a for a in older.artifacts}
    for art in newer.artifacts:
        prior = artifacts.get((art.tool, art.target))
        if prior is not None:
            art = replace(art, calls=prior.calls + art.calls, changes=prior.changes or art.changes)
        artifacts[(art.tool, art.target)] = art
    return Trail(tuple(identifiers.values()), tuple(artifacts.values()))


def check_summary(
    text: str, trail: Trail, ledger_tokens: int, tokens: Callable[[str], int]
) -> Checked:
    """Check ``text``'s prose against ``trail`` and append the ledger of what it dropped.

    A ledger already in ``text`` (a model echoing the previous one, a reviewed draft) is
    replaced: the ledger is always rebuilt from the trail.
    """
    prose, _ = split_ledger(text)
    folded = fold_text(prose)
    kept = [i for i in trail.identifiers if holds(folded, i.text)]
    held = {i.text for i in kept}
    missing = [i for i in trail.identifiers if i.text not in held]
    ledger = build_ledger(missing, trail.artifacts, ledger_tokens, tokens)
    report = IntegrityReport(
        identifiers=len(trail.identifiers),
        kept=len(kept),
        appended=ledger.appended,
        dropped=ledger.dropped,
        artifacts=len(trail.artifacts),
    )
    return Checked(
        join_ledger(prose, ledger.text),
        report,
        dump_items(trail),
        tuple(i for i in missing if i.source == "user"),
    )


def user_kept_share(checked: Checked, trail: Trail) -> float | None:
    """Share of the trail's user identifiers the prose kept; None when there are none."""
    users = sum(1 for i in trail.identifiers if i.source == "user")
    if not users:
        return None
    return 1 - len(checked.missing_user) / users


def _bounded(trail: Trail) -> Trail:
    """The weightiest items, in their order: user ones first, then by mentions, newest."""
    identifiers = trail.identifiers
    if len(identifiers) > MAX_IDENTIFIER_ITEMS:
        ranked = sorted(identifiers, key=lambda i: (i.source != "user", -i.mentions, -i.position))
        keep = {i.text for i in ranked[:MAX_IDENTIFIER_ITEMS]}
        identifiers = tuple(i for i in identifiers if i.text in keep)
    artifacts = trail.artifacts
    if len(artifacts) > MAX_ARTIFACT_ITEMS:
        ranked_artifacts = sorted(
            artifacts,
            key=lambda a: (not (a.changes or a.outcome == "error"), -a.calls, -a.position),
        )
        chosen = {(a.tool, a.target) for a in ranked_artifacts[:MAX_ARTIFACT_ITEMS]}
        artifacts = tuple(a for a in artifacts if (a.tool, a.target) in chosen)
    return Trail(identifiers, artifacts)


def dump_items(trail: Trail) -> str:
    """The trail as the JSON text stored with the row (compact keys, non-ASCII kept)."""
    bounded = _bounded(trail)
    payload = {
        "v": ITEMS_VERSION,
        "identifiers": [
            {
                "t": i.text,
                "k": i.kind,
                "s": i.source,
                "m": i.message_id,
                "p": i.position,
                "n": i.mentions,
            }
            for i in bounded.identifiers
        ],
        "artifacts": [
            {
                "tool": a.tool,
                "target": a.target,
                "n": a.calls,
                "o": a.outcome,
                "w": a.changes,
                "m": a.message_id,
                "p": a.position,
            }
            for a in bounded.artifacts
        ],
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def load_items(items: str) -> Trail:
    """The trail stored as ``items``; an unreadable or unknown entry is skipped, never fatal:
    the items back up the prose, they are not the summary."""
    try:
        payload = json.loads(items)
    except ValueError:
        return Trail()
    if not isinstance(payload, dict) or payload.get("v") != ITEMS_VERSION:
        return Trail()
    return Trail(
        tuple(_loaded(_identifier, payload.get("identifiers"))),
        tuple(_loaded(_artifact, payload.get("artifacts"))),
    )


def _loaded(build: Callable[[dict[str, Any]], Any], entries: object) -> Iterable[Any]:
    if not isinstance(entries, list):
        return
    for entry in entries:
        if isinstance(entry, dict):
            try:
                yield build(entry)
            except (KeyError, TypeError, ValueError):
                continue


_KINDS = frozenset(get_args(IdentifierKind))
_SOURCES = frozenset(get_args(Source))
_OUTCOMES = frozenset(get_args(ArtifactOutcome))


def _identifier(entry: dict[str, Any]) -> Identifier:
    text, kind, source = entry["t"], entry["k"], entry["s"]
    if not isinstance(text, str) or kind not in _KINDS or source not in _SOURCES:
        raise ValueError(entry)
    return Identifier(text, kind, source, str(entry["m"]), int(entry["p"]), int(entry["n"]))


def _artifact(entry: dict[str, Any]) -> Artifact:
    tool, target, outcome = entry["tool"], entry["target"], entry["o"]
    if not isinstance(tool, str) or not isinstance(target, str) or outcome not in _OUTCOMES:
        raise ValueError(entry)
    return Artifact(
        tool, target, int(entry["n"]), outcome, bool(entry["w"]), str(entry["m"]), int(entry["p"])
    )
