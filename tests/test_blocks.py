"""Content blocks of every format: what each media block is, its reference, what it costs."""

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

from langgraph_compaction._blocks import (
    block_tokens,
    is_reasoning,
    media_block,
    media_reference,
    reasoning_text,
)
from langgraph_compaction._media import (
    ANTHROPIC_IMAGE_MAX_TOKENS,
    AUDIO_TOKENS_PER_SECOND,
    OPENAI_IMAGE_BASE_TOKENS,
    PDF_TOKENS_PER_PAGE,
    VIDEO_TOKENS_PER_SECOND,
    MediaBlock,
    anthropic_image_tokens,
    openai_image_tokens,
)
from langgraph_compaction._media_probe import PDF_SCAN_BYTES, TEXT_DECODE_BYTES, Probe, probe

Block = dict[str, Any]

PNG = png(1024, 768)
PDF = pdf(12)
WAV = wav(3)


def _anthropic_image(data: bytes, mime: str = "image/png") -> Block:
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": b64(data)}}


# (block, kind, mime, what the header gave, where it points)
FORMATS: list[tuple[str, Block, dict[str, Any]]] = [
    (
        "openai chat image_url, data URL",
        {"type": "image_url", "image_url": {"url": data_url("image/png", PNG), "detail": "high"}},
        {"kind": "image", "family": "openai", "mime_type": "image/png", "width": 1024},
    ),
    (
        "openai chat image_url, link",
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        {"kind": "image", "family": "openai", "url": "https://example.com/cat.png"},
    ),
    (
        "openai chat image_url, plain string",
        {"type": "image_url", "image_url": "https://example.com/cat.png"},
        {"kind": "image", "url": "https://example.com/cat.png"},
    ),
    (
        "openai chat input_audio",
        {"type": "input_audio", "input_audio": {"data": b64(WAV), "format": "wav"}},
        {"kind": "audio", "mime_type": "audio/wav", "seconds": 3.0},
    ),
    (
        "openai chat file, data",
        {
            "type": "file",
            "file": {"file_data": data_url("application/pdf", PDF), "filename": "r.pdf"},
        },
        {"kind": "file", "mime_type": "application/pdf", "file_name": "r.pdf", "pages": 12},
    ),
    (
        "openai chat file, id",
        {"type": "file", "file": {"file_id": "file-abc123"}},
        {"kind": "file", "file_id": "file-abc123"},
    ),
    (
        "responses input_image, data URL",
        {"type": "input_image", "image_url": data_url("image/png", PNG), "detail": "auto"},
        {"kind": "image", "family": "openai", "height": 768, "detail": "auto"},
    ),
    (
        "responses input_image, file id",
        {"type": "input_image", "file_id": "file-img", "detail": "low"},
        {"kind": "image", "file_id": "file-img"},
    ),
    (
        "responses input_file, data",
        {"type": "input_file", "filename": "r.pdf", "file_data": data_url("application/pdf", PDF)},
        {"kind": "file", "file_name": "r.pdf", "pages": 12},
    ),
    (
        "responses input_file, bare base64",
        {"type": "input_file", "filename": "r.pdf", "file_data": b64(PDF)},
        {"kind": "file", "mime_type": "application/pdf", "pages": 12},
    ),
    (
        "responses input_file, url",
        {"type": "input_file", "file_url": "https://example.com/r.pdf"},
        {"kind": "file", "url": "https://example.com/r.pdf"},
    ),
    (
        "anthropic image, base64",
        _anthropic_image(PNG),
        {"kind": "image", "family": "anthropic", "width": 1024, "height": 768},
    ),
    (
        "anthropic image, url",
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
        {"kind": "image", "family": "anthropic", "url": "https://example.com/a.jpg"},
    ),
    (
        "anthropic image, file",
        {"type": "image", "source": {"type": "file", "file_id": "file_011"}},
        {"kind": "image", "file_id": "file_011"},
    ),
    (
        "anthropic document, base64 pdf",
        {
            "type": "document",
            "title": "Q3 report",
            "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)},
        },
        {"kind": "file", "family": "anthropic", "file_name": "Q3 report", "pages": 12},
    ),
    (
        "anthropic document, url",
        {"type": "document", "source": {"type": "url", "url": "https://example.com/d.pdf"}},
        {"kind": "file", "url": "https://example.com/d.pdf"},
    ),
    (
        "anthropic document, text",
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "plain words " * 10},
        },
        {"kind": "file", "mime_type": "text/plain", "size_bytes": 120},
    ),
    (
        "anthropic document, file",
        {"type": "document", "source": {"type": "file", "file_id": "file_doc"}},
        {"kind": "file", "file_id": "file_doc"},
    ),
    (
        "standard image, base64",
        {"type": "image", "base64": b64(PNG), "mime_type": "image/png"},
        {"kind": "image", "family": "standard", "width": 1024, "height": 768},
    ),
    (
        "standard image, url",
        {"type": "image", "url": "https://example.com/x.webp"},
        {"kind": "image", "family": "standard", "url": "https://example.com/x.webp"},
    ),
    (
        "standard image, file id",
        {"type": "image", "file_id": "file-std", "mime_type": "image/jpeg"},
        {"kind": "image", "file_id": "file-std", "mime_type": "image/jpeg"},
    ),
    (
        "standard file, base64 with extras filename",
        {
            "type": "file",
            "base64": b64(PDF),
            "mime_type": "application/pdf",
            "extras": {"filename": "r.pdf"},
        },
        {"kind": "file", "file_name": "r.pdf", "pages": 12},
    ),
    (
        "standard audio, base64",
        {"type": "audio", "base64": b64(WAV), "mime_type": "audio/wav"},
        {"kind": "audio", "seconds": 3.0},
    ),
    (
        "standard video, base64",
        {"type": "video", "base64": b64(mp4(12.5)), "mime_type": "video/mp4"},
        {"kind": "video", "seconds": 12.5},
    ),
    (
        "standard video, url",
        {"type": "video", "url": "https://example.com/v.mp4"},
        {"kind": "video", "url": "https://example.com/v.mp4"},
    ),
    (
        "standard text-plain",
        {"type": "text-plain", "text": "a note", "mime_type": "text/plain", "title": "n.txt"},
        {"kind": "file", "file_name": "n.txt"},
    ),
    (
        "v0 image, source_type base64",
        {"type": "image", "source_type": "base64", "data": b64(PNG), "mime_type": "image/png"},
        {"kind": "image", "width": 1024},
    ),
    (
        "v0 file, source_type url",
        {"type": "file", "source_type": "url", "url": "https://example.com/f.pdf"},
        {"kind": "file", "url": "https://example.com/f.pdf"},
    ),
    (
        "v0 file, source_type id",
        {"type": "file", "source_type": "id", "id": "file-v0"},
        {"kind": "file", "file_id": "file-v0"},
    ),
    (
        "google media",
        {"type": "media", "mime_type": "audio/wav", "data": WAV},
        {"kind": "audio", "seconds": 3.0},
    ),
]


@pytest.mark.parametrize(
    ("block", "expected"), [f[1:] for f in FORMATS], ids=[f[0] for f in FORMATS]
)
def test_every_format_is_recognised(block: Block, expected: dict[str, Any]) -> None:
    media = media_block(block)
    assert media is not None
    assert {key: getattr(media, key) for key in expected} == expected
    reference = media_reference(block)
    assert reference is not None and reference.startswith(f"[{expected['kind']}")
    assert block_tokens(block) == media.tokens > 0


@pytest.mark.parametrize(
    ("block", "expected"), [f[1:] for f in FORMATS], ids=[f[0] for f in FORMATS]
)
def test_a_reference_never_holds_the_data(block: Block, expected: dict[str, Any]) -> None:
    reference = media_reference(block)
    assert reference is not None
    assert "base64" not in reference and "data:" not in reference
    assert len(reference) < 200
    for data in (b64(PNG), b64(PDF), b64(WAV)):
        assert data[:24] not in reference


def test_references_name_kind_mime_name_size_and_link() -> None:
    image = {
        "type": "image_url",
        "image_url": {"url": data_url("image/png", png(1024, 768, pad_to=236_500))},
    }
    assert media_reference(image) == "[image: image/png, 1024x768, 231 KB]"
    document = {
        "type": "file",
        "file": {
            "file_data": data_url("application/pdf", pdf(12, pad_to=407_000)),
            "filename": "report.pdf",
        },
    }
    assert media_reference(document) == "[file: application/pdf, report.pdf, 12 pages, 402 KB]"
    link = {"type": "image", "url": "https://example.com/cat.png", "mime_type": "image/png"}
    assert media_reference(link) == "[image: image/png, https://example.com/cat.png]"
    clip = {"type": "input_audio", "input_audio": {"data": b64(wav(25)), "format": "wav"}}
    assert media_reference(clip) == "[audio: audio/wav, 25 s, 391 KB]"
    video = {"type": "video", "base64": b64(mp4(185)), "mime_type": "video/mp4"}
    assert media_reference(video) == "[video: video/mp4, 3 min 5 s, 1 KB]"


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


def test_reasoning_blocks_of_each_provider() -> None:
    thinking = {
        "type": "thinking",
        "thinking": "Check the date first.",
        "signature": "EqQBCkYIBxgC",
    }
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    openai = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [
            {"type": "summary_text", "text": "Looked at "},
            {"type": "summary_text", "text": "the logs."},
        ],
        "encrypted_content": "gAAAAB...",
    }
    standard = {"type": "reasoning", "reasoning": "Two options remain."}
    for block in (thinking, redacted, openai, standard):
        assert is_reasoning(block)
        assert media_reference(block) is None and block_tokens(block) is None
    assert reasoning_text(thinking) == "Check the date first."
    assert reasoning_text(redacted) == redacted["data"]
    assert reasoning_text(openai) == "Looked at the logs."
    assert reasoning_text(standard) == "Two options remain."
    for other in (
        {"type": "text", "text": "hi"},
        {"type": "tool_use", "id": "t", "name": "n", "input": {}},
        "text",
        None,
    ):
        assert not is_reasoning(other)
        assert media_reference(other) is None and block_tokens(other) is None


ODD_BLOCKS: list[object] = [
    None,
    3,
    "plain",
    ["image_url"],
    object(),
    {},
    {"type": None},
    {"type": "image_url"},
    {"type": "image_url", "image_url": None},
    {"type": "image_url", "image_url": {"url": 5}},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,!!!not base64!!!"}},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo"}},  # cut short
    {"type": "image_url", "image_url": {"url": "data:,plain%20text"}},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,\ud800\udfff"}},
    {"type": "input_audio", "input_audio": "nope"},
    {"type": "input_audio", "input_audio": {"data": 12, "format": None}},
    {
        "type": "file",
        "file": {"filename": "r\ud800.pdf", "file_data": data_url("application/pdf", PDF)},
    },
    {"type": "input_file", "filename": ["x"]},
    {"type": "image", "source": {"type": "base64", "data": None}},
    {"type": "image", "source": {"type": "weird"}},
    {
        "type": "document",
        "source": {"type": "content", "content": [None, {"type": "text", "text": 3}]},
    },
    {"type": "image", "base64": "A" * 1001, "mime_type": "image/png"},
    {
        "type": "audio",
        "base64": b64(b"RIFF\xff\xff\xff\xffWAVEfmt \x10\x00\x00\x00" + bytes(16)),
        "mime_type": "audio/wav",
    },
    {
        "type": "audio",
        "base64": b64(b"RIFF\x00\x00\x00\x00WAVEdata\xff\xff\xff\xff"),
        "mime_type": "audio/wav",
    },
    {"type": "video", "base64": b64(b"\x00\x00\x00\x00moov" + bytes(8)), "mime_type": "video/mp4"},
    {"type": "video", "base64": b64(b"\x00\x00\x00\x01moov" + bytes(8)), "mime_type": "video/mp4"},
    {"type": "image", "base64": b64(b"\xff\xd8\xff\xe0\x00\x00"), "mime_type": "image/jpeg"},
    {"type": "image", "base64": b64(png(64, 64)[:20]), "mime_type": "image/png"},
    {"type": "image", "base64": b64(gif(64, 64)[:8])},
    {"type": "image", "base64": b64(webp_lossy(64, 64)[:28])},
    {"type": "image", "base64": b64(b"RIFF\x00\x00\x00\x00WEBPVP8 "), "mime_type": "image/webp"},
    {"type": "file", "base64": b64(b"%PDF-" + b"\xff" * 50), "mime_type": "application/pdf"},
    {"type": "image", "source_type": "base64", "data": b"\x89PNG", "mime_type": "image/png"},
    {"type": "video", "source_type": "id"},
    {"type": "text-plain"},
    {"type": "media", "mime_type": 5},
]


@pytest.mark.parametrize("block", ODD_BLOCKS, ids=range(len(ODD_BLOCKS)))
def test_odd_blocks_never_raise(block: object) -> None:
    reference = media_reference(block)
    tokens = block_tokens(block)
    is_reasoning(block)
    if reference is not None:
        reference.encode("utf-8")  # no lone surrogate reaches a prompt
        assert tokens is not None and tokens >= 0


def test_a_lone_surrogate_in_a_file_name_is_replaced() -> None:
    block = {
        "type": "file",
        "file": {"filename": "r\ud800.pdf", "file_data": data_url("application/pdf", PDF)},
    }
    reference = media_reference(block)
    assert reference is not None
    assert reference.startswith("[file: application/pdf, r?.pdf, 12 pages, ")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.binary(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
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
        "thinking",
        "reasoning",
        "text",
        "tool_use",
    ]
)
_KEYS = st.sampled_from(
    [
        "image_url",
        "input_audio",
        "file",
        "source",
        "url",
        "base64",
        "data",
        "file_data",
        "file_id",
        "id",
        "mime_type",
        "source_type",
        "filename",
        "detail",
        "format",
        "type",
        "media_type",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    kind=_TYPES,
    fields=st.dictionaries(_KEYS, _JSON | st.dictionaries(_KEYS, _JSON, max_size=4), max_size=5),
)
def test_any_block_of_a_known_type_never_raises(kind: str, fields: dict[str, Any]) -> None:
    block = {**fields, "type": kind}
    reference = media_reference(block)
    tokens = block_tokens(block)
    assert (reference is None) == (tokens is None)
    if reference is not None:
        reference.encode("utf-8")


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
