"""The documentation site cannot drift from the code.

Every Python snippet of every page under ``docs/`` runs, page by page in order, as a reader would
run them in one session. A snippet that needs something this machine lacks (a key, a network, a
server) is marked in the Markdown with an HTML comment ``<!-- no-run: why -->`` on the line
before its ``python`` fence; a ``py`` fence, which would slip past unseen, is an error. The names
such a snippet defines for the reader (the agent's model, the summarizer, a checkpointer, the
tools) are given stand-ins (fakes of the models, an in-memory checkpointer) so the snippets after
it still run.

The configuration reference is generated from ``CompactionConfig`` by the site's hook
(``docs/_hooks/config_reference.py``): every field of every settings model appears with its
spellings, its default and its docstring.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from config_reference import MARKER, render_reference, settings_models
from fakes import FakeToolCallingModel, RecordingSummarizer
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

import langgraph_compaction
from langgraph_compaction import CompactionConfig
from langgraph_compaction.config.parts import (
    ContextSize,
    HardClearConfig,
    IntegrityConfig,
    KeepSize,
    PruningConfig,
    RecallConfig,
    SoftTrimConfig,
    UserKeepSize,
    spellings,
)

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

_FENCE = re.compile(
    r"^(?P<indent>[ ]*)(?P<fence>`{3,})(?P<lang>[\w+-]*)[^\n]*\n"  # the opening fence
    r"(?P<body>.*?)^(?P=indent)(?P=fence)[ ]*$",  # the code, up to the same fence
    re.MULTILINE | re.DOTALL,
)
_NO_RUN = re.compile(r"^\s*<!--\s*no-run:(?P<why>.*?)-->\s*$")

STAND_INS: dict[str, Callable[[], object]] = {
    "agent_model": FakeToolCallingModel,
    "summarizer": RecordingSummarizer,
    "checkpointer": InMemorySaver,
    "tools": list,
}
"""What a snippet that is not run may define for the ones after it, and the fake that stands in."""


@dataclass(frozen=True)
class Snippet:
    """One Python code block of a page."""

    page: Path
    line: int
    """Line of the page where the code starts (after the opening fence), counted from 1."""
    code: str
    skipped_because: str | None
    """None: it runs; else why it does not (the no-run marker's reason, or the `py` fence)."""

    def compiled(self) -> types.CodeType:
        # Blank lines before the code: a traceback names the page's own line numbers.
        return compile("\n" * (self.line - 1) + self.code, str(self.page), "exec")

    def defined_names(self) -> set[str]:
        names: set[str] = set()
        for node in ast.walk(ast.parse(self.code)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
        return names


def doc_pages() -> list[Path]:
    return sorted(path for path in DOCS.rglob("*.md") if "_hooks" not in path.parts)


def page_snippets(page: Path) -> list[Snippet]:
    """The page's Python blocks, in order; a no-run marker must sit right before a python block."""
    text = page.read_text(encoding="utf-8")
    where = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
    snippets: list[Snippet] = []
    claimed: set[int] = set()  # lines of no-run markers that a python block took
    for match in _FENCE.finditer(text):
        lang = match["lang"]
        start = text.count("\n", 0, match.start()) + 1  # the fence's line
        before = text[: match.start()].rstrip()  # up to the last line that is not blank
        marker = _NO_RUN.match(before.rpartition("\n")[2])
        if lang == "py":
            raise AssertionError(
                f"{where}:{start}: write ```python (with <!-- no-run: why --> before it if it "
                "cannot run in the tests), not ```py"
            )
        if lang != "python":
            continue
        why: str | None = None
        if marker is not None:
            why = marker["why"].strip()
            if not why:
                raise AssertionError(f"{where}:{start}: a no-run marker must say why")
            claimed.add(before.count("\n") + 1)
        code = textwrap.dedent(match["body"])
        snippets.append(Snippet(page=where, line=start + 1, code=code, skipped_because=why))
    for number, line in enumerate(text.splitlines(), start=1):
        if _NO_RUN.match(line) and number not in claimed:
            raise AssertionError(
                f"{where}:{number}: a no-run marker not followed by a python block"
            )
    return snippets


def _pages_with_snippets() -> list[Path]:
    return [page for page in doc_pages() if page_snippets(page)]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # create_react_agent is deprecated
@pytest.mark.parametrize(
    "page", _pages_with_snippets(), ids=lambda page: str(page.relative_to(DOCS))
)
def test_page_snippets_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # files a snippet writes (stores, YAML) land here
    module = types.ModuleType("docs_snippets")  # type hints of snippet classes resolve here
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    ran, skipped = 0, []
    for snippet in page_snippets(page):
        if snippet.skipped_because is not None:
            skipped.append(f"line {snippet.line}: {snippet.skipped_because}")
            for name in sorted(snippet.defined_names() & STAND_INS.keys()):
                namespace[name] = STAND_INS[name]()
            continue
        exec(snippet.compiled(), namespace)
        ran += 1
    with capsys.disabled():
        print(
            f"\n{page.relative_to(ROOT)}: {ran} of {ran + len(skipped)} Python snippets ran", end=""
        )
        for reason in skipped:
            print(f"\n    not run, {reason}", end="")
    if ran == 0:
        pytest.skip(f"no snippet of {page.relative_to(ROOT)} runs: " + "; ".join(skipped))


def test_snippets_are_found_as_written(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Intro.\n\n```python\nx = 1\n```\n\n<!-- no-run: needs an OpenAI key -->\n```python\n"
        "agent_model = connect()\n```\n\n- a list item:\n\n    ```python\n    y = x + 1\n    ```\n"
        "\n```bash\nnot python\n```\n"
    )
    snippets = page_snippets(page)
    assert [(s.line, s.code, s.skipped_because) for s in snippets] == [
        (4, "x = 1\n", None),
        (9, "agent_model = connect()\n", "needs an OpenAI key"),
        (15, "y = x + 1\n", None),
    ]
    assert snippets[1].defined_names() == {"agent_model"}


@pytest.mark.parametrize(
    ("markdown", "error"),
    [
        ("<!-- no-run: -->\n```python\nx = 1\n```\n", "must say why"),
        ("<!-- no-run: key -->\n```bash\nls\n```\n", "not followed by a python block"),
        ("<!-- no-run: key -->\n\nText between.\n\n```python\nx = 1\n```\n", "not followed"),
        ("```py\nx = 1\n```\n", "not ```py"),
    ],
)
def test_a_misplaced_marker_or_a_py_block_is_an_error(
    tmp_path: Path, markdown: str, error: str
) -> None:
    page = tmp_path / "page.md"
    page.write_text(markdown)
    with pytest.raises(AssertionError, match=error):
        page_snippets(page)


def test_a_failing_snippet_names_the_page_and_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n```python\nx = 1\nundefined_name\n```\n")
    (snippet,) = page_snippets(page)
    with pytest.raises(NameError) as caught:
        exec(snippet.compiled(), {})
    frame = caught.traceback[-1]
    assert (Path(str(frame.path)).name, frame.lineno + 1) == ("page.md", 5)


# -- the configuration reference --------------------------------------------------------------


def _rows(reference: str, model: type[BaseModel]) -> dict[str, list[str]]:
    """The table rows of a model's section: field name -> its cells."""
    section = reference.split(f"## {model.__name__} ", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        match = re.match(r"\| `(\w+)` \|(.*)\|$", line)
        if match:
            rows[match[1]] = [cell.strip() for cell in re.split(r"(?<!\\)\|", match[2])]
    return rows


def _defaults(model: type[BaseModel]) -> dict[str, Any]:
    """The model's defaults as JSON values, or {} when it has required fields."""
    if any(field.is_required() for field in model.model_fields.values()):
        return {}
    return model().model_dump(mode="json")


def test_the_page_holds_the_marker_and_the_site_runs_the_hook() -> None:
    assert MARKER in (DOCS / "reference" / "configuration.md").read_text()
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert "docs/_hooks/config_reference.py" in site["hooks"]
    nav = yaml.safe_dump(site["nav"])
    assert "reference/configuration.md" in nav and "reference/api.md" in nav


def test_every_settings_model_has_a_section() -> None:
    models = [model for model, _ in settings_models()]
    expected = [
        CompactionConfig,
        ContextSize,
        IntegrityConfig,
        KeepSize,
        PruningConfig,
        RecallConfig,
        SoftTrimConfig,
        HardClearConfig,
        UserKeepSize,
    ]
    assert sorted(models, key=str) == sorted(expected, key=str)
    reference = render_reference()
    for model in models:
        assert f"## {model.__name__} {{#{model.__name__.lower()}}}" in reference


@pytest.mark.parametrize("model", [model for model, _ in settings_models()], ids=str)
def test_every_field_appears_with_its_spellings_default_and_docstring(
    model: type[BaseModel],
) -> None:
    reference = render_reference()
    rows = _rows(reference, model)
    assert list(rows) == list(model.model_fields)
    defaults = _defaults(model)
    for name, field in model.model_fields.items():
        others, kind, default, meaning = rows[name]
        assert others == ", ".join(f"`{key}`" for key in spellings(model)[name] if key != name)
        assert kind, name
        assert field.description, f"{model.__name__}.{name} has no docstring"
        assert meaning.replace("`", "") == " ".join(field.description.replace("`", "").split())
        if field.is_required():
            assert default == "required"
        elif isinstance(defaults.get(name), str) and "below" in default:
            assert defaults[name].rstrip("\n") in reference  # a long text shown in full
        elif "defaults" in default:
            nested = re.fullmatch(r"\[(\w+)\]\(#(\w+)\) defaults", default)
            assert nested is not None, default
            assert f"## {nested[1]} {{#{nested[2]}}}" in reference
            assert defaults[name] == _defaults(getattr(sys.modules[model.__module__], nested[1]))
        else:
            assert yaml.safe_load(default.strip("`")) == defaults[name], name


def test_aliases_types_and_ranges_are_shown() -> None:
    rows = _rows(render_reference(), CompactionConfig)
    assert rows["model"][0] == "`model_name`"
    assert rows["summary_prompt"][0] == "`summaryPrompt`, `prompt`"
    assert rows["pruning"][0] == "`contextPruning`"
    assert rows["max_summary_tokens"][0] == "`maxSummaryTokens`"
    assert rows["reserve_ratio"][1] == "number, in [0, 1)"
    assert rows["precompact_ratio"][1] == "number, in (0, 1) or null"
    assert rows["summary_check"][1] == "`basic` or `off`"
    assert rows["trigger"][1] == "list of [ContextSize](#contextsize) or null"
    assert rows["keep"][2] == "`{type: messages, value: 20.0}`"


def test_keys_from_the_reference_configurations_and_removed_keys_are_documented() -> None:
    page = (DOCS / "reference" / "configuration.md").read_text() + render_reference()
    for model, _ in settings_models():
        for key in model._extra_keys:  # keys read besides the fields (retainRecent, tools)
            assert f"`{key}" in page, key
    for key in ("summarize", "summaryModel"):
        assert f"| `{key}` |" in render_reference()


@pytest.mark.slow
def test_the_built_site_holds_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = pytest.importorskip("mkdocs.commands.build")
    config_module = pytest.importorskip("mkdocs.config")
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    config = config_module.load_config(str(ROOT / "mkdocs.yml"), site_dir=str(tmp_path))
    build.build(config)
    html = (tmp_path / "reference" / "configuration" / "index.html").read_text()
    assert MARKER not in html
    for model, _ in settings_models():
        for name in model.model_fields:
            assert f"<code>{name}</code>" in html, f"{model.__name__}.{name}"
    api = (tmp_path / "reference" / "api" / "index.html").read_text()
    for name in langgraph_compaction.__all__:
        assert f'id="langgraph_compaction.{name}"' in api, name


def test_the_api_page_documents_every_public_name() -> None:
    page = (DOCS / "reference" / "api.md").read_text()
    documented = re.findall(r"^::: langgraph_compaction\.(\w+)$", page, flags=re.MULTILINE)
    assert sorted(documented) == sorted(langgraph_compaction.__all__)
