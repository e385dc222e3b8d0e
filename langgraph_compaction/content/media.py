"""A media block as a record: what it is, the reference that stands for it, what it costs.

A model does not read an image, a PDF or a clip as text: each provider prices them by rule,
and none by the length of the base64 data that carries them. The estimates below follow the
published rules where there is one and name their source; where the data does not give what a
rule needs (the pixel size, the page count, the duration), a figure per type stands in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "ANTHROPIC_IMAGE_MAX_TOKENS",
    "AUDIO_TOKENS_PER_SECOND",
    "OPENAI_IMAGE_BASE_TOKENS",
    "OPENAI_IMAGE_TILE_TOKENS",
    "PDF_TOKENS_PER_PAGE",
    "VIDEO_TOKENS_PER_SECOND",
    "Family",
    "MediaBlock",
    "MediaKind",
    "anthropic_image_tokens",
    "is_text_mime",
    "openai_image_tokens",
]

MediaKind = Literal["image", "file", "audio", "video"]
Family = Literal["openai", "anthropic", "standard"]
"""Whose format a block is in; ``standard`` (LangChain's own blocks) names no provider."""

# Images. OpenAI, "Images and vision", calculating costs (GPT-4o, GPT-4.1 family, o-series):
# fit within 2048 x 2048, then scale the shortest side down to 768; 85 tokens plus 170 per
# 512-pixel tile; ``detail: low`` is 85 tokens flat.
OPENAI_IMAGE_BASE_TOKENS = 85
"""Every OpenAI image, and all of a ``detail: low`` one."""
OPENAI_IMAGE_TILE_TOKENS = 170
"""Per 512 x 512 tile of an image at high detail, after scaling."""
OPENAI_TILE_PIXELS = 512
OPENAI_MAX_SIDE = 2048
OPENAI_SHORT_SIDE = 768
OPENAI_IMAGE_DEFAULT_TOKENS = 765
"""An image of unknown size: OpenAI's example, 1024 x 1024 at high detail (4 tiles)."""

# Anthropic, "Vision", evaluate image size: tokens = width x height / 750; an image whose
# long edge exceeds 1568 pixels (or about 1.15 megapixels) is scaled down first, so an image
# costs at most about 1,600 tokens.
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_IMAGE_MAX_TOKENS = 1600
"""The largest image Anthropic keeps (1092 x 1092 is 1,590): also the figure for an image of
unknown size."""

# PDFs. Anthropic, "PDF support": every page is read as its text (1,500-3,000 tokens a page
# by density) and as an image; OpenAI's file inputs likewise send each page's text and image.
PDF_TOKENS_PER_PAGE = 2400
"""A page of text plus its image: about what a dense text page measures on Claude."""
PDF_BYTES_PER_PAGE = 50 * 1024
"""A typical text page with its share of fonts; used when the pages cannot be counted."""
FILE_DEFAULT_PAGES = 4
"""A document known only by URL or id is priced as this many pages."""
TEXT_CHARS_PER_TOKEN = 4
"""A text file (plain text, CSV, JSON) is text: langchain-core's four characters a token."""
TEXT_MIMES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/x-yaml",
        "application/yaml",
        "application/csv",
    }
)
"""Types outside ``text/`` that are text all the same."""

# Audio and video. Google, Gemini API "Understand and count tokens": audio is 32 tokens a
# second; video 263 tokens a second (a frame a second plus its audio). OpenAI's audio input
# costs less (about 10 tokens a second), so the larger figure is the safe one.
AUDIO_TOKENS_PER_SECOND = 32
AUDIO_BYTES_PER_SECOND = 16_000
"""128 kbit/s, a common MP3 or AAC rate: a clip's duration when its header does not say."""
VIDEO_TOKENS_PER_SECOND = 263
VIDEO_BYTES_PER_SECOND = 250_000
"""2 Mbit/s, a phone's 720p video: a clip's duration when its header does not say."""
DEFAULT_SECONDS = 60
"""A clip known only by URL or id is priced as a minute."""


@dataclass(frozen=True, slots=True)
class MediaBlock:
    """One media block of any format: what it declares and what its data's header gave."""

    kind: MediaKind
    family: Family
    mime_type: str | None = None
    url: str | None = None
    """A link to the media (never a ``data:`` URL: its data is read out of it)."""
    file_name: str | None = None
    file_id: str | None = None
    """A provider's file id (OpenAI ``file-...``, Anthropic ``file_...``, a block's id)."""
    size_bytes: int | None = None
    """Size of the inline data, from its base64 length."""
    width: int | None = None
    height: int | None = None
    pages: int | None = None
    seconds: float | None = None
    detail: str | None = None
    """OpenAI's image ``detail`` (``low``, ``high``, ``auto``)."""
    text: str | None = field(default=None, repr=False, compare=False)
    """A text document's text (a plain-text file, an Anthropic text source): counted as text."""

    @property
    def tokens(self) -> int:
        """What a model spends on this block, by the rules above."""
        if self.text is not None:
            return math.ceil(len(self.text) / TEXT_CHARS_PER_TOKEN)
        if self.kind == "image":
            return self._image_tokens()
        if self.kind == "audio":
            return math.ceil(self._seconds(AUDIO_BYTES_PER_SECOND) * AUDIO_TOKENS_PER_SECOND)
        if self.kind == "video":
            return math.ceil(self._seconds(VIDEO_BYTES_PER_SECOND) * VIDEO_TOKENS_PER_SECOND)
        return self._file_tokens()

    @property
    def reference(self) -> str:
        """``[kind: mime, name, WxH | N pages | duration, size, url, id]``, never the data."""
        parts = [_clean(value) for value in (self.mime_type, self.file_name) if value]
        if self.width and self.height:
            parts.append(f"{self.width}x{self.height}")
        if self.pages:
            parts.append(f"{self.pages} page" + ("s" if self.pages != 1 else ""))
        if self.seconds is not None:
            parts.append(_duration(self.seconds))
        if self.size_bytes is not None:
            parts.append(_size(self.size_bytes))
        parts.extend(_clean(value) for value in (self.url, self.file_id) if value)
        return f"[{self.kind}: {', '.join(parts)}]" if parts else f"[{self.kind}]"

    def _image_tokens(self) -> int:
        if self.family == "openai" and self.detail == "low":
            return OPENAI_IMAGE_BASE_TOKENS
        if not (self.width and self.height):
            openai, anthropic = OPENAI_IMAGE_DEFAULT_TOKENS, ANTHROPIC_IMAGE_MAX_TOKENS
        else:
            openai = openai_image_tokens(self.width, self.height)
            anthropic = anthropic_image_tokens(self.width, self.height)
        if self.family == "openai":
            return openai
        if self.family == "anthropic":
            return anthropic
        return max(openai, anthropic)  # the provider is unknown: the costlier rule

    def _seconds(self, bytes_per_second: int) -> float:
        if self.seconds is not None:
            return max(self.seconds, 0.0)
        if self.size_bytes is not None:
            return self.size_bytes / bytes_per_second
        return DEFAULT_SECONDS

    def _file_tokens(self) -> int:
        if self.pages:
            return self.pages * PDF_TOKENS_PER_PAGE
        if self.size_bytes is None:
            return FILE_DEFAULT_PAGES * PDF_TOKENS_PER_PAGE
        if is_text_mime(self.mime_type):  # too large to decode: a byte a character
            return math.ceil(self.size_bytes / TEXT_CHARS_PER_TOKEN)
        return math.ceil(self.size_bytes / PDF_BYTES_PER_PAGE * PDF_TOKENS_PER_PAGE)


def is_text_mime(mime: str | None) -> bool:
    """A type whose bytes are text a model reads as such (plain text, CSV, JSON, XML...)."""
    mime = (mime or "").lower()
    return mime.startswith("text/") or mime in TEXT_MIMES


def openai_image_tokens(width: int, height: int) -> int:
    """OpenAI's tile rule at high detail (85 + 170 per 512-pixel tile after scaling)."""
    scale = min(1.0, OPENAI_MAX_SIDE / max(width, height))
    scale *= min(1.0, OPENAI_SHORT_SIDE / (min(width, height) * scale))
    tiles = math.ceil(width * scale / OPENAI_TILE_PIXELS) * math.ceil(
        height * scale / OPENAI_TILE_PIXELS
    )
    return OPENAI_IMAGE_BASE_TOKENS + OPENAI_IMAGE_TILE_TOKENS * tiles


def anthropic_image_tokens(width: int, height: int) -> int:
    """Anthropic's rule: width x height / 750 after fitting the long edge, capped."""
    scale = min(1.0, ANTHROPIC_MAX_EDGE / max(width, height))
    pixels = (width * scale) * (height * scale)
    return min(math.ceil(pixels / ANTHROPIC_PIXELS_PER_TOKEN), ANTHROPIC_IMAGE_MAX_TOKENS)


def _clean(value: str) -> str:
    """A field fit for a one-line reference: no line breaks, no lone surrogates."""
    if not value.isascii():
        value = value.encode("utf-8", "replace").decode("utf-8")
    return " ".join(value.split())


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{round(seconds)} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"
