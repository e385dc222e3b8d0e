"""``langgraph dev`` serving ``examples/server``, started and stopped by the end-to-end tests.

The server is a real ``langgraph dev --no-browser --no-reload`` process (the in-memory
runtime, blockbuster on: never ``--allow-blocking``) on a free 127.0.0.1 port. It runs in
a folder of the test's own, where it keeps its ``.langgraph_api`` files, and finds the app
through ``PYTHONPATH``; everything that would reach the network is switched off (the CLI's
analytics, the version check, LangSmith tracing; no browser). It is stopped by its process
group id, always: SIGTERM, then SIGKILL if it has not ended within a few seconds.

```python
server = DevServer(cli, workdir, store_url="sqlite:////tmp/x/summaries.db")
server.start()
try:
    ...  # langgraph_sdk.get_client(url=server.url)
finally:
    server.stop()
```
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

__all__ = ["APP_DIR", "CONFIG", "JOBS", "DevServer", "find_cli", "free_port"]

APP_DIR = Path(__file__).resolve().parents[1] / "examples" / "server"
CONFIG = APP_DIR / "langgraph.json"
STORE_URL_ENV = "COMPACTION_STORE_URL"
"""Read by ``examples/server/compaction_app/settings.py``."""

_QUIET = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",  # langgraph_cli/analytics.py posts each command
    "LANGGRAPH_NO_VERSION_CHECK": "true",  # langgraph_api/cli.py asks PyPI for a newer release
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
}
JOBS = 2
"""Runs the server executes at once: the tests drive both graphs side by side."""
_MOVED = re.compile(r"Port \d+ is already in use, using port (\d+) instead")
"""What ``langgraph dev`` logs when it picks another port than the one asked for."""
_UNSET = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGGRAPH_ALLOW_BLOCKING")


def find_cli() -> str | None:
    """The ``langgraph`` command of this interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).with_name("langgraph")
    return str(beside) if beside.is_file() else shutil.which("langgraph")


def free_port() -> int:
    """A 127.0.0.1 port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class DevServer:
    """One ``langgraph dev`` process at a time; ``start`` again after ``stop`` to restart."""

    def __init__(self, cli: str, workdir: Path, *, store_url: str) -> None:
        self.cli = cli
        self.workdir = workdir
        self.store_url = store_url
        self.log_path = workdir / "server.log"
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def environment(self) -> dict[str, str]:
        """This process's environment, with the app importable and the network calls off."""
        env = {k: v for k, v in os.environ.items() if k not in _UNSET}
        env.update(_QUIET)
        env[STORE_URL_ENV] = self.store_url
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(APP_DIR), os.environ.get("PYTHONPATH", "")) if p
        )
        return env

    def start(self, timeout: float = 90.0) -> None:
        """Start the server and wait until ``/ok`` answers; raise with its log if it does not."""
        assert self._process is None, "the server is already running"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        command = [
            self.cli,
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--config",
            str(CONFIG),
            "--n-jobs-per-worker",
            str(JOBS),
        ]
        self._log = self.log_path.open("ab")
        self._log.write(f"\n==> {' '.join(command)}\n".encode())
        self._log.flush()
        self._process = subprocess.Popen(
            command,
            cwd=self.workdir,
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stop() reaches its children
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self.stop()
                raise RuntimeError(f"langgraph dev exited at start:\n{self.log_tail()}")
            if moved := _MOVED.search(self.log_text()):  # the port was taken meanwhile
                self.port = int(moved[1])
            if self._answers():
                assert "allow-blocking" not in self.log_text(), "blockbuster must stay on"
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(
            f"langgraph dev did not answer within {timeout:.0f} s:\n{self.log_tail()}"
        )

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/ok", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def stop(self, grace: float = 10.0) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after ``grace`` seconds."""
        process, self._process = self._process, None
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=grace)
            except ProcessLookupError:
                process.wait(timeout=grace)
            with contextlib.suppress(ProcessLookupError):  # children it left behind, if any
                os.killpg(process.pid, signal.SIGKILL)
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])
