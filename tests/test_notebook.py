"""The demo notebook runs clean, end to end, and draws its plot.

It runs on whatever summarizer the environment offers (the local model under ``.ci/run``,
else the offline stand-in), in a fresh kernel, with its files in a temporary folder.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "demo.ipynb"


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
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    started = time.perf_counter()
    client.execute()
    print(f"notebook ran in {time.perf_counter() - started:.1f} s")

    outputs = _outputs(notebook)
    errors = [out for out in outputs if out.output_type == "error"]
    assert not errors, errors
    stderr = [out.text for out in outputs if out.get("name") == "stderr"]
    assert not stderr, stderr
    assert any("image/png" in out.get("data", {}) for out in outputs), "no plot was drawn"
    assert (tmp_path / "model_input_tokens.png").stat().st_size > 10_000
    text = "".join(out.get("text", "") for out in outputs)
    assert ">> context_compacting" in text and "compaction_summaries" in text
