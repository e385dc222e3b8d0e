"""blockbuster, configured exactly as ``langgraph dev`` configures it, as a context manager.

LangGraph's in-memory runtime (``langgraph_runtime_inmem/queue.py``, ``_enable_blockbuster``)
activates blockbuster for the server's whole life unless ``--allow-blocking`` is given: every
function blockbuster knows is checked, with no module excluded, except ``os.stat``,
``os.listdir``, ``os.remove``, buffered and text file reads and writes, ``threading.Lock.acquire``
and every ``os.path.*`` function, plus a few exemptions for the server's own modules. A call
of a checked function from a coroutine on a running loop raises ``BlockingError``.

```python
async def test_x() -> None:
    with blocking_guard():
        await store.alist_summaries("t")
```
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from blockbuster import BlockBuster, BlockingError
from langsmith import env as ls_env

__all__ = ["BlockingError", "blocking_guard", "dev_server_blockbuster"]

_DISABLED = (
    "os.stat",
    "os.listdir",
    "os.remove",
    "io.BufferedReader.read",
    "io.BufferedWriter.write",
    "io.TextIOWrapper.read",
    "io.TextIOWrapper.write",
    "threading.Lock.acquire",
)
"""What the server turns off ("people use them so often"), besides every ``os.path.*``."""


def dev_server_blockbuster() -> BlockBuster:
    """A BlockBuster set up like ``langgraph_runtime_inmem.queue._enable_blockbuster``, inactive."""
    ls_env.get_runtime_environment()  # the server warms this cache before activating
    bb = BlockBuster(excluded_modules=[])
    bb.functions["os.path.abspath"].can_block_in("inspect.py", "getmodule")
    for fn in ("os.access", "os.getcwd", "os.unlink", "os.write"):
        bb.functions[fn].can_block_in("langgraph_api/api/profile.py", "_profile_with_pyspy")
    for module, func in (
        ("memory/__init__.py", "sync"),
        ("memory/__init__.py", "load"),
        ("memory/__init__.py", "dump"),
        ("pydantic/main.py", "__init__"),
    ):
        bb.functions["os.remove"].can_block_in(module, func)
        bb.functions["os.rename"].can_block_in(module, func)
    for module, func in (
        ("uvicorn/lifespan/on.py", "startup"),
        ("uvicorn/lifespan/on.py", "shutdown"),
        ("ansitowin32.py", "write_plain_text"),
        ("logging/__init__.py", "flush"),
        ("logging/__init__.py", "emit"),
    ):
        bb.functions["io.TextIOWrapper.write"].can_block_in(module, func)
        bb.functions["io.BufferedWriter.write"].can_block_in(module, func)
    bb.functions["builtins.input"].can_block_in("bdb.py", "trace_dispatch")
    bb.functions["builtins.input"].can_block_in("pdb.py", "user_line")
    to_disable = [*_DISABLED, *(name for name in bb.functions if name.startswith("os.path."))]
    for name in to_disable:
        function = bb.functions.pop(name, None)
        if function is not None:
            function.deactivate()
    return bb


@contextmanager
def blocking_guard() -> Iterator[BlockBuster]:
    """Blocking calls on a running event loop raise ``BlockingError`` inside the block."""
    bb = dev_server_blockbuster()
    bb.activate()
    try:
        yield bb
    finally:
        bb.deactivate()
