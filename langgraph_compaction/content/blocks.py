"""Content blocks of every provider format: media, reasoning, text, and what each costs.

LangChain passes content blocks on in several shapes: OpenAI chat (``image_url``,
``input_audio``, ``file``), OpenAI Responses (``input_image``, ``input_file``), Anthropic
(``image`` / ``document`` with a ``source``), LangChain's standard blocks (``image``, ``file``,
``audio``, ``video`` with ``base64``, ``url`` or ``file_id``, and the older ``source_type``
form) and Google's ``media``. A media block's base64 data says nothing of what a model spends
on it, so ``media_block`` reads what the block declares, and the first bytes of its data for
the rest (pixel size, page count, duration: see ``content.media_probe``), and ``block_tokens``
estimates by type (``content.media``). ``media_reference`` is the text a summarizer sees
instead of the data. Nothing here raises on an odd block: what cannot be read is left out.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from typing import Any

from langgraph_compaction.content.media import Family, MediaBlock, MediaKind, is_text_mime
from langgraph_compaction.content.media_probe import probe

__all__ = [
    "block_tokens",
    "is_reasoning",
    "media_block",
    "media_reference",
    "reasoning_text",
    "tool_call_block",
]

REASONING_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning"})
"""Anthropic ``thinking`` (with its signature) and ``redacted_thinking``; OpenAI's and
LangChain's ``reasoning``."""

_CALL_KEYS = {
    "tool_use": ("id", "input"),
    "tool_call": ("id", "args"),
    "function_call": ("call_id", "arguments"),
}
"""Blocks that are tool calls (Anthropic, LangChain, OpenAI Responses): id and arguments keys."""

_STANDARD_KINDS: dict[str, MediaKind] = {
    "image": "image",
    "file": "file",
    "audio": "audio",
    "video": "video",
    "text-plain": "file",
}
_AUDIO_FORMATS = {"wav": "audio/wav", "mp3": "audio/mpeg"}
_BARE_BASE64_MIN = 256
_BASE64_HEAD = re.compile(r"[A-Za-z0-9+/_-]+")


def is_reasoning(block: object) -> bool:
    """A thinking, redacted_thinking or reasoning block (kept byte for byte, never summarized)."""
    return isinstance(block, Mapping) and block.get("type") in REASONING_TYPES


def tool_call_block(block: object) -> tuple[object, object, object] | None:
    """``(id, name, arguments)`` of a content block that is a tool call, None for any other.

    Anthropic ``tool_use``, LangChain's ``tool_call``, OpenAI Responses ``function_call``
    (its ``call_id``; the arguments a JSON string, as the block holds them).
    """
    if not isinstance(block, Mapping) or not isinstance(kind := block.get("type"), str):
        return None
    keys = _CALL_KEYS.get(kind)
    if keys is None:
        return None
    return block.get(keys[0]), block.get("name"), block.get(keys[1])


def reasoning_text(block: Mapping[str, Any]) -> str:
    """The text a reasoning block carries (its thinking, summary or redacted data), else ""."""
    kind = block.get("type")
    if kind == "thinking":
        return _str(block.get("thinking"))
    if kind == "redacted_thinking":
        return _str(block.get("data"))
    text = _str(block.get("reasoning"))
    summary = block.get("summary")
    if isinstance(summary, list):
        text += "".join(_str(part.get("text")) for part in summary if isinstance(part, Mapping))
    return text


def media_reference(block: object) -> str | None:
    """The text reference a summarizer sees for a media block, None for anything else."""
    media = media_block(block)
    return None if media is None else media.reference


def block_tokens(block: object) -> int | None:
    """The token estimate of a media block, None for anything else."""
    media = media_block(block)
    return None if media is None else media.tokens


def media_block(block: object) -> MediaBlock | None:
    """Read a content block of any format as a ``MediaBlock``; None when it is not media."""
    if not isinstance(block, Mapping):
        return None
    try:
        return _media_block(block)
    except (TypeError, ValueError, AttributeError, IndexError, OverflowError, struct.error):
        return None  # a block too odd to read is not priced as media


def _media_block(block: Mapping[str, Any]) -> MediaBlock | None:
    kind = block.get("type")
    if kind == "image_url":  # OpenAI chat
        inner = block.get("image_url")
        if isinstance(inner, Mapping):
            return _from_url(
                "image", "openai", _str(inner.get("url")), detail=_opt(inner.get("detail"))
            )
        return _from_url("image", "openai", _str(inner))
    if kind == "input_image":  # OpenAI Responses
        return _from_url(
            "image",
            "openai",
            _str(block.get("image_url")),
            file_id=_opt(block.get("file_id")),
            detail=_opt(block.get("detail")),
        )
    if kind == "input_audio":  # OpenAI chat
        inner = block.get("input_audio")
        if not isinstance(inner, Mapping):
            return MediaBlock("audio", "openai")
        fmt = _str(inner.get("format")).lower()
        mime = _AUDIO_FORMATS.get(fmt, f"audio/{fmt}" if fmt else None)
        return _from_data("audio", "openai", inner.get("data"), mime)
    if kind == "input_file":  # OpenAI Responses
        return _from_url(
            "file",
            "openai",
            _str(block.get("file_data")) or _str(block.get("file_url")),
            file_id=_opt(block.get("file_id")),
            file_name=_opt(block.get("filename")),
        )
    if kind == "file" and isinstance(block.get("file"), Mapping):  # OpenAI chat
        inner = block["file"]
        return _from_url(
            "file",
            "openai",
            _str(inner.get("file_data")),
            file_id=_opt(inner.get("file_id")),
            file_name=_opt(inner.get("filename")),
        )
    if kind in ("image", "document") and isinstance(block.get("source"), Mapping):
        return _anthropic(block, "image" if kind == "image" else "file")
    if kind == "media":  # Google's blocks
        mime = _opt(block.get("mime_type"))
        media_kind = _kind_of(mime)
        if "data" in block:
            return _from_data(media_kind, "standard", block.get("data"), mime)
        return _from_url(media_kind, "standard", _str(block.get("file_uri")), mime=mime)
    if isinstance(kind, str) and kind in _STANDARD_KINDS:
        return _standard(block, _STANDARD_KINDS[kind])
    return None


def _anthropic(block: Mapping[str, Any], kind: MediaKind) -> MediaBlock:
    source = block["source"]
    source_type = source.get("type")
    mime = _opt(source.get("media_type"))
    title = _opt(block.get("title"))
    if source_type == "base64":
        return _from_data(kind, "anthropic", source.get("data"), mime, file_name=title)
    if source_type == "text":
        text = _str(source.get("data"))
        return MediaBlock(
            kind,
            "anthropic",
            mime_type=mime or "text/plain",
            file_name=title,
            size_bytes=len(text.encode("utf-8", "replace")),
            text=text,
        )
    if source_type == "content":  # text blocks given as the document
        parts = source.get("content")
        text = ""
        if isinstance(parts, list):
            text = "".join(
                _str(part.get("text"))
                for part in parts
                if isinstance(part, Mapping) and part.get("type") == "text"
            )
        return MediaBlock(kind, "anthropic", mime_type=mime, file_name=title, text=text)
    if source_type == "file":
        return MediaBlock(
            kind, "anthropic", mime_type=mime, file_name=title, file_id=_opt(source.get("file_id"))
        )
    return _from_url(kind, "anthropic", _str(source.get("url")), mime=mime, file_name=title)


def _standard(block: Mapping[str, Any], kind: MediaKind) -> MediaBlock | None:
    mime = _opt(block.get("mime_type"))
    name = _file_name(block)
    source_type = block.get("source_type")  # the older (v0) form
    if block.get("type") == "text-plain" or source_type == "text":
        text = _str(block.get("text"))
        if text:
            return MediaBlock(
                kind,
                "standard",
                mime_type=mime or "text/plain",
                file_name=name or _opt(block.get("title")),
                size_bytes=len(text.encode("utf-8", "replace")),
                text=text,
            )
    if source_type == "base64" or (source_type is None and "base64" in block):
        data = block.get("data") if source_type == "base64" else block.get("base64")
        return _from_data(kind, "standard", data, mime, file_name=name)
    if source_type == "id":
        return MediaBlock(
            kind, "standard", mime_type=mime, file_name=name, file_id=_opt(block.get("id"))
        )
    url = _str(block.get("url"))
    file_id = _opt(block.get("file_id"))
    if not url and file_id is None and source_type is None:
        return None  # an ``image`` with nothing that locates it is not a media block we know
    return _from_url(kind, "standard", url, mime=mime, file_name=name, file_id=file_id)


def _from_url(
    kind: MediaKind,
    family: Family,
    url: str,
    *,
    mime: str | None = None,
    file_name: str | None = None,
    file_id: str | None = None,
    detail: str | None = None,
) -> MediaBlock:
    """A block that carries a URL: a ``data:`` URL is read as inline data, another kept."""
    if url.startswith("data:"):
        comma = url.find(",")
        header = url[:comma] if comma >= 0 else url
        declared = header[5:].split(";")[0].strip() or None
        if ";base64" not in header:  # percent-encoded text: rare, priced by its length
            return MediaBlock(
                kind,
                family,
                mime_type=declared or mime,
                file_name=file_name,
                file_id=file_id,
                size_bytes=len(url) - comma - 1 if comma >= 0 else 0,
                detail=detail,
            )
        return _from_data(
            kind,
            family,
            url,
            declared or mime,
            file_name=file_name,
            file_id=file_id,
            detail=detail,
            start=comma + 1 if comma >= 0 else len(url),
        )
    if len(url) > _BARE_BASE64_MIN and _BASE64_HEAD.fullmatch(url, 0, _BARE_BASE64_MIN):
        # bare base64 where a URL was expected (some clients send ``file_data`` so)
        return _from_data(
            kind, family, url, mime, file_name=file_name, file_id=file_id, detail=detail
        )
    return MediaBlock(
        kind,
        family,
        mime_type=mime,
        url=url or None,
        file_name=file_name,
        file_id=file_id,
        detail=detail,
    )


def _from_data(
    kind: MediaKind,
    family: Family,
    data: object,
    mime: str | None,
    *,
    file_name: str | None = None,
    file_id: str | None = None,
    detail: str | None = None,
    start: int = 0,
) -> MediaBlock:
    """A block with inline data (``data[start:]``): its size from the base64 length, the rest
    from its bytes."""
    found = probe(data, mime, kind, text_like=is_text_mime(mime), start=start)
    return MediaBlock(
        kind,
        family,
        mime_type=mime or found.mime_type,
        file_name=file_name,
        file_id=file_id,
        size_bytes=found.size_bytes,
        width=found.width,
        height=found.height,
        pages=found.pages,
        seconds=found.seconds,
        detail=detail,
        text=found.text,
    )


def _kind_of(mime: str | None) -> MediaKind:
    major = (mime or "").partition("/")[0]
    if major == "image":
        return "image"
    if major == "audio":
        return "audio"
    if major == "video":
        return "video"
    return "file"


def _file_name(block: Mapping[str, Any]) -> str | None:
    for holder in (block, block.get("extras"), block.get("metadata")):
        if isinstance(holder, Mapping):
            for key in ("filename", "name", "title"):
                if isinstance(holder.get(key), str) and holder[key]:
                    return str(holder[key])
    return None


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _opt(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
