"""Small real media files built with the standard library, and their content blocks.

Each builder writes the format's real structure (a decodable PNG and GIF, the JFIF markers of
a JPEG up to its frame header, WebP's three chunk kinds, a PDF of N page objects, a WAV from
``wave``, an MP4's box tree), padded where a test needs a large file.
"""

from __future__ import annotations

import base64
import io
import random
import struct
import wave
import zlib

__all__ = [
    "b64",
    "data_url",
    "gif",
    "jpeg",
    "mp4",
    "pdf",
    "png",
    "wav",
    "webp_extended",
    "webp_lossless",
    "webp_lossy",
]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{b64(data)}"


def _noise(size: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(size)


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png(width: int, height: int, *, pad_to: int = 0) -> bytes:
    """A decodable grey PNG; ``pad_to`` adds an ancillary chunk of noise to reach that size."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    rows = zlib.compress(b"\x00" * ((width + 1) * height), 9)
    body = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", rows)
    if pad_to > len(body):
        body += _png_chunk(b"zZzZ", _noise(pad_to - len(body)))
    return body + _png_chunk(b"IEND", b"")


def gif(width: int, height: int) -> bytes:
    """A GIF89a of that logical screen size holding one 1x1 frame."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    frame = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    return b"GIF89a" + screen + frame + b"\x3b"


def jpeg(width: int, height: int, *, exif_bytes: int = 0) -> bytes:
    """JFIF markers up to a baseline frame header (SOF0), after an EXIF block of that size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    parts = [b"\xff\xd8", app0]
    if exif_bytes:
        exif = b"Exif\x00\x00" + _noise(exif_bytes)
        parts.append(b"\xff\xe1" + struct.pack(">H", len(exif) + 2) + exif)
    quant = b"\x00" + bytes(range(1, 65))
    parts.append(b"\xff\xdb" + struct.pack(">H", len(quant) + 2) + quant)
    frame = struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00"
    parts.append(b"\xff\xc0" + struct.pack(">H", len(frame) + 2) + frame)
    parts.append(b"\xff\xd9")
    return b"".join(parts)


def _riff(kind: bytes, chunks: bytes) -> bytes:
    return b"RIFF" + struct.pack("<I", len(chunks) + 4) + kind + chunks


def webp_lossy(width: int, height: int) -> bytes:
    """A WebP whose ``VP8 `` chunk opens with a key frame header of that size."""
    frame = b"\x10\x02\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 8
    return _riff(b"WEBP", b"VP8 " + struct.pack("<I", len(frame)) + frame)


def webp_lossless(width: int, height: int) -> bytes:
    """A WebP whose ``VP8L`` chunk header holds that size."""
    bits = (width - 1) | ((height - 1) << 14)
    body = b"\x2f" + struct.pack("<I", bits) + b"\x00" * 3
    return _riff(b"WEBP", b"VP8L" + struct.pack("<I", len(body)) + body)


def webp_extended(width: int, height: int) -> bytes:
    """A WebP whose ``VP8X`` chunk gives the canvas size."""
    body = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little")
    body += (height - 1).to_bytes(3, "little")
    return _riff(b"WEBP", b"VP8X" + struct.pack("<I", len(body)) + body)


def pdf(pages: int, *, pad_to: int = 0) -> bytes:
    """A PDF of ``pages`` pages of text; ``pad_to`` adds an image XObject of noise."""
    objects: list[bytes] = []
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode())
    for i in range(pages):
        content = f"BT /F1 12 Tf 72 720 Td (Page {i + 1} of the report) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            "/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
            ">> >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    if pad_to:
        noise = _noise(pad_to)
        objects.append(
            b"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /Length %d >>\nstream\n"
            % len(noise)
            + noise
            + b"\nendstream"
        )
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1))
    out.write(b"startxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def wav(seconds: float, *, rate: int = 8000) -> bytes:
    """A mono 16-bit WAV of ``seconds`` seconds of noise, written by ``wave``."""
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(_noise(int(seconds * rate) * 2))
    return out.getvalue()


def _box(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body) + 8) + kind + body


def mp4(seconds: float, *, timescale: int = 1000, media_bytes: int = 1024) -> bytes:
    """An MP4 box tree (``ftyp``, ``mdat`` first, then ``moov`` with its ``mvhd``)."""
    ftyp = _box(b"ftyp", b"isom\x00\x00\x02\x00isomiso2mp41")
    mvhd = _box(
        b"mvhd",
        b"\x00\x00\x00\x00"
        + struct.pack(">IIII", 0, 0, timescale, round(seconds * timescale))
        + b"\x00\x01\x00\x00\x01\x00"
        + b"\x00" * 70
        + struct.pack(">I", 2),
    )
    moov = _box(b"moov", mvhd + _box(b"trak", b"\x00" * 16))
    return ftyp + _box(b"mdat", _noise(media_bytes)) + moov
