"""Old media out of the model input: ``pruning.media_keep_last``.

An image, file (PDF), audio or video block older than the last ``media_keep_last`` user turns
is replaced, in the model input copy only, by a text block holding its reference (kind, mime
type, file name or URL, size: ``content.blocks.media_reference``), in the same position. The message
keeps every other block (the same objects), its id, name and tool calls, so tool pairs are
untouched; the history, the checkpoint and the summarizer keep the originals.

A *user turn* starts at a real user message (``is_real_user_message``: a ``HumanMessage`` that
is not an injected summary), so the media kept are those of the newest ``media_keep_last``
real user messages and of everything after the oldest of them: the assistant's and the tools'
too. ``0`` keeps none. Leading system messages are instructions, not turns, and keep theirs.

Setting the key is enough: it applies whether pruning is enabled or not, and below every
trigger too, since what the model should still see does not depend on how full the context is.
The replacement depends on the history alone (the same history gives the same bytes), and a
message, once replaced, stays replaced as the history grows: the bytes change only when a user
turn ages out, and only in that turn, which sits just before the kept turns, so a provider's
prompt cache still holds everything before it. (Tied to pruning epochs, it would change bytes
less often but keep sending old media until the next trigger crossing, if one ever comes.)
The derivation is extended call by call (:class:`OldMedia`), so a steady-state call looks at
its new messages only.

A pinned message (``pruning.pins``, with its tool unit) keeps its media: it is never counted
among the messages holding media. It is judged when first seen; a derivation records the
store pins it was made under, and another pin set derives afresh.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import replace

from langchain_core.messages import BaseMessage

from langgraph_compaction.content.blocks import media_reference
from langgraph_compaction.content.messages import is_real_user_message
from langgraph_compaction.pipeline.remembered import MediaCopy, OldMedia

__all__ = ["derive_old_media", "media_replaced_copy"]

_RESPONSES_MEDIA = frozenset({"input_image", "input_file"})
"""Responses API blocks: their reference becomes ``input_text``, the API's own text block."""
_NESTED = "tool_result"
"""An Anthropic tool result block: the media in its ``content`` list are replaced too."""


def _replaced(block: object) -> tuple[object, int]:
    """A block with its media replaced by references, and how many were."""
    if not isinstance(block, dict):
        return block, 0
    reference = media_reference(block)
    if reference is not None:
        kind = "input_text" if block.get("type") in _RESPONSES_MEDIA else "text"
        return {"type": kind, "text": reference}, 1
    inner = block.get("content")
    if block.get("type") == _NESTED and isinstance(inner, list):
        blocks, count = _replaced_blocks(inner)
        if count:
            return {**block, "content": blocks}, count
    return block, 0


def _replaced_blocks(blocks: Sequence[object]) -> tuple[list[object], int]:
    out: list[object] = []
    count = 0
    for block in blocks:
        new, replaced = _replaced(block)
        out.append(new)
        count += replaced
    return out, count


def media_replaced_copy(message: BaseMessage) -> tuple[BaseMessage, int] | None:
    """``message`` with each media block replaced by a text reference, and how many were.

    None when it holds no media. The copy shares every other block with the original (byte for
    byte), and its id, name, tool calls and kwargs; the original is untouched.
    """
    if isinstance(message.content, str):
        return None
    blocks, count = _replaced_blocks(message.content)
    if not count:
        return None
    return message.model_copy(update={"content": blocks}), count


def derive_old_media(
    messages: Sequence[BaseMessage],
    lead: int,
    keep: int,
    digest: str,
    count: Callable[[BaseMessage], int],
    token: Callable[[int], int],
    previous: OldMedia | None = None,
    pinned: Callable[[int], bool] | None = None,
    pins: frozenset[str] = frozenset(),
) -> OldMedia:
    """The old media of ``messages``, extending ``previous`` (derived over a prefix of them).

    ``count`` gives a copy's tokens and ``token`` an original's (by index); each is called
    once per replaced message over the life of a thread, since a message before the cutoff
    stays before it. ``pinned`` tells a pinned message (never replaced), under the store
    pins ``pins`` (``previous`` must have been derived under the same).
    """
    if previous is None or previous.keep != keep or previous.lead != lead or previous.pins != pins:
        previous = OldMedia(keep, lead, lead, "", pins=pins)
    size = len(messages)
    new = range(previous.checked, size)
    found = {
        i: c
        for i in new
        if (c := media_replaced_copy(messages[i])) is not None and not (pinned and pinned(i))
    }
    young = {**previous.young, **found} if found else previous.young
    media = previous.media + tuple(found)
    users = previous.users + tuple(i for i in new if is_real_user_message(messages[i]))
    state = OldMedia(keep, lead, size, digest, media, users, previous.copies, young, pins=pins)
    due = media[len(previous.copies) : bisect_left(media, state.cutoff)]
    if not due:
        return replace(state, running=previous.running)
    copies, running, young = dict(previous.copies), list(previous.running), dict(young)
    for index in due:
        message, blocks = young.pop(index)
        tokens = count(message)
        copies[index] = MediaCopy(message, tokens, token(index) - tokens, blocks)
        running.append(running[-1] + copies[index].saving)
    return replace(state, copies=copies, young=young, running=tuple(running))
