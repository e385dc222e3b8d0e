"""The blockbuster guard of the async tests is the dev server's, and only async tests get it.

``conftest.py`` runs every coroutine test under ``_blocking.blocking_guard()``. These tests
check that this guard checks exactly what ``langgraph dev`` checks (compared with the
server's own ``_enable_blockbuster``, in a separate interpreter so the server's imports do
not touch this session), that it is on in an async test and off in a sync one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _blocking import BlockingError

TESTS = Path(__file__).resolve().parent
UNGUARDED_SLEEP = time.sleep
"""``time.sleep`` as imported, before any guard wrapped it."""

_COMPARE = """
import json
from langgraph_runtime_inmem import queue
from _blocking import dev_server_blockbuster

def rules(bb):
    return {
        name: sorted([module, sorted(funcs)] for module, funcs in fn.can_block_functions)
        for name, fn in bb.functions.items()
    }

server = queue._enable_blockbuster()
server.deactivate()
print(json.dumps({"server": rules(server), "ours": rules(dev_server_blockbuster())}))
"""


@pytest.mark.slow
def test_guard_checks_what_the_dev_server_checks() -> None:
    pytest.importorskip("langgraph_runtime_inmem", reason="langgraph-cli[inmem] not installed")
    done = subprocess.run(
        [sys.executable, "-c", _COMPARE],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rules = json.loads(done.stdout.strip().splitlines()[-1])
    assert rules["ours"] == rules["server"]
    assert "os.access" in rules["ours"]  # the call that broke the fresh store under the server
    assert "time.sleep" in rules["ours"]
    assert "os.stat" not in rules["ours"]  # the server lets these through, so do we


async def test_async_tests_run_under_the_guard(blocking_calls: list[str]) -> None:
    assert time.sleep is not UNGUARDED_SLEEP
    with pytest.raises(BlockingError, match=r"time\.sleep"):
        time.sleep(0)  # on the running loop: what a blocking node would do under the server
    # Even a blocking call that was caught is recorded, with where it was made.
    assert len(blocking_calls) == 1
    assert blocking_calls[0].startswith("time.sleep at tests/test_blocking_guard.py:")
    blocking_calls.clear()  # expected here; any other would fail the test at teardown


def test_sync_tests_run_without_it() -> None:
    assert time.sleep is UNGUARDED_SLEEP
