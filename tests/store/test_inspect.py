"""``python -m langgraph_compaction.store inspect``: what a person sees, in 100 columns.

Every view is checked on SQLite and PostgreSQL, and on the real store the demo leaves behind:
no line is wider than a 100-column terminal, ``--full`` prints whole summaries (with
``--thread``, each version's text), and the JSON view carries the same data for scripts.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from langgraph_compaction import SummaryStore
from langgraph_compaction.store import SummaryRecord
from langgraph_compaction.store.cli.inspect import main as cli
from langgraph_compaction.store.cli.render import WIDTH, cut_middle, render_table, wrap
from langgraph_compaction.store.schema.migrate import SCHEMA_VERSION
from langgraph_compaction.store.summary_store import plumbing

ROOT = Path(__file__).resolve().parents[2]
LONG_THREAD = "tenant-7f3a9c2e-4b1d-4e8a-9f00-2c6b8d1e5a47:user-1842:session-2024-11-30"
LONG_ERROR = (
    "RateLimitError: Error code: 429 - {'error': {'message': 'Rate limit reached for "
    "gpt-4.1-mini in organization org-abc on tokens per min (TPM): Limit 200000, Used 199000, "
    "Requested 4200. Please try again in 1.26s.', 'type': 'tokens', 'code': 'rate_limit_exceeded'}}"
)
MULTILINE = "## Goal\nShip the release.\n\n## Progress\n- " + "tested the migration; " * 30


def add(
    store: SummaryStore, thread: str, n: int, parent: SummaryRecord | None, **kw: Any
) -> SummaryRecord:
    values: dict[str, Any] = {
        "thread_id": thread, "namespace": "default", "parent_id": parent.id if parent else None,
        "boundary_message_id": f"m-{n}", "covered_messages": 10 * n, "prefix_hash": f"p-{n}",
        "summary": f"Summary number {n}.", "summary_tokens": 20 + n, "source_tokens": 1000 * n,
        "kind": "update" if parent else "initial", "model": "gpt-4o-mini",
        "rescued_message_ids": [],
    }  # fmt: skip
    return plumbing(store).add_summary(**{**values, **kw})


def run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The CLI's output, after checking it exits 0 and fits the terminal."""
    assert cli(list(args)) == 0
    out, err = capsys.readouterr()
    assert err == ""
    too_wide = [line for line in out.splitlines() if len(line) > WIDTH]
    assert not too_wide, f"{len(too_wide)} line(s) wider than {WIDTH}: {too_wide[:3]}"
    return out


def test_the_overview_shows_threads_failures_and_calibration(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SummaryStore(store_url) as store:
        first = add(store, "t-1", 1, None)
        add(store, "t-1", 2, first)
        plumbing(store).record_failure("t-1", "default", message_count=12, error="model timed out")
        plumbing(store).set_calibration("t-1", "default", 1.125)

    out = run(capsys, "inspect", "--url", store_url)

    lines = out.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("THREAD"))
    header, rule, row = lines[top : top + 3]
    assert header.split()[:4] == ["THREAD", "NAMESPACE", "VERSIONS", "LATEST"]
    assert set(rule) == {"-", " "} and len(rule) == len(header)
    assert row.split() == ["t-1", "default", "2", "v2", "22", *row.split()[5:7], "1"]
    notes = lines[top + 4 : lines.index("", top + 5)]  # the usage table follows
    note = " ".join(" ".join(notes).split())
    assert note.startswith("t-1 [default]: calibration 1.125; 1 consecutive failure(s), the last")
    assert note.endswith("UTC: model timed out")


def test_every_view_fits_100_columns_with_long_names_and_errors(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SummaryStore(store_url) as store:
        parent = None
        for n in range(1, 4):
            parent = add(
                store, LONG_THREAD, n, parent, namespace="team-analytics-eu-west",
                summary=MULTILINE + f" v{n}", model="accounts/fireworks/models/qwen2p5-72b",
                covered_messages=123_456 * n, source_tokens=9_876_543,
            )  # fmt: skip
        plumbing(store).record_failure(
            LONG_THREAD, "team-analytics-eu-west", message_count=9, error=LONG_ERROR
        )

    overview = run(capsys, "inspect", "--url", store_url)
    assert "(long names are cut in the middle to fit; --json prints them whole)" in overview
    row = next(line for line in overview.splitlines() if line.startswith("tenant-"))
    assert row.startswith(cut_middle(LONG_THREAD, len(row.split()[0]))), row
    assert "rate_limit_exceeded" in overview  # the whole error, wrapped

    versions = run(capsys, "inspect", "--url", store_url, "--thread", LONG_THREAD)
    assert f"thread {LONG_THREAD}" in versions.replace("\n", " ")
    assert versions.count("  id ") == 3
    for args in (["--full"], ["--thread", LONG_THREAD, "--full"], ["--namespace", "none"]):
        run(capsys, "inspect", "--url", store_url, *args)
    run(capsys, "check", "--url", store_url)
    run(capsys, "migrate", "--url", store_url)

    data = json.loads(run_json(capsys, store_url, "--thread", LONG_THREAD))
    assert [e["thread_id"] for e in data["threads"]] == [LONG_THREAD]  # whole, not cut
    assert data["threads"][0]["last_error"] == LONG_ERROR


def run_json(capsys: pytest.CaptureFixture[str], store_url: str, *args: str) -> str:
    assert cli(["inspect", "--url", store_url, *args, "--json"]) == 0
    return capsys.readouterr().out


def test_full_prints_whole_summaries(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    texts = [MULTILINE + f" (version {n})" for n in (1, 2)]
    with SummaryStore(store_url) as store:
        first = add(store, "t", 1, None, summary=texts[0])
        add(store, "t", 2, first, summary=texts[1])

    preview = run(capsys, "inspect", "--url", store_url, "--thread", "t")
    assert "(version 1)" not in preview and "(version 2)" not in preview  # previews are cut

    every = run(capsys, "inspect", "--url", store_url, "--thread", "t", "--full")
    assert unwrapped(every).count(unwrapped(MULTILINE)) == 2
    assert "(version 1)" in every and "(version 2)" in every

    newest = run(capsys, "inspect", "--url", store_url, "--full")
    assert "t [default] v2, newest summary:" in newest
    assert "(version 2)" in newest and "(version 1)" not in newest

    data = json.loads(run_json(capsys, store_url, "--thread", "t", "--full"))
    assert [v["summary"] for v in data["versions"]] == texts
    assert "summary" not in json.loads(run_json(capsys, store_url, "--thread", "t"))["versions"][0]


def unwrapped(text: str) -> str:
    """The words of ``text``, whatever the line breaks and indentation."""
    return " ".join(text.split())


def test_versions_show_lineage_and_filter_by_namespace(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SummaryStore(store_url, retention=2) as store:
        for ns in ("alpha", "beta"):
            first = add(store, "t", 1, None, namespace=ns)
            second = add(store, "t", 2, first, namespace=ns)
        add(store, "t", 3, second, namespace="beta")  # retention drops beta's v1
        plumbing(store).record_failure("t", "beta", message_count=9, error="rate limited")

    alpha = json.loads(run_json(capsys, store_url, "--namespace", "alpha"))
    assert [(e["namespace"], e["versions"]) for e in alpha["threads"]] == [("alpha", 2)]
    assert alpha["schema_version"] == str(SCHEMA_VERSION) and "versions" not in alpha

    beta = json.loads(run_json(capsys, store_url, "--thread", "t", "--namespace", "beta"))
    [entry] = beta["threads"]
    assert (entry["consecutive_failures"], entry["last_error"]) == (1, "rate limited")
    assert [(v["version"], v["parent_version"], v["parent_gone"]) for v in beta["versions"]] == [
        (2, 1, True),
        (3, 2, False),
    ]

    text = run(capsys, "inspect", "--url", store_url, "--thread", "t", "--namespace", "beta")
    assert "alpha" not in text
    assert "thread t, namespace beta: 2 version(s), oldest first" in text
    blocks = [line.split()[:6] for line in text.splitlines() if line.startswith("v")]
    ids = [v["id"][:8] for v in beta["versions"]]
    assert blocks == [
        ["v2", "id", ids[0], "update", "of", "v1"],
        ["v3", "id", ids[1], "update", "of", "v2"],
    ]
    assert "update of v1 (gone)" in text


def test_an_unknown_thread_is_named_and_exits_1(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SummaryStore(store_url) as store:
        add(store, "t-1", 1, None, namespace="alpha")

    for extra in ([], ["--json"], ["--full"]):
        assert cli(["inspect", "--url", store_url, "--thread", "nosuch", *extra]) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert err.startswith("error: no thread nosuch in ")
        assert "run inspect without --thread" in err
    wrong_namespace = ["--thread", "t-1", "--namespace", "beta"]
    assert cli(["inspect", "--url", store_url, *wrong_namespace]) == 1
    assert capsys.readouterr().err.startswith("error: no thread t-1 (namespace beta) in ")
    assert "v1" in run(capsys, "inspect", "--url", store_url, "--thread", "t-1")


def test_a_thread_with_failures_but_no_summary_is_known(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SummaryStore(store_url) as store:
        plumbing(store).record_failure("t-2", "default", message_count=4, error="model timed out")

    assert "model timed out" in unwrapped(
        run(capsys, "inspect", "--url", store_url, "--thread", "t-2")
    )


@pytest.mark.slow
def test_the_demos_store_fits_and_prints_every_summary_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The store a real run leaves behind (the demo, offline), read as its last lines say."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "COMPACTION_"))}
    demo = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_loop.py"), "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stderr
    path = tmp_path / "compaction.db"
    assert f"open {path} in any SQLite browser" in demo.stdout
    assert "langgraph_compaction.store inspect" in demo.stdout
    store_url = f"sqlite:///{path}"

    out = run(
        capsys, "inspect", "--url", store_url, "--thread", "shop-etl-nightly-export", "--full"
    )

    with closing(sqlite3.connect(path)) as db:  # as a SQLite browser would read it
        stored = [row[0] for row in db.execute("SELECT summary FROM compaction_summaries")]
    assert len(stored) >= 2
    for summary in stored:
        assert unwrapped(summary) in unwrapped(out)
    for args in ([], ["--full"], ["--thread", "shop-etl-nightly-export"]):
        run(capsys, "inspect", "--url", store_url, *args)


def test_wrap_and_tables_never_exceed_the_width() -> None:
    lines = wrap("x" * 250 + " word\n\n  indented line", 40, indent="  ")
    assert all(len(line) <= 40 for line in lines) and "    indented line" in lines[-1]
    table = render_table(
        ("THREAD", "N"), [("a" * 150, "1"), ("short", "22")], width=30, shrink=(0,)
    )
    assert all(len(line) <= 30 for line in table.splitlines())
    assert "…" in table and table.splitlines()[3].startswith("short ")
