"""SummaryStore's public surface is what a person or an agent's code uses (DESIGN 7).

The pipeline's own calls (leases, failures, calibration, the control version, review drafts,
writing summaries) are on ``plumbing(store)``: a method added to SummaryStore, or a plumbing
method made public, fails here, and so does one that would appear in the API reference.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import langgraph_compaction
import langgraph_compaction.store
from langgraph_compaction import SummaryStore
from langgraph_compaction.store.plumbing import Plumbing
from langgraph_compaction.store.summary_store import plumbing

ROOT = Path(__file__).resolve().parents[2]

READING = ("list_summaries", "latest_summaries", "search_messages", "thread_state")
STEERING = (
    "request_compaction",
    "pin_messages",
    "unpin_messages",
    "pinned_messages",
    "edit_summary",
    "revoke_summary",
)
HOUSEKEEPING = ("delete_thread", "check_integrity", "close")
PUBLIC_METHODS = {name for sync in READING + STEERING + HOUSEKEEPING for name in (sync, f"a{sync}")}
PROPERTIES = {"url", "retention", "lease_ttl", "busy_timeout"}
"""Each reads back a constructor argument."""


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def _plumbing_methods() -> set[str]:
    return {name for name, _ in inspect.getmembers(Plumbing, callable)} & _public(Plumbing)


def test_the_public_methods_are_the_documented_list() -> None:
    methods = {name for name in _public(SummaryStore) if callable(getattr(SummaryStore, name))}
    assert methods == PUBLIC_METHODS
    assert len(methods) == 26
    properties = {
        n for n in _public(SummaryStore) if isinstance(getattr(SummaryStore, n), property)
    }
    assert properties == PROPERTIES
    assert _public(SummaryStore) == PUBLIC_METHODS | PROPERTIES


def test_every_method_has_its_async_twin_with_the_same_parameters() -> None:
    for name in READING + STEERING + HOUSEKEEPING:
        sync, twin = getattr(SummaryStore, name), getattr(SummaryStore, f"a{name}")
        assert inspect.iscoroutinefunction(twin) and not inspect.iscoroutinefunction(sync)
        assert list(inspect.signature(sync).parameters) == list(
            inspect.signature(twin).parameters
        ), name


def test_the_pipeline_calls_are_on_the_plumbing_only() -> None:
    pipeline_only = _plumbing_methods()
    assert {
        "add_summary",
        "acquire_lease",
        "pending_request",
        "consume_request",
        "save_review",
    } <= (pipeline_only)
    assert not pipeline_only & _public(SummaryStore)
    for names in (langgraph_compaction.__all__, langgraph_compaction.store.__all__):
        assert "Plumbing" not in names and "plumbing" not in names


def test_each_store_has_one_plumbing() -> None:
    store, other = SummaryStore("sqlite:///:memory:"), SummaryStore("sqlite:///:memory:")
    assert plumbing(store) is plumbing(store)
    assert plumbing(store) is not plumbing(other)


def test_the_api_reference_shows_no_plumbing() -> None:
    """What mkdocstrings renders for ``::: langgraph_compaction.SummaryStore``: the members
    griffe finds (inherited ones too), less those the site's filter ``!^_`` hides."""
    griffe = pytest.importorskip("griffe")
    page = (ROOT / "docs" / "reference" / "api.md").read_text()
    assert "::: langgraph_compaction.SummaryStore\n" in page
    package = griffe.load("langgraph_compaction", search_paths=[str(ROOT)])
    rendered = {name for name in package["SummaryStore"].all_members if not name.startswith("_")}
    assert rendered == PUBLIC_METHODS | PROPERTIES
    for name in _plumbing_methods() | {"Plumbing", "plumbing"}:
        assert name not in page, name
