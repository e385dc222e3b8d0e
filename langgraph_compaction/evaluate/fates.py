"""Where every identifier and artifact of a conversation is after its last call.

Items are read as the integrity check reads them (``content.identifiers``,
``content.artifacts``): over the whole conversation, then looked for, best place first, in the
verbatim messages of the last model input, in the summary that input carries (prose or ledger),
and through total recall (the store's search over the evicted messages, when recall is on).
What is in none of them is lost: the agent can no longer see or find it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.messages import BaseMessage

from langgraph_compaction.content.artifacts import Artifact, find_artifacts
from langgraph_compaction.content.identifiers import find_identifiers
from langgraph_compaction.content.writing_systems import fold_text
from langgraph_compaction.evaluate.records import ItemFate, Place
from langgraph_compaction.summary.ledger import holds

__all__ = ["artifact_label", "item_fates"]

Search = Callable[[str], Sequence[str]]
"""A recall search: the texts of the evicted messages that match a query."""


def artifact_label(artifact: Artifact) -> str:
    """``tool target``, or the tool alone for a call without an identifying argument."""
    return f"{artifact.tool} {artifact.target}".strip()


def item_fates(
    history: Sequence[BaseMessage],
    model_input: Sequence[BaseMessage],
    summary: str | None,
    search: Search | None = None,
) -> tuple[ItemFate, ...]:
    """Each identifier, then each artifact, of ``history`` with its place at the end.

    ``model_input`` is the last call's input: its messages whose ids are in ``history`` are the
    verbatim ones (a summary message is not); ``summary`` the text of the summary it carries.
    """
    ids = {m.id for m in history if m.id}
    verbatim = [m for m in model_input if m.id in ids]
    every = range(len(history))
    seen_ids = {i.text for i in find_identifiers(verbatim, range(len(verbatim)))}
    seen_artifacts = {(a.tool, a.target) for a in find_artifacts(verbatim, range(len(verbatim)))}
    folded_summary = fold_text(summary or "")

    def elsewhere(needle: str) -> Place:
        if needle and holds(folded_summary, needle):
            return "summary"
        found = search(needle) if search is not None and needle else ()
        if any(holds(fold_text(text), needle) for text in found):
            return "recall"
        return "lost"

    fates = [
        ItemFate("identifier", i.text, "model input" if i.text in seen_ids else elsewhere(i.text))
        for i in find_identifiers(history, every)
    ]
    for artifact in find_artifacts(history, every):
        if (artifact.tool, artifact.target) in seen_artifacts:
            place: Place = "model input"
        else:
            place = elsewhere(fold_text(artifact.target or artifact.tool))
        fates.append(ItemFate("artifact", artifact_label(artifact), place))
    return tuple(fates)
