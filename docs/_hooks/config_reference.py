"""MkDocs hook: fill the configuration reference from ``CompactionConfig`` itself.

The page in git holds only :data:`MARKER`; at build time it becomes one table per settings
model (``CompactionConfig`` and every model nested in it), each row read from the field: its
key, the other spellings that set it, its type and range, its default and its docstring. A field
added in code therefore appears in the docs with nothing else to edit.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from pydantic import AfterValidator, BaseModel
from pydantic.fields import FieldInfo

from langgraph_compaction import CompactionConfig
from langgraph_compaction.config.compaction import _REMOVED_KEYS
from langgraph_compaction.config.parts import ConfigModel, spellings

__all__ = ["MARKER", "on_page_markdown", "render_reference", "settings_models"]

MARKER = "<!-- configuration-reference -->"
_LONG_DEFAULT = 60  # characters; a longer default is shown in full below its table


def on_page_markdown(markdown: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Replace the marker, wherever a page holds it, with the generated reference."""
    return markdown.replace(MARKER, render_reference()) if MARKER in markdown else markdown


def settings_models() -> list[tuple[type[ConfigModel], str]]:
    """Every settings model with the dotted key it is set under, CompactionConfig first."""
    found: list[tuple[type[ConfigModel], str]] = [(CompactionConfig, "")]
    for model, path in found:  # grows while it is walked: breadth first
        for name, field in model.model_fields.items():
            for nested in _nested_models(field.annotation):
                if all(nested is not seen for seen, _ in found):
                    found.append((nested, f"{path}.{name}" if path else name))
    return found


def render_reference() -> str:
    """The reference as Markdown: a section per settings model, then the removed keys."""
    sections = [_render_model(model, path) for model, path in settings_models()]
    removed = "\n".join(f"| `{key}` | {instead} |" for key, instead in _REMOVED_KEYS.items())
    sections.append(
        "## Removed keys {#removed-keys}\n\n"
        "These keys fail at load time with this message.\n\n"
        f"| key | what to write instead |\n|---|---|\n{removed}\n"
    )
    return "\n".join(sections)


def _render_model(model: type[ConfigModel], path: str) -> str:
    # The root's own docstring is for Python readers; the page's text introduces it instead.
    intro = _markdown((inspect.getdoc(model) or "").split("\n\n")[0]) if path else ""
    where = f"Set under `{path}`. " if path else ""
    lines = [
        f"## {model.__name__} {{#{_anchor(model)}}}",
        "",
        *([where + intro, ""] if path else []),
        "| key | also accepted | type | default | meaning |",
        "|---|---|---|---|---|",
    ]
    long_defaults: list[tuple[str, str]] = []
    for name, field in model.model_fields.items():
        default = _default(field)
        if field.is_required():
            shown = "required"
        elif isinstance(default, str) and (len(default) > _LONG_DEFAULT or "\n" in default):
            long_defaults.append((name, default))
            shown = f"built in, [below](#{_anchor(model)}-{name})"
        elif isinstance(default, ConfigModel) and _is_own_default(default):
            shown = f"[{type(default).__name__}](#{_anchor(type(default))}) defaults"
        else:
            shown = f"`{_yaml(default)}`"
        others = [key for key in spellings(model)[name] if key != name]
        cells = [
            f"`{name}`",
            ", ".join(f"`{key}`" for key in others),
            _type_text(field.annotation, field.metadata),
            shown,
            _markdown(field.description or ""),
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    if model._extra_keys:
        keys = ", ".join(f"`{key}`" for key in model._extra_keys)
        lines += [
            "",
            f"Also read here, as DeerFlow's `config.yaml` or LibreChat's `librechat.yaml` writes "
            f"it: {keys} (see above).",
        ]
    for name, text in long_defaults:
        fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`+", text))])
        lines += ["", f"### Default `{name}` {{#{_anchor(model)}-{name}}}", "", f"{fence}text"]
        lines += [text.rstrip("\n"), fence]
    return "\n".join(lines) + "\n"


def _is_own_default(value: ConfigModel) -> bool:
    """Whether a nested model's default is that model's own defaults (its table shows them)."""
    try:
        return value == type(value)()
    except ValueError:  # the model has required fields, so the default is its own value
        return False


def _anchor(model: type[BaseModel]) -> str:
    return model.__name__.lower()


def _default(field: FieldInfo) -> Any:
    return field.get_default(call_default_factory=True, validated_data={})


def _yaml(value: Any) -> str:
    """A default as it would be written in the YAML file (flow style, one line)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    elif isinstance(value, tuple):
        value = list(value)
    text: str = yaml.safe_dump(value, default_flow_style=True, width=1000, sort_keys=False)
    return text.removesuffix("\n...\n").strip()


def _nested_models(annotation: Any) -> Iterator[type[ConfigModel]]:
    if isinstance(annotation, type) and issubclass(annotation, ConfigModel):
        yield annotation
    for argument in get_args(annotation):
        yield from _nested_models(argument)


def _type_text(annotation: Any, metadata: list[Any]) -> str:
    """A type as a reader of the YAML file thinks of it, with its range when it has one."""
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *extra = get_args(annotation)
        return _type_text(base, [*metadata, *extra])
    if origin in (Union, types.UnionType):
        text = " or ".join(_type_text(argument, []) for argument in get_args(annotation))
        return re.sub(r"( or null)+$", " or null", text)  # a range may already allow null
    if origin is Literal:
        return " or ".join(f"`{value}`" for value in get_args(annotation))
    if origin in (tuple, list):
        return f"list of {_type_text(get_args(annotation)[0], [])}"
    if origin is dict or annotation is dict:
        return "mapping"
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and issubclass(annotation, ConfigModel):
        return f"[{annotation.__name__}](#{_anchor(annotation)})"
    text = {bool: "bool", int: "integer", float: "number", str: "string"}.get(annotation, "any")
    ranges = [_range_text(item) for item in metadata if isinstance(item, AfterValidator)]
    return "".join([text, *ranges])


def _range_text(validator: AfterValidator) -> str:
    """The range a config validator states in its error message (``must be <text>``)."""
    if validator.func.__name__ == "_not_blank":
        return ", not blank"
    text = inspect.getclosurevars(validator.func).nonlocals.get("text")
    return f", {text}" if isinstance(text, str) else ""


def _markdown(docstring: str) -> str:
    """A docstring's reST literals as Markdown code, on one line."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", docstring)
    text = re.sub(r"``(.+?)``", r"`\1`", text)
    return " ".join(text.split())
