"""Execute a notebook in a fresh kernel, echoing what its cells print as they print it.

``scripts/demo notebook`` runs it: nbclient alone keeps every output until the run ends, so a
person would watch a silent terminal for minutes. Usage: ``_notebook.py SOURCE TARGET``; the
executed notebook is written to TARGET, also when a cell fails (to show where).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import zmq
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config


class EchoingClient(NotebookClient):
    """A ``NotebookClient`` that also writes each cell's printed text to this process's own."""

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        if msg["msg_type"] == "stream":
            sink = sys.stderr if msg["content"].get("name") == "stderr" else sys.stdout
            sink.write(msg["content"]["text"])
            sink.flush()
        return super().process_message(msg, cell, cell_index)


def run_notebook(source: Path, target: Path, timeout: int = 600) -> bool:
    """Execute ``source`` (in its own folder) into ``target``; True when every cell ran."""
    notebook = nbformat.read(source, as_version=4)
    config = Config()
    if zmq.has("curve"):  # encrypt the kernel's local TCP traffic, as ipykernel asks
        config.KernelManager.transport_encryption = "auto"
    client = EchoingClient(
        notebook,
        timeout=timeout,
        resources={"metadata": {"path": str(source.parent)}},
        config=config,
    )
    started = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as error:
        print(f"A cell of {source} failed:\n{error}", file=sys.stderr)
        return False
    finally:
        nbformat.write(notebook, target)
    print(f"Executed {source} in {time.perf_counter() - started:.0f} s: open {target}")
    return True


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} SOURCE TARGET")
    sys.exit(0 if run_notebook(Path(sys.argv[1]), Path(sys.argv[2])) else 1)
