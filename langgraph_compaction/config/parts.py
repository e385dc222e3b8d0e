"""The configuration's building blocks: the shared model base, sizes, pruning, recall and
integrity.

Every model is frozen, forbids unknown keys, and accepts snake_case or camelCase spellings;
``config.compaction`` assembles them into ``CompactionConfig`` and explains validation errors.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

__all__ = [
    "ConfigModel",
    "ContextSize",
    "HardClearConfig",
    "IntegrityConfig",
    "KeepSize",
    "PruningConfig",
    "RecallConfig",
    "SoftTrimConfig",
    "at_least_one",
    "count",
    "is_pair",
    "names",
    "positive",
    "spellings",
    "text_value",
    "value_range",
]


def value_range(text: str, ok: Callable[[float], bool]) -> AfterValidator:
    """A range check whose message states the valid range."""

    def check(value: float) -> float:
        if not ok(value):
            raise ValueError(f"must be {text}")
        return value

    return AfterValidator(check)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


ratio = Annotated[StrictFloat, value_range("in [0, 1]", lambda v: 0 <= v <= 1)]
count = Annotated[StrictInt, value_range(">= 0", lambda v: v >= 0)]
at_least_one = Annotated[StrictInt, value_range(">= 1", lambda v: v >= 1)]
positive = Annotated[StrictInt, value_range("> 0", lambda v: v > 0)]
text_value = Annotated[str, AfterValidator(_not_blank)]


def names(name: str, *extra: str) -> AliasChoices:
    """Accept the canonical name, its camelCase spelling and the names DeerFlow's
    ``config.yaml`` and LibreChat's ``librechat.yaml`` use for it."""
    return AliasChoices(*dict.fromkeys((name, to_camel(name), *extra)))


@functools.cache
def spellings(model: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    """Field name -> every key that sets it."""
    spellings: dict[str, tuple[str, ...]] = {}
    for name, field in model.model_fields.items():
        alias = field.validation_alias
        keys = alias.choices if isinstance(alias, AliasChoices) else [name]
        spellings[name] = tuple(key for key in keys if isinstance(key, str))
    return spellings


class ConfigModel(BaseModel):
    """Shared settings: frozen, unknown keys forbidden, snake_case or camelCase keys."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        alias_generator=AliasGenerator(validation_alias=names),
        loc_by_alias=False,
        allow_inf_nan=False,
        use_attribute_docstrings=True,
    )
    _extra_keys: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _reject_duplicate_keys(cls, data: Any) -> Any:
        # Without this, pydantic keeps one spelling and calls the other an unknown key.
        if isinstance(data, Mapping):
            for name, keys in spellings(cls).items():
                given = [key for key in keys if key in data]
                if len(given) > 1:
                    raise ValueError(f"{' and '.join(given)} both set {name}; give it once")
        return data


def is_pair(data: Any) -> bool:
    return isinstance(data, list | tuple) and len(data) == 2 and isinstance(data[0], str)


class _Size(ConfigModel):
    """``{type, value}``, also written as a ``(type, value)`` pair, checked against its type."""

    @model_validator(mode="before")
    @classmethod
    def _split_pair(cls, data: Any) -> Any:
        return {"type": data[0], "value": data[1]} if is_pair(data) else data

    @field_validator("value", check_fields=False)
    @classmethod
    def _value_fits_type(cls, value: float, info: ValidationInfo) -> float:
        kind = info.data.get("type")  # absent when the type itself was invalid
        if kind in ("fraction", "token_ratio"):
            if not 0 < value <= 1:
                raise ValueError(f"a {kind} must be in (0, 1]")
        elif kind is not None:
            if value <= 0:
                raise ValueError(f"{kind} must be > 0")
            if kind in ("messages", "messages_to_refine") and not float(value).is_integer():
                raise ValueError(f"{kind} counts whole messages: give a positive integer")
        return value


class ContextSize(_Size):
    """A trigger threshold: ``{type, value}`` or a ``(type, value)`` pair."""

    type: Literal[
        "tokens", "messages", "fraction", "token_ratio", "remaining_tokens", "messages_to_refine"
    ]
    """What is measured. ``token_ratio`` (LibreChat) is kept as written and means ``fraction``."""
    value: StrictFloat
    """The threshold: a share of the window in (0, 1] for fraction/token_ratio, else > 0."""


class KeepSize(_Size):
    """How much recent conversation stays verbatim: ``{type, value}`` or a pair."""

    type: Literal["messages", "tokens", "fraction"]
    """What is counted: messages, tokens, or a share of the context window."""
    value: StrictFloat
    """How many messages or tokens (> 0), or the share of the window in (0, 1]."""


class UserKeepSize(_Size):
    """How many tokens of evicted user messages stay verbatim: ``{type: tokens, value}``."""

    type: Literal["tokens"]
    """Only tokens: the newest evicted user messages are kept while they fit."""
    value: StrictFloat
    """The token budget (> 0)."""


class SoftTrimConfig(ConfigModel):
    """Soft trim keeps the head and tail of an old tool result, with a marker between."""

    max_chars: positive = 4000
    """Longest a trimmed result may be (characters)."""
    head_chars: count = 1500
    """Characters kept from the start."""
    tail_chars: count = 1500
    """Characters kept from the end."""

    @model_validator(mode="after")
    def _head_and_tail_fit(self) -> Self:
        if self.head_chars + self.tail_chars > self.max_chars:
            raise ValueError(
                f"head_chars + tail_chars ({self.head_chars + self.tail_chars}) must be "
                f"<= max_chars ({self.max_chars})"
            )
        return self


class HardClearConfig(ConfigModel):
    """Hard clear replaces an old tool result with a placeholder."""

    enabled: bool = True
    """False: only soft trim is applied."""
    placeholder: str = "[Old tool result content cleared]"
    """The text that replaces a cleared result."""


class PruningConfig(ConfigModel):
    """Position-based pruning of old, large tool results in the model input (never the history).

    Accepts LibreChat's ``contextPruning`` keys in camelCase or snake_case; tool filters may be
    written ``tools: {allow: [...], deny: [...]}`` as in the LibreChat/OpenClaw lineage.
    """

    _extra_keys = ("tools",)

    enabled: bool = False
    """Pruning is opt-in."""
    keep_last_assistants: count = 3
    """The last N assistant turns, and everything after them, are never pruned."""
    soft_trim_ratio: ratio = 0.3
    """Soft trim results whose age ``(N - i) / N`` is at least this, in [0, 1]."""
    hard_clear_ratio: ratio = 0.5
    """Hard clear results whose age is at least this, in [0, 1]; >= ``soft_trim_ratio``."""
    min_prunable_tool_chars: count = 50000
    """A tool result is eligible only when it alone has at least this many characters."""
    soft_trim: SoftTrimConfig = Field(default_factory=SoftTrimConfig)
    """Soft trim sizes."""
    hard_clear: HardClearConfig = Field(default_factory=HardClearConfig)
    """Hard clear settings."""
    tools_allow: list[str] = Field(default_factory=list)
    """Glob patterns of tool names that may be pruned; empty: every tool."""
    tools_deny: list[str] = Field(default_factory=list)
    """Glob patterns of tool names never pruned; deny wins over allow."""
    media_keep_last: count | None = None
    """Media blocks (images, files, audio, video) older than this many user turns are replaced
    in the model input by a text reference (kind, mime type, name or URL, size); null: off."""

    @model_validator(mode="before")
    @classmethod
    def _split_tools(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or "tools" not in data:
            return data
        data = dict(data)
        tools = data.pop("tools")
        if tools is None:
            return data
        if not isinstance(tools, Mapping) or not set(tools) <= {"allow", "deny"}:
            raise ValueError("tools: expected a mapping with `allow` and/or `deny` lists")
        for key in ("allow", "deny"):
            if key in tools:
                if any(spelling in data for spelling in spellings(cls)[f"tools_{key}"]):
                    raise ValueError(f"tools.{key} and tools_{key} are the same; give it once")
                data[f"tools_{key}"] = tools[key]
        return data

    @model_validator(mode="after")
    def _soft_before_hard(self) -> Self:
        if self.soft_trim_ratio > self.hard_clear_ratio:
            raise ValueError(
                f"soft_trim_ratio ({self.soft_trim_ratio}) must be <= hard_clear_ratio "
                f"({self.hard_clear_ratio})"
            )
        return self


_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class RecallConfig(ConfigModel):
    """Total recall: index what a summary evicts and give the agent a tool to search it."""

    enabled: bool = False
    """Index evicted messages when a summary is stored, and name the tool in the summary."""
    limit: at_least_one = 5
    """Most matches the tool returns."""
    tool_name: str = "recall"
    """The tool's name, as the model calls it."""

    @field_validator("tool_name")
    @classmethod
    def _valid_tool_name(cls, value: str) -> str:
        if not _TOOL_NAME.match(value):
            raise ValueError(
                "must be 1-64 letters, digits, '_' or '-' (a tool name providers accept)"
            )
        return value


class IntegrityConfig(ConfigModel):
    """What survives a compaction (DESIGN 6.13): every new summary is checked for the
    identifiers and tool artifacts of the messages it covers, and what the model dropped is
    appended to it as a ledger."""

    enabled: bool = True
    """False: the summary is stored as the summarizer wrote it, and no figures are kept."""
    ledger_tokens: count = 400
    """Tokens the ledger may take after the summary's prose (``max_summary_tokens`` caps the
    prose alone), and never more than a tenth of the budget or of the smallest tokens trigger.
    0 keeps the check and its figures, and appends nothing."""
    repair: bool = False
    """True: when the summary keeps less than ``min_kept`` of the user's identifiers, ask the
    summarizer once more, naming the missing ones (one more call, counted in the report)."""
    min_kept: ratio = 0.5
    """Share of the user's identifiers a summary must keep before ``repair`` asks again."""
