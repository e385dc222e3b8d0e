"""``python -m langgraph_compaction.store edit|revoke``, and what ``inspect`` shows of steering.

The edit and revoke flow runs through a real subprocess on SQLite and PostgreSQL, as a
person runs it; the refusals run in-process through the same ``main``, on SQLite.
"""

# ruff: noqa: RUF001 (Chinese punctuation and Arabic letters in the texts)

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _store_support import summary_fields

from langgraph_compaction.store import SummaryStore
from langgraph_compaction.store.cli.inspect import main as cli
from langgraph_compaction.store.cli.render import WIDTH
from langgraph_compaction.store.summary_store import plumbing


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "langgraph_compaction.store", *args]
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def two_versions(url: str, thread: str = "t", namespace: str = "default") -> list[Any]:
    with SummaryStore(url) as store:
        first = plumbing(store).add_summary(**summary_fields(thread, namespace, 1))
        second = plumbing(store).add_summary(
            **summary_fields(thread, namespace, 2, parent_id=first.id)
        )
        return [first, second]


@pytest.mark.slow
def test_edit_and_revoke_through_the_command_line(store_url: str, tmp_path: Path) -> None:
    first, second = two_versions(store_url, namespace="ns")

    edited = run("edit", "--url", store_url, "--thread", "t", "--namespace", "ns", "--text",
                 "用户要订从柏林到东京的航班，经济舱。")  # fmt: skip
    assert edited.returncode == 0, edited.stderr
    said = " ".join(edited.stdout.split())
    assert "thread t [ns]: stored v3, an edit of v2 covering 20 message(s)" in said, said

    draft = tmp_path / "summary.txt"
    draft.write_text("يريد المستخدم رحلة من برلين إلى طوكيو.\n", encoding="utf-8")
    from_file = run("edit", "--url", store_url, "--thread", "t", "--namespace", "ns",
                    "--file", str(draft))  # fmt: skip
    assert from_file.returncode == 0, from_file.stderr
    from_stdin = run("edit", "--url", store_url, "--thread", "t", "--namespace", "ns",
                     "--file", "-", stdin="Пользователь летит из Берлина в Токио.")  # fmt: skip
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert "stored v5, an edit of v4" in " ".join(from_stdin.stdout.split())

    with SummaryStore(store_url) as store:
        rows = store.list_summaries("t", "ns")
        assert [r.kind for r in rows] == ["initial", "update", "edited", "edited", "edited"]
        assert rows[3].summary == "يريد المستخدم رحلة من برلين إلى طوكيو.\n"
        assert plumbing(store).find_summary("t", "ns", second.prefix_hash) == rows[4]

    revoked = run("revoke", "--url", store_url, "--thread", "t", "--namespace", "ns",
                  "--version", "2")  # fmt: skip
    assert revoked.returncode == 0, revoked.stderr
    said = " ".join(revoked.stdout.split())
    assert "thread t [ns]: revoked v2 and 3 later version(s); v1 is now the newest in use" in said
    newest = run("revoke", "--url", store_url, "--thread", "t", "--namespace", "ns")
    assert newest.returncode == 0, newest.stderr
    assert "revoked v1; no summary is in use" in " ".join(newest.stdout.split())

    nothing = run("revoke", "--url", store_url, "--thread", "t", "--namespace", "ns")
    assert nothing.returncode == 2 and nothing.stdout == ""
    assert nothing.stderr.count("\n") == 1
    assert nothing.stderr.startswith("error: thread 't' in namespace 'ns' has no summary in use")
    with SummaryStore(store_url) as store:
        assert store.latest_summaries("t", "ns") == []
        assert all(r.revoked_at is not None for r in store.list_summaries("t", "ns"))
        assert first.id == store.list_summaries("t", "ns")[0].id


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    two_versions(url)
    return url


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["edit", "--thread", "nope", "--text", "x"],
         "error: thread 'nope' in namespace 'default' has no summary to edit"),
        (["edit", "--thread", "t", "--namespace", "other", "--text", "x"],
         "error: thread 't' in namespace 'other' has no summary to edit"),
        (["edit", "--thread", "t", "--text", "  \n "], "error: the edited summary is blank"),
        (["edit", "--thread", "t", "--file", "/no/such/file.txt"],
         "error: cannot read --file /no/such/file.txt: No such file or directory"),
        (["revoke", "--thread", "t", "--version", "9"],
         "error: thread 't' in namespace 'default' has no version 9 (stored: v1, v2)"),
        (["revoke", "--thread", "nope"],
         "error: thread 'nope' in namespace 'default' has no summary in use to revoke"),
    ],
)  # fmt: skip
def test_refused_input_exits_2_with_one_line(
    sqlite_url: str, args: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli([args[0], "--url", sqlite_url, *args[1:]]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(error) and err.count("\n") == 1, err
    with SummaryStore(sqlite_url) as store:
        rows = store.list_summaries("t")
        assert [(r.kind, r.revoked_at) for r in rows] == [("initial", None), ("update", None)]


def test_a_file_that_is_not_utf8_is_refused(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Zusammenfassung für München".encode("latin-1"))
    assert cli(["edit", "--url", sqlite_url, "--thread", "t", "--file", str(latin1)]) == 2
    assert f"error: cannot read --file {latin1}: 'utf-8' codec" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["edit", "--thread", "t"],  # neither --text nor --file
        ["edit", "--thread", "t", "--text", "a", "--file", "b"],
        ["revoke", "--thread", "t", "--version", "0"],
        ["revoke", "--thread", "t", "--version", "two"],
        ["revoke"],  # no --thread
    ],
)
def test_usage_errors_exit_2(
    sqlite_url: str, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli([args[0], "--url", sqlite_url, *args[1:]])
    assert exited.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_a_missing_store_is_never_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "missing.db"
    for verb in (["edit", "--text", "x"], ["revoke"]):
        assert cli([verb[0], "--url", f"sqlite:///{path}", "--thread", "t", *verb[1:]]) == 1
        assert f"no SQLite file at {path}; check --url" in capsys.readouterr().err
    assert not path.exists()


def test_inspect_shows_edits_revocations_pins_and_a_request(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    two_versions(store_url)
    with SummaryStore(store_url) as store:
        store.edit_summary("t", "Отредактированное резюме.")
        store.revoke_summary("t", version=2)
        store.pin_messages("t", ["m-1", "m-2", "m-3"])
        store.request_compaction("t", instruction="保留航班号")
        store.pin_messages("pins-only", ["m-9"])

    assert cli(["inspect", "--url", store_url]) == 0
    overview = capsys.readouterr().out
    assert "v3 revoked" in overview
    assert "t [default]: 3 pinned message(s); compaction requested at " in overview
    assert "UTC (保留航班号)" in overview
    assert "pins-only [default]: 1 pinned message(s)" in overview

    assert cli(["inspect", "--url", store_url, "--thread", "t"]) == 0
    versions = capsys.readouterr().out
    assert all(len(line) <= WIDTH for line in versions.splitlines())
    blocks = versions.split("\nv")[1:]
    assert blocks[0].startswith("1  ") and "REVOKED" not in blocks[0]
    assert " update of v1 " in blocks[1] and "REVOKED 20" in blocks[1]
    assert " edited of v2 " in blocks[2] and "REVOKED 20" in blocks[2]
    assert "Отредактированное резюме." in blocks[2]

    assert cli(["inspect", "--url", store_url, "--thread", "t", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [v["kind"] for v in data["versions"]] == ["initial", "update", "edited"]
    assert [v["revoked_at"] is None for v in data["versions"]] == [True, False, False]
    (entry,) = data["threads"]
    assert (entry["pinned"], entry["request_instruction"]) == (3, "保留航班号")
    assert entry["requested_at"] is not None and entry["controls"] == 4
