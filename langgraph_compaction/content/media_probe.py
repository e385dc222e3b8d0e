"""What a media block's base64 data says about itself, read without decoding all of it.

Base64 maps every 3 bytes to 4 characters, so any stretch of the bytes can be decoded from
its own stretch of the text: the size comes from the text's length, an image's pixel size
from its header (PNG, JPEG, GIF, WebP), a WAV's duration from its ``fmt`` and ``data``
chunks, an MP4's from its ``mvhd`` box (found by walking box headers, a few bytes each).
Only a PDF is decoded whole to count its page objects, and only up to ``PDF_SCAN_BYTES``; a
larger one gives its page tree's count from both ends. Garbage gives ``None`` fields, never
an error.
"""

from __future__ import annotations

import binascii
import contextlib
import re
import struct
from dataclasses import dataclass

__all__ = ["PDF_SCAN_BYTES", "TEXT_DECODE_BYTES", "Probe", "probe"]

PDF_SCAN_BYTES = 2 * 1024 * 1024
"""Largest PDF decoded whole to count its page objects (decoding runs at 50-200 MB/s)."""
TEXT_DECODE_BYTES = 1024 * 1024
"""Largest text file decoded to be counted as text; a larger one is priced by its size."""

_HEAD_BYTES = 64 * 1024
"""Enough for a JPEG's frame header after the usual EXIF block (its thumbnail included)."""
_MAX_BOXES = 256
_LINE_PROBE = 1024
_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/=_-]")
_PDF_WINDOW = 1024 * 1024
"""A PDF over ``PDF_SCAN_BYTES`` is searched for its page tree's ``/Count`` in this many bytes
at each end (where writers put the document catalog and its incremental updates)."""
_CACHE_FROM = 4096
_CACHE_SIZE = 256
_CACHE: dict[tuple[int, int, int, str | None, str, bool], Probe] = {}
_URLSAFE = str.maketrans("-_", "+/")
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_PDF_COUNT = re.compile(
    rb"/Type\s*/Pages\b[^>]*?/Count\s+(\d+)|/Count\s+(\d+)[^>]*?/Type\s*/Pages\b"
)


@dataclass(frozen=True, slots=True)
class Probe:
    """What the data gave away; ``None`` where it said nothing readable."""

    size_bytes: int | None = None
    mime_type: str | None = None
    """Sniffed from the magic bytes when the block did not declare it."""
    width: int | None = None
    height: int | None = None
    pages: int | None = None
    seconds: float | None = None
    text: str | None = None
    """A text file's decoded text (up to ``TEXT_DECODE_BYTES``)."""


def probe(
    data: object, mime: str | None, kind: str, *, text_like: bool = False, start: int = 0
) -> Probe:
    """Read the size and what the header gives of base64 ``data[start:]`` (or raw bytes); a
    ``text_like`` file's text is decoded whole (up to ``TEXT_DECODE_BYTES``).

    Large data is probed once per process: the result is kept under the data's hash (which
    Python computes once per string), so every step of a call, and every later call holding the
    same block, reads it from memory.
    """
    if not isinstance(data, str) or len(data) < _CACHE_FROM:
        return _probe(data, mime, kind, text_like, start)
    key = (len(data), hash(data), start, mime, kind, text_like)
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = _probe(data, mime, kind, text_like, start)
        if len(_CACHE) > _CACHE_SIZE:
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                del _CACHE[next(iter(_CACHE))]  # the oldest, unless another thread was first
    return found


def _probe(data: object, mime: str | None, kind: str, text_like: bool, start: int) -> Probe:
    raw: _Base64 | _Raw
    if isinstance(data, (bytes, bytearray)):
        raw = _Raw(bytes(data))
    elif isinstance(data, str) and data.isascii():
        raw = _Base64(data, start)
    else:
        return Probe()
    head = raw.read(0, 32)
    declared = (mime or "").lower()
    sniffed = _sniff(head)
    effective = declared or sniffed or ""
    size = raw.size
    if effective.startswith("image/") or (kind == "image" and not effective):
        dims = _image_size(raw.read(0, _HEAD_BYTES))
        if dims is not None:
            return Probe(size, None if declared else sniffed, *dims)
    elif effective == "application/pdf":
        return Probe(size, None if declared else sniffed, pages=_pdf_pages(raw))
    elif effective.startswith(("audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave")):
        return Probe(size, None if declared else sniffed, seconds=_wav_seconds(raw))
    elif effective.startswith(("video/mp4", "video/quicktime", "audio/mp4", "audio/m4a")):
        return Probe(size, None if declared else sniffed, seconds=_mp4_seconds(raw))
    elif text_like:
        text = raw.read(0, size).decode("utf-8", "replace") if size <= TEXT_DECODE_BYTES else None
        return Probe(size, None if declared else sniffed, text=text)
    return Probe(size, None if declared else sniffed)


class _Base64:
    """Base64 text read by byte range: each range decodes from its own four-character groups."""

    __slots__ = ("base", "size", "text")

    def __init__(self, text: str, base: int = 0) -> None:
        """``text[base:]`` is the data (after a data URL's comma: the URL is not copied).

        Each check reads the first characters only: a copy of megabytes is made only when the
        text needs it (MIME line breaks, the URL-safe alphabet, surrounding blanks).
        """
        head = text[base : base + _LINE_PROBE]
        if _NOT_BASE64.search(head) or text[-1:].isspace():
            text, base = "".join(text[base:].split()), 0
        if "-" in head or "_" in head:
            text, base = text[base:].translate(_URLSAFE), 0
        self.text, self.base = text, base
        padding = text[-2:].count("=")
        self.size = max((len(text) - base) * 3 // 4 - padding, 0)

    def read(self, offset: int, length: int) -> bytes:
        start = offset // 3
        stop = -(-(offset + length) // 3)
        chunk = self.text[self.base + start * 4 : self.base + stop * 4]
        try:
            raw = binascii.a2b_base64(chunk + "=" * (-len(chunk) % 4))
        except (binascii.Error, ValueError):
            return b""
        return raw[offset - start * 3 : offset - start * 3 + length]


class _Raw:
    __slots__ = ("data", "size")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)

    def read(self, offset: int, length: int) -> bytes:
        return self.data[offset : offset + length]


def _sniff(head: bytes) -> str | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head[4:8] == b"ftyp":
        return "video/mp4"
    if head.startswith((b"ID3", b"\xff\xfb", b"\xff\xf3")):
        return "audio/mpeg"
    return None


def _image_size(head: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF, WebP or JPEG header."""
    size: tuple[int, int] | None = None
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR" and len(head) >= 24:
        size = struct.unpack(">II", head[16:24])
    elif head.startswith((b"GIF87a", b"GIF89a")) and len(head) >= 10:
        size = struct.unpack("<HH", head[6:10])
    elif head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        size = _webp_size(head)
    elif head.startswith(b"\xff\xd8"):
        size = _jpeg_size(head)
    if size is None or size[0] <= 0 or size[1] <= 0:
        return None
    return size


def _webp_size(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a" and len(head) >= 30:
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and head[20:21] == b"\x2f" and len(head) >= 25:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(head) >= 30:
        width = int.from_bytes(head[24:27], "little") + 1
        height = int.from_bytes(head[27:30], "little") + 1
        return width, height
    return None


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    """Walk the JPEG markers to the first start-of-frame (SOF0-SOF15 but DHT, JPG, DAC)."""
    at = 2
    while at + 9 <= len(head):
        if head[at] != 0xFF:
            return None
        marker = head[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            at += 2
            continue
        (length,) = struct.unpack(">H", head[at + 2 : at + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", head[at + 5 : at + 9])
            return width, height
        if marker == 0xDA or length < 2:  # scan data before any frame header
            return None
        at += 2 + length
    return None


def _pdf_pages(raw: _Base64 | _Raw) -> int | None:
    """Page objects counted in the bytes, else the largest ``/Count`` of a page tree (pages
    kept in compressed object streams); a large PDF is searched at both ends only."""
    if raw.size <= PDF_SCAN_BYTES:
        data = raw.read(0, raw.size)
        pages = len(_PDF_PAGE.findall(data))
        if pages:
            return pages
    else:
        data = raw.read(0, _PDF_WINDOW) + b"\n" + raw.read(raw.size - _PDF_WINDOW, _PDF_WINDOW)
    counts = [int(a or b) for a, b in _PDF_COUNT.findall(data)]
    return max(counts) if counts and max(counts) > 0 else None


def _wav_seconds(raw: _Base64 | _Raw) -> float | None:
    """``data`` chunk size over the ``fmt`` chunk's byte rate, walking the RIFF chunks."""
    if raw.read(0, 4) != b"RIFF" or raw.read(8, 4) != b"WAVE":
        return None
    at, byte_rate = 12, 0
    for _ in range(_MAX_BOXES):
        header = raw.read(at, 8)
        if len(header) < 8:
            return None
        chunk, length = header[:4], int.from_bytes(header[4:], "little")
        if chunk == b"fmt ":
            fmt = raw.read(at + 8, 16)
            if len(fmt) < 12:
                return None
            byte_rate = int.from_bytes(fmt[8:12], "little")
        elif chunk == b"data":
            length = min(length, raw.size - at - 8)  # streamed WAVs write 0xFFFFFFFF
            return length / byte_rate if byte_rate > 0 and length >= 0 else None
        at += 8 + length + (length & 1)
    return None


def _mp4_seconds(raw: _Base64 | _Raw) -> float | None:
    """Duration from ``moov/mvhd``: box headers are read one by one, a few bytes each."""
    moov = _find_box(raw, 0, raw.size, b"moov")
    if moov is None:
        return None
    mvhd = _find_box(raw, moov[0], moov[1], b"mvhd")
    if mvhd is None:
        return None
    body = raw.read(mvhd[0], 32)
    if not body:
        return None
    if body[0] == 1 and len(body) >= 32:
        timescale, duration = struct.unpack(">IQ", body[20:32])
    elif len(body) >= 20:
        timescale, duration = struct.unpack(">II", body[12:20])
    else:
        return None
    return duration / timescale if timescale else None


def _find_box(raw: _Base64 | _Raw, start: int, stop: int, name: bytes) -> tuple[int, int] | None:
    """The body span (start, stop) of the first box ``name`` between ``start`` and ``stop``."""
    at = start
    for _ in range(_MAX_BOXES):
        header = raw.read(at, 16)
        if len(header) < 8:
            return None
        size, box = int.from_bytes(header[:4], "big"), header[4:8]
        body = at + 8
        if size == 1 and len(header) == 16:
            size, body = int.from_bytes(header[8:16], "big"), at + 16
        elif size == 0:
            size = stop - at
        if size < body - at:
            return None
        if box == name:
            return body, min(at + size, stop)
        at += size
        if at >= stop:
            return None
    return None
