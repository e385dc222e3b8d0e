"""The demo notebook runs clean, end to end, and draws its plot.

It runs on whatever summarizer the environment offers (the local model under ``.ci/run``,
else the offline stand-in), in a fresh kernel, with its files in a temporary folder.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

pytestmark = pytest.mark.slow  # a kernel and the whole demo: about a minute
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "demo.ipynb"


@contextmanager
def capture_fd(fd: int) -> Iterator[list[str]]:
    """What is written to file descriptor ``fd`` (child processes included) while inside.

    The yielded list holds the text once the block has left.
    """
    saved = os.dup(fd)
    captured: list[str] = []
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), fd)
        try:
            yield captured
        finally:
            os.dup2(saved, fd)
            os.close(saved)
            sink.seek(0)
            captured.append(sink.read().decode(errors="replace"))


def _outputs(notebook: Any) -> list[Any]:
    return [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]


def test_demo_notebook_runs_clean_and_draws_its_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbformat = pytest.importorskip("nbformat", reason="install the `notebook` extra")
    nbclient = pytest.importorskip("nbclient", reason="install the `notebook` extra")
    pytest.importorskip("matplotlib", reason="install the `notebook` extra")
    pytest.importorskip("ipykernel", reason="install the `notebook` extra")

    monkeypatch.setenv("COMPACTION_DEMO_DIR", str(tmp_path))  # the kernel inherits it
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    zmq = pytest.importorskip("zmq", reason="install the `notebook` extra")
    config = Config()
    if zmq.has("curve"):  # else ipykernel warns that its TCP traffic is not encrypted
        config.KernelManager.transport_encryption = "auto"
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
        config=config,
    )
    started = time.perf_counter()
    with capture_fd(2) as kernel_stderr:  # the kernel process writes to the inherited stderr
        client.execute()
    print(f"notebook ran in {time.perf_counter() - started:.1f} s")
    assert "without encryption" not in "".join(kernel_stderr), kernel_stderr

    outputs = _outputs(notebook)
    errors = [out for out in outputs if out.output_type == "error"]
    assert not errors, errors
    stderr = [out.text for out in outputs if out.get("name") == "stderr"]
    assert not stderr, stderr
    assert any("image/png" in out.get("data", {}) for out in outputs), "no plot was drawn"
    assert (tmp_path / "model_input_tokens.png").stat().st_size > 10_000
    text = "".join(out.get("text", "") for out in outputs)
    assert ">> context_compacting" in text and "compaction_summaries" in text
    assert (tmp_path / "compaction.db").stat().st_size > 0  # the store stays for a browser
    assert_plot_title_counts_model_calls(notebook)
    assert_table_columns_line_up(text)
    assert_legend_marks_failed_compactions_apart(text)
    # The steering section: the pinned requirement kept, the edited summary used by a new process.
    assert "action: reused, summary v3, pinned: 1" in text


def assert_plot_title_counts_model_calls(notebook: Any) -> None:
    """The plot's x axis counts model calls, so its title counts them too, not turns."""
    source = "".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert 'ax.set_xlabel("model call")' in source
    titles = re.findall(r"ax\.set_title\((.*?)\)\n", source, flags=re.DOTALL)
    assert titles and "len(rows)} model calls" in titles[0], titles


def assert_table_columns_line_up(text: str) -> None:
    """Every row of the per-turn table, those with two actions too, keeps the header's columns."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("turn  calls  actions"))
    header, rows = lines[start], lines[start + 1 : start + 37]
    assert any(", " in row for row in rows), "no turn with two model calls in the table"
    without_end = header.index("without") + len("without")  # right-aligned numbers end here
    summary_start = header.index("summary")  # left-aligned versions start here
    for row in rows:
        assert row[without_end - 1].isdigit() and row[without_end] == " ", (header, row)
        assert row[summary_start - 1] == " " and row[summary_start] in "v-", (header, row)


def assert_legend_marks_failed_compactions_apart(text: str) -> None:
    """Summary calls that worked and failed compactions are two legend entries, both counted,
    so a failure never passes for a summary (zero failures is said too)."""
    legend = next(line for line in text.splitlines() if line.startswith("legend: "))
    entries = legend.removeprefix("legend: ").split("; ")
    worked = [e for e in entries if e.startswith("summary call (")]
    failed = [e for e in entries if e.startswith("failed compaction")]
    assert len(worked) == len(failed) == 1, entries
    replay = text[: text.index("legend: ")]  # the calls plotted, not the later process's
    calls = re.findall(r"^turn +\d+\.\d +(\w+) ", replay, flags=re.MULTILINE)
    assert failed[0].endswith(f"({calls.count('failed')})"), (failed, calls)
