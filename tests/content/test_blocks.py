"""Content blocks of every format: what each media block is, its reference, what it costs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from media_files import (
    b64,
    data_url,
    gif,
    mp4,
    pdf,
    png,
    wav,
    webp_lossy,
)

from langgraph_compaction.content.blocks import (
    block_tokens,
    is_reasoning,
    media_block,
    media_reference,
    reasoning_text,
)

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


@pytest.mark.slow
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
