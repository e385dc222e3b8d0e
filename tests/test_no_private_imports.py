"""No module of the package imports a private name of LangGraph or LangChain (DESIGN 2).

A name with a leading underscore anywhere in its import path (``langgraph._internal...``,
``langgraph.pregel._loop``, ``from langgraph.constants import _X``) is what a release may move
or remove without notice: every agent using the package would then fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import langgraph_compaction

PACKAGE = Path(langgraph_compaction.__file__).parent
WATCHED = ("langgraph", "langchain", "langchain_core")


def _watched(module: str) -> bool:
    return module.split(".")[0] in WATCHED


def _private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def private_imports(source: str) -> list[str]:
    """The private LangGraph/LangChain imports of one module's source, as written."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if _watched(a.name) and _private(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not _watched(node.module):
                continue
            for alias in node.names:
                if _private(node.module) or _private(alias.name):
                    found.append(f"{node.module}.{alias.name}")
    return found


def test_the_check_sees_each_form_of_private_import() -> None:
    source = (
        "import langgraph._internal._constants\n"
        "from langgraph.pregel._loop import Loop\n"
        "from langchain_core.runnables import _helper\n"
        "try:\n    from langgraph._internal._constants import CONFIG_KEY_RUNTIME\n"
        "except ImportError:\n    pass\n"
        "def f():\n    from langchain._api import x\n"
        "import langgraph.graph\nfrom langchain_core.messages import AIMessage\n"
        "from ._local import y\nfrom pydantic._internal import z\n"
    )
    assert private_imports(source) == [
        "langgraph._internal._constants",
        "langgraph.pregel._loop.Loop",
        "langchain_core.runnables._helper",
        "langgraph._internal._constants.CONFIG_KEY_RUNTIME",
        "langchain._api.x",
    ]


def test_no_module_imports_a_private_langgraph_or_langchain_name() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50  # the whole package, not an empty glob
    offenders = {
        str(path.relative_to(PACKAGE.parent)): found
        for path in modules
        if (found := private_imports(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}
