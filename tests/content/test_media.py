"""What media costs: the headers read from the data, and each type's rule."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from media_files import (
    b64,
    data_url,
    gif,
    jpeg,
    mp4,
    pdf,
    png,
    wav,
    webp_extended,
    webp_lossless,
    webp_lossy,
)

from langgraph_compaction.content.blocks import block_tokens, media_block, media_reference
from langgraph_compaction.content.media import (
    ANTHROPIC_IMAGE_MAX_TOKENS,
    AUDIO_TOKENS_PER_SECOND,
    OPENAI_IMAGE_BASE_TOKENS,
    PDF_TOKENS_PER_PAGE,
    VIDEO_TOKENS_PER_SECOND,
    MediaBlock,
    anthropic_image_tokens,
    openai_image_tokens,
)
from langgraph_compaction.content.media_probe import PDF_SCAN_BYTES, TEXT_DECODE_BYTES, Probe, probe

Block = dict[str, Any]


def _anthropic_image(data: bytes, mime: str = "image/jpeg") -> Block:
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": b64(data)}}


_TYPES = st.sampled_from(
    [
        "image_url",
        "input_image",
        "input_audio",
        "input_file",
        "file",
        "image",
        "document",
        "audio",
        "video",
        "text-plain",
        "media",
    ]
)


@pytest.mark.parametrize(
    ("data", "size"),
    [
        (png(1920, 1080), (1920, 1080)),
        (gif(640, 480), (640, 480)),
        (jpeg(4032, 3024), (4032, 3024)),
        (jpeg(800, 600, exif_bytes=40_000), (800, 600)),  # the frame header after the EXIF
        (webp_lossy(800, 600), (800, 600)),
        (webp_lossless(300, 200), (300, 200)),
        (webp_extended(5000, 4000), (5000, 4000)),
    ],
    ids=["png", "gif", "jpeg", "jpeg-exif", "webp-vp8", "webp-vp8l", "webp-vp8x"],
)
def test_image_size_from_the_header(data: bytes, size: tuple[int, int]) -> None:
    found = probe(b64(data), None, "image")
    assert (found.width, found.height) == size
    assert found.size_bytes == len(data)


def test_base64_wrapped_in_lines_is_read_as_one() -> None:
    data = b64(png(1920, 1080, pad_to=4000))
    wrapped = "\n".join(data[i : i + 76] for i in range(0, len(data), 76))
    found = probe(wrapped, "image/png", "image")
    assert (found.width, found.height, found.size_bytes) == (
        1920,
        1080,
        probe(data, None, "image").size_bytes,
    )


def test_image_rules_of_each_provider_family() -> None:
    # OpenAI's published examples: 1024x1024 high detail is 765; 2048x4096 is 1105
    assert openai_image_tokens(1024, 1024) == 765
    assert openai_image_tokens(2048, 4096) == 1105
    assert openai_image_tokens(4032, 3024) == 765  # to 2048x1536, then 1024x768: 4 tiles
    # Anthropic: w*h/750, the long edge fitted to 1568, at most about 1,600
    assert anthropic_image_tokens(1092, 1092) == 1590
    assert anthropic_image_tokens(200, 200) == 54
    assert anthropic_image_tokens(4000, 3000) == ANTHROPIC_IMAGE_MAX_TOKENS
    photo = jpeg(4032, 3024)
    openai = {"type": "input_image", "image_url": data_url("image/jpeg", photo)}
    low = {
        "type": "image_url",
        "image_url": {"url": data_url("image/jpeg", photo), "detail": "low"},
    }
    anthropic = _anthropic_image(photo, "image/jpeg")
    standard = {"type": "image", "base64": b64(png(1024, 768)), "mime_type": "image/png"}
    assert block_tokens(openai) == 765
    assert block_tokens(low) == OPENAI_IMAGE_BASE_TOKENS
    assert block_tokens(anthropic) == 1600
    # a LangChain block names no provider: the costlier of the two rules
    assert block_tokens(standard) == max(765, math.ceil(1024 * 768 / 750)) == 1049
    # no header to read: the family's figure
    assert block_tokens({"type": "image_url", "image_url": {"url": "https://x/y.png"}}) == 765
    assert block_tokens({"type": "image", "source": {"type": "url", "url": "https://x"}}) == 1600


def test_large_media_cost_far_below_their_base64_length() -> None:
    image = png(1024, 768, pad_to=400_000)
    document = pdf(12, pad_to=400_000)
    clip = wav(25)  # 8 kHz, 16-bit: 400,044 bytes
    blocks: dict[str, tuple[Block, int]] = {
        "input_image": ({"type": "input_image", "image_url": data_url("image/png", image)}, 765),
        "pdf": (
            {
                "type": "input_file",
                "filename": "r.pdf",
                "file_data": data_url("application/pdf", document),
            },
            12 * PDF_TOKENS_PER_PAGE,  # 28,800
        ),
        "audio": (
            {"type": "input_audio", "input_audio": {"data": b64(clip), "format": "wav"}},
            25 * AUDIO_TOKENS_PER_SECOND,  # 800
        ),
    }
    for name, (block, expected) in blocks.items():
        base64_tokens = count_tokens_approximately([HumanMessage([block])])
        assert base64_tokens > 130_000, name  # what the base64 length counted for
        assert block_tokens(block) == expected, name


def test_without_a_header_media_is_priced_by_size_or_a_fixed_figure() -> None:
    mp3 = b"ID3" + bytes(409_597)  # 400 KB at 128 kbit/s: 25.6 s
    assert block_tokens({"type": "audio", "base64": b64(mp3), "mime_type": "audio/mpeg"}) == 820
    unknown_pdf = b"%PDF-1.7\n" + bytes(512_000 - 9)  # pages in compressed streams
    assert (
        block_tokens({"type": "file", "base64": b64(unknown_pdf), "mime_type": "application/pdf"})
        == 10 * PDF_TOKENS_PER_PAGE
    )
    counted = b"%PDF-1.5\n1 0 obj << /Type /Pages /Kids [4 0 R] /Count 7 >> endobj\n" + bytes(100)
    assert (
        block_tokens({"type": "file", "base64": b64(counted), "mime_type": "application/pdf"})
        == 7 * PDF_TOKENS_PER_PAGE
    )
    assert (
        block_tokens({"type": "video", "url": "https://example.com/v.mp4"})
        == 60 * VIDEO_TOKENS_PER_SECOND
    )
    assert block_tokens(
        {"type": "video", "base64": b64(mp4(12.5)), "mime_type": "video/mp4"}
    ) == math.ceil(12.5 * VIDEO_TOKENS_PER_SECOND)
    assert block_tokens({"type": "file", "file_id": "file-1"}) == 4 * PDF_TOKENS_PER_PAGE
    large = b"x" * (TEXT_DECODE_BYTES + 4)  # not decoded: a byte a character
    assert block_tokens({"type": "file", "base64": b64(large), "mime_type": "text/csv"}) == (
        math.ceil(len(large) / 4)
    )
    v0_text = {"type": "file", "source_type": "text", "text": "abcd" * 25}
    assert block_tokens(v0_text) == 25
    assert media_reference(v0_text) == "[file: text/plain, 100 B]"
    text = "one line of a log file\n" * 1000
    plain = {"type": "file", "base64": b64(text.encode()), "mime_type": "text/plain"}
    assert block_tokens(plain) == math.ceil(len(text) / 4)
    assert media_block(plain) == MediaBlock("file", "standard", "text/plain", size_bytes=len(text))


def test_a_pdf_too_large_to_scan_gives_its_page_tree_count_from_either_end() -> None:
    large = pdf(30, pad_to=PDF_SCAN_BYTES + 500_000)  # catalog and page tree at the start
    assert block_tokens({"type": "file", "base64": b64(large), "mime_type": "application/pdf"}) == (
        30 * PDF_TOKENS_PER_PAGE
    )
    noise = bytes(PDF_SCAN_BYTES)
    hidden = b"%PDF-1.4\n" + noise + b"<< /Type /Pages /Count 9 >>" + noise  # in the middle only
    found = media_block({"type": "file", "base64": b64(hidden), "mime_type": "application/pdf"})
    assert found is not None and found.pages is None
    assert found.tokens == math.ceil(len(hidden) / (50 * 1024) * PDF_TOKENS_PER_PAGE)


def test_large_data_is_probed_once_per_process() -> None:
    data = b64(pdf(12, pad_to=300_000))
    first = probe(data, "application/pdf", "file")
    assert probe(data, "application/pdf", "file") is first
    assert probe("".join(list(data)), "application/pdf", "file") is first  # an equal copy
    assert probe(data, None, "file") is not first  # what the block declares is part of the key
    assert probe(data, None, "file") == Probe(first.size_bytes, "application/pdf", pages=12)
    url = data_url("application/pdf", pdf(12, pad_to=300_000))  # read in place, after its comma
    assert probe(url, "application/pdf", "file", start=url.index(",") + 1) == first


_MAGIC = st.sampled_from(
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR",
        b"\xff\xd8\xff",
        b"GIF89a",
        b"RIFF\x00\x00\x00\x00WEBPVP8 ",
        b"RIFF\x00\x00\x00\x00WEBPVP8L",
        b"RIFF\x00\x00\x00\x00WEBPVP8X",
        b"RIFF\x10\x00\x00\x00WAVEfmt ",
        b"%PDF-1.4\n",
        b"\x00\x00\x00\x18ftypisom",
        b"\x00\x00\x00\x08moov",
        b"",
    ]
)
_MIMES = st.sampled_from(
    [None, "image/png", "image/jpeg", "image/webp", "audio/wav", "video/mp4", "application/pdf"]
)


@settings(max_examples=400, deadline=None)
@given(magic=_MAGIC, tail=st.binary(max_size=300), mime=_MIMES, kind=_TYPES)
def test_headers_of_garbage_never_raise(
    magic: bytes, tail: bytes, mime: str | None, kind: str
) -> None:
    data = magic + tail
    for block in (
        {"type": kind, "base64": b64(data), "mime_type": mime},
        {"type": kind, "source_type": "base64", "data": data, "mime_type": mime},
    ):
        reference = media_reference(block)
        if reference is not None:
            assert (block_tokens(block) or 0) >= 0
