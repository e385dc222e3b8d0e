"""The scripts a person runs first: they check their arguments before anything starts, say
what they are doing while it takes long, and `scripts/test --quick` leaves the slow tests out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest
from fakes import RecordingSummarizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from _demo_cli import MODES
from _events import SummaryTicker, tick_line
from agent_loop import ReplayAgent, Summarizer, open_demo, run_turn
from demo_data import DEMO_TURNS

ROOT = Path(__file__).resolve().parents[1]


# -- scripts/demo: the mode and options are checked before anything starts ---------------------


def _checkout_without_venv(tmp_path: Path) -> Path:
    """A copy of the scripts in a folder with no .venv: a run that got past its checks would
    create one there (or start a model server from there)."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "scripts", checkout / "scripts")
    (checkout / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "_demo_cli.py", checkout / "examples")
    return checkout


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline and proc.name.isdigit() and int(proc.name) != os.getpid():
            found.append(cmdline)
    return found


def _run_demo(checkout: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHON", "OPENAI_API_KEY", "OPENAI_BASE_URL", "COMPACTION_LOCAL_MODEL_URL"}
    }
    env["TMPDIR"] = str(checkout)  # where a started model server would write its log
    started = time.perf_counter()
    result = subprocess.run(
        [str(checkout / "scripts" / "demo"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    return result, time.perf_counter() - started


def test_demo_help_lists_every_mode_and_names_the_script(tmp_path: Path) -> None:
    result, _ = _run_demo(_checkout_without_venv(tmp_path), "--help")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("usage: scripts/demo "), lines[0]
    for mode in MODES:
        assert any(line.startswith(f"  {mode} ") for line in lines), (mode, result.stdout)
    assert "--turns N" in result.stdout and "agent_loop.py" in result.stdout  # what agent runs


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("notebok",), "unknown mode 'notebok'; did you mean 'notebook'?"),
        (("--bogus",), "unrecognized arguments: --bogus"),
        (("--trns", "3"), "unrecognized arguments: --trns 3; did you mean --turns?"),
        (("--turns", "0"), "argument --turns: 0 is not a positive number of turns"),
        (("notebook", "--turns", "3"), "the notebook mode takes no arguments"),
    ],
)
def test_a_usage_error_exits_2_before_anything_starts(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    checkout = _checkout_without_venv(tmp_path)
    result, seconds = _run_demo(checkout, *args)

    assert result.returncode == 2, (result.stdout, result.stderr)
    assert f"scripts/demo: error: {expected}" in result.stderr, result.stderr
    assert "usage: scripts/demo " in result.stderr and "agent_loop.py" not in result.stderr
    assert result.stdout == ""
    assert seconds < 5, seconds
    assert not (checkout / ".venv").exists()  # no interpreter was installed
    assert not (checkout / "compaction-local-model.log").exists()  # no server was started
    assert not _processes_mentioning(str(checkout))


# -- the ticker: a line every interval while a summary call runs -------------------------------


def _wait_for(lines: list[str], count: int, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while len(lines) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def test_tick_lines_count_the_seconds_of_the_summary_call() -> None:
    assert tick_line(10.0) == "          .. summarizing, 10 s"
    assert tick_line(30.0).endswith(", 30 s")


def test_the_ticker_ticks_from_compacting_until_compacted_and_then_never_again() -> None:
    lines: list[str] = []
    with SummaryTicker(lines.append, interval=0.05) as ticker:
        ticker.observe({"type": "context_compacting", "messages": 9})
        _wait_for(lines, 3)
        ticker.observe({"type": "context_compacted", "version": 1})
        stopped_at = len(lines)
        time.sleep(0.2)

    assert stopped_at >= 3 and len(lines) == stopped_at, lines
    assert lines[:3] == [tick_line(0.05), tick_line(0.1), tick_line(0.15)]
    assert not any(t.name == "summary-ticker" for t in threading.enumerate())


def test_a_failed_call_or_leaving_the_block_stops_it_and_a_background_one_never_starts() -> None:
    lines: list[str] = []
    with SummaryTicker(lines.append, interval=0.05) as ticker:
        ticker.observe({"type": "context_compacting", "background": True})
        time.sleep(0.2)
        assert lines == []  # the stream is not waiting for a background summary
        ticker.observe({"type": "context_compacting"})
        _wait_for(lines, 1)
        ticker.observe({"type": "context_compaction_failed", "error": "boom"})
        after_failure = len(lines)
        ticker.observe({"type": "context_compacting"})
        _wait_for(lines, after_failure + 1)
    left_at = len(lines)  # the block ends with a call still running (the stream raised)
    time.sleep(0.2)

    assert after_failure >= 1 and len(lines) == left_at > after_failure, lines
    assert lines[after_failure] == tick_line(0.05)  # a new call counts from zero


def test_the_demo_prints_ticks_between_compacting_and_compacted(tmp_path: Path) -> None:
    slow = RecordingSummarizer(delay=0.35)
    summarizer = Summarizer(slow, "slow fake", {}, 400)
    graph, _store, close = open_demo(tmp_path, summarizer, ReplayAgent(DEMO_TURNS))
    lines: list[str] = []
    try:
        for number, turn in enumerate(DEMO_TURNS, start=1):
            run_turn(graph, number, turn.user, show=lines.append, tick_seconds=0.1)
            if slow.call_count:
                break
    finally:
        close()

    kinds = [line.split()[1].rstrip(":,") for line in lines if line.lstrip()[:2] in {">>", ".."}]
    first = kinds.index("context_compacting")
    assert kinds[first + 1 : first + 3] == ["summarizing", "summarizing"], lines
    assert kinds[first + 1 :].count("context_compacted") == 1, lines
    assert kinds[-1] == "context_compacted", lines  # no tick after the call is done


# -- scripts/test --quick -----------------------------------------------------------------------


def test_the_slow_marker_is_registered() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    markers = config["ini_options"]["markers"]
    assert any(marker.startswith("slow:") for marker in markers), markers


def _run_test_script(*args: str, addopts: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable, "PYTEST_ADDOPTS": addopts}
    return subprocess.run(
        [str(ROOT / "scripts" / "test"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


@pytest.mark.slow
def test_quick_runs_pytest_without_the_slow_tests() -> None:
    result = _run_test_script(
        "--quick",
        "--noconftest",  # collecting needs no fixtures: a second less
        "--collect-only",
        "tests/test_notebook.py",
        "tests/test_scripts_cli.py",
    )

    assert result.returncode == 0, result.stderr
    assert "-m 'not slow'" in result.stderr  # the command, as the script echoes it
    collected = result.stdout.splitlines()
    assert not any("test_notebook.py::" in line for line in collected), collected
    assert any("test_scripts_cli.py::" in line for line in collected), collected
    assert "--quick" not in result.stderr.split("pytest", 1)[1]  # pytest never sees it


@pytest.mark.slow
def test_the_full_run_says_how_long_it_takes_before_it_starts() -> None:
    # A bare scripts/test is the full run; PYTEST_ADDOPTS narrows what it collects here.
    result = _run_test_script(addopts="--noconftest --collect-only tests/test_notebook.py")

    assert result.returncode == 0, result.stderr
    first = (result.stdout + result.stderr).splitlines()[0]
    assert "about 15 minutes" in first and "scripts/test --quick" in first, first
    assert "test_notebook.py::" in result.stdout  # the full run keeps the slow tests


# -- scripts/demo notebook: the notebook's lines appear as its cells print them -----------------


@pytest.mark.slow
def test_the_notebook_runner_echoes_each_line_when_the_cell_prints_it(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat", reason="install the `notebook` extra")
    pytest.importorskip("nbclient", reason="install the `notebook` extra")
    source, target = tmp_path / "turns.ipynb", tmp_path / "turns.out.ipynb"
    cell = "import time\nfor n in (1, 2, 3):\n    print(f'turn {n}', flush=True)\n    time.sleep(1)"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(notebook, source)

    command = [sys.executable, str(ROOT / "scripts" / "_notebook.py"), str(source), str(target)]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as runner:
        assert runner.stdout is not None
        arrivals = {line.strip(): time.monotonic() for line in runner.stdout}
        assert runner.wait(timeout=120) == 0, arrivals

    assert arrivals["turn 3"] - arrivals["turn 1"] > 1.5, arrivals  # not all at the end
    assert any(line.startswith("Executed ") for line in arrivals), arrivals
    outputs = nbformat.read(target, as_version=4).cells[0].outputs
    assert "".join(out.get("text", "") for out in outputs) == "turn 1\nturn 2\nturn 3\n"
