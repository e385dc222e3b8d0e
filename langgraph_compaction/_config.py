"""The configuration model: one validated, frozen object the whole pipeline reads.

Canonical names are snake_case (DeerFlow's); LibreChat's camelCase spellings are accepted too,
so the ``summarization:`` section of either project's YAML loads unchanged. Everything is checked
here, at load time, so that a typo or an out-of-range value fails before the first model call
instead of in the middle of a run. Every failure is a :class:`CompactionConfigError` naming the
field (dotted path) and what a valid value is.

Seed keys that are not spelled like ours:

- DeerFlow: ``model_name`` (-> ``model``); ``summary_prompt: null`` means the built-in prompt.
- LibreChat: ``prompt`` / ``updatePrompt``; ``contextPruning`` (-> ``pruning``);
  ``retainRecent.tokens`` (-> ``keep: {type: tokens}``). ``retainRecent.turns`` is accepted and
  has no effect: ``keep`` decides the verbatim tail, and the latest user turn is always kept whole.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal, Self, get_args

import yaml
from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from langgraph_compaction._exceptions import CompactionConfigError
from langgraph_compaction._prompts import DEFAULT_SUMMARY_PROMPT, DEFAULT_UPDATE_PROMPT

__all__ = [
    "CompactionConfig",
    "ContextSize",
    "HardClearConfig",
    "KeepSize",
    "PruningConfig",
    "SoftTrimConfig",
]

_REMOVED_KEYS = {
    "summarize": "`enabled: true` (or false) in the summarization section",
    "summaryModel": "`model: <name>` (and `provider:`) in the summarization section",
}


def _range(text: str, ok: Callable[[float], bool]) -> AfterValidator:
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


_Ratio = Annotated[StrictFloat, _range("in [0, 1]", lambda v: 0 <= v <= 1)]
_Count = Annotated[StrictInt, _range(">= 0", lambda v: v >= 0)]
_AtLeastOne = Annotated[StrictInt, _range(">= 1", lambda v: v >= 1)]
_Positive = Annotated[StrictInt, _range("> 0", lambda v: v > 0)]
_Text = Annotated[str, AfterValidator(_not_blank)]


def _names(name: str, *extra: str) -> AliasChoices:
    """Accept the canonical name, its camelCase spelling and the seeds' own names."""
    return AliasChoices(*dict.fromkeys((name, to_camel(name), *extra)))


@functools.cache
def _spellings(model: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    """Field name -> every key that sets it."""
    spellings: dict[str, tuple[str, ...]] = {}
    for name, field in model.model_fields.items():
        alias = field.validation_alias
        keys = alias.choices if isinstance(alias, AliasChoices) else [name]
        spellings[name] = tuple(key for key in keys if isinstance(key, str))
    return spellings


class _ConfigModel(BaseModel):
    """Shared settings: frozen, unknown keys forbidden, snake_case or camelCase keys."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        alias_generator=AliasGenerator(validation_alias=_names),
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
            for name, keys in _spellings(cls).items():
                given = [key for key in keys if key in data]
                if len(given) > 1:
                    raise ValueError(f"{' and '.join(given)} both set {name}; give it once")
        return data


def _is_pair(data: Any) -> bool:
    return isinstance(data, list | tuple) and len(data) == 2 and isinstance(data[0], str)


class _Size(_ConfigModel):
    """``{type, value}``, also written as a ``(type, value)`` pair, checked against its type."""

    @model_validator(mode="before")
    @classmethod
    def _split_pair(cls, data: Any) -> Any:
        return {"type": data[0], "value": data[1]} if _is_pair(data) else data

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


class SoftTrimConfig(_ConfigModel):
    """Soft trim keeps the head and tail of an old tool result, with a marker between."""

    max_chars: _Positive = 4000
    """Longest a trimmed result may be (characters)."""
    head_chars: _Count = 1500
    """Characters kept from the start."""
    tail_chars: _Count = 1500
    """Characters kept from the end."""

    @model_validator(mode="after")
    def _head_and_tail_fit(self) -> Self:
        if self.head_chars + self.tail_chars > self.max_chars:
            raise ValueError(
                f"head_chars + tail_chars ({self.head_chars + self.tail_chars}) must be "
                f"<= max_chars ({self.max_chars})"
            )
        return self


class HardClearConfig(_ConfigModel):
    """Hard clear replaces an old tool result with a placeholder."""

    enabled: bool = True
    """False: only soft trim is applied."""
    placeholder: str = "[Old tool result content cleared]"
    """The text that replaces a cleared result."""


class PruningConfig(_ConfigModel):
    """Position-based pruning of old, large tool results in the model input (never the history).

    Accepts LibreChat's ``contextPruning`` keys in camelCase or snake_case; tool filters may be
    written ``tools: {allow: [...], deny: [...]}`` as in the LibreChat/OpenClaw lineage.
    """

    _extra_keys = ("tools",)

    enabled: bool = False
    """Pruning is opt-in."""
    keep_last_assistants: _Count = 3
    """The last N assistant turns, and everything after them, are never pruned."""
    soft_trim_ratio: _Ratio = 0.3
    """Soft trim results whose age ``(N - i) / N`` is at least this, in [0, 1]."""
    hard_clear_ratio: _Ratio = 0.5
    """Hard clear results whose age is at least this, in [0, 1]; >= ``soft_trim_ratio``."""
    min_prunable_tool_chars: _Count = 50000
    """A tool result is eligible only when it alone has at least this many characters."""
    soft_trim: SoftTrimConfig = Field(default_factory=SoftTrimConfig)
    """Soft trim sizes."""
    hard_clear: HardClearConfig = Field(default_factory=HardClearConfig)
    """Hard clear settings."""
    tools_allow: list[str] = Field(default_factory=list)
    """Glob patterns of tool names that may be pruned; empty: every tool."""
    tools_deny: list[str] = Field(default_factory=list)
    """Glob patterns of tool names never pruned; deny wins over allow."""

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
                if any(spelling in data for spelling in _spellings(cls)[f"tools_{key}"]):
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


class CompactionConfig(_ConfigModel):
    """Everything the compaction pipeline can be told; see DESIGN section 4.

    Build it directly, from a mapping with :meth:`coerce`, or from a seed's YAML file with
    :meth:`from_yaml`::

        config = CompactionConfig.from_yaml("config.yaml")  # its `summarization:` section
        config = CompactionConfig(trigger={"type": "tokens", "value": 32000})
    """

    _extra_keys = ("retainRecent",)

    def __init__(self, /, **data: Any) -> None:
        # Direct construction fails like loading does, with a CompactionConfigError. (Only here:
        # an __init__ on the nested models would run inside this one's validation.)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise CompactionConfigError(_explain(exc)) from exc

    enabled: bool = True
    """False: the subgraph passes ``messages`` through untouched."""
    model: str | None = Field(None, validation_alias=_names("model", "model_name"))
    """Summarizer model (DeerFlow: ``model_name``). Null: the factory's model, else the run's."""
    provider: str | None = None
    """Summarizer provider, for ``init_chat_model``."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Extra model parameters for the summary call (temperature, ...)."""
    trigger: tuple[ContextSize, ...] | None = None
    """One ContextSize or a list; any one firing triggers compaction. Null: fire when the
    context no longer fits the budget."""
    keep: KeepSize = Field(default_factory=lambda: KeepSize(type="messages", value=20))
    """How much recent conversation stays verbatim."""
    trim_tokens_to_summarize: _Positive | None = 4000
    """Most conversation tokens sent in one summary call (more is chunked); null: no limit."""
    max_summary_chunks: _AtLeastOne = 8
    """Most summary calls one compaction may make."""
    summary_prompt: _Text = Field(
        DEFAULT_SUMMARY_PROMPT, validation_alias=_names("summary_prompt", "prompt")
    )
    """Template for a thread's first summary; ``{messages}`` marks the transcript."""
    update_prompt: _Text = DEFAULT_UPDATE_PROMPT
    """Template merging the previous ``{summary}`` with newly evicted ``{messages}``."""
    max_summary_tokens: _Positive = 1024
    """Output cap of the summary call."""
    reserve_ratio: Annotated[StrictFloat, _range("in [0, 1)", lambda v: 0 <= v < 1)] = 0.05
    """Headroom: budget = context_window x (1 - reserve_ratio)."""
    context_window: _Positive | None = None
    """The model's max input tokens; null: read from the fallback model's profile."""
    headroom_ratio: Annotated[StrictFloat, _range("in (0, 1]", lambda v: 0 < v <= 1)] = 0.75
    """After a new summary the kept window must sit below this share of every trigger."""
    pruning: PruningConfig = Field(
        default_factory=PruningConfig, validation_alias=_names("pruning", "contextPruning")
    )
    """Pruning of old tool results (LibreChat: ``contextPruning``)."""
    preserve_recent_skill_count: _Count = 5
    """Most skill-file reads rescued from summarization."""
    preserve_recent_skill_tokens: _Count = 25000
    """Total token budget of rescued skill reads."""
    preserve_recent_skill_tokens_per_skill: _Count = 5000
    """A skill read larger than this is summarized, not rescued."""
    skill_file_read_tool_names: tuple[str, ...] = ("read_file", "read", "view", "cat")
    """Tools whose results count as skill reads (when the path is under the skills folder)."""
    skills_container_path: str = "/mnt/skills"
    """Folder holding skills, as the agent's tools see it."""
    max_failures: _AtLeastOne = 3
    """Consecutive summary failures before the circuit breaker opens."""
    failure_cooldown_messages: _Count = 10
    """New messages to wait, once open, before trying again."""
    precompact_ratio: (
        Annotated[StrictFloat, _range("in (0, 1) or null", lambda v: 0 < v < 1)] | None
    ) = None
    """Start the next summary in the background at this share of the trigger; null: off."""
    store_url: _Text = "sqlite:///compaction.db"
    """SQLAlchemy URL of the summary store."""

    @model_validator(mode="before")
    @classmethod
    def _map_seed_keys(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        for key, instead in _REMOVED_KEYS.items():
            if key in data:
                raise ValueError(f"{key} was removed; use {instead} instead")
        # DeerFlow writes `summary_prompt: null` for "the built-in prompt".
        for key in (*_spellings(cls)["summary_prompt"], *_spellings(cls)["update_prompt"]):
            if key in data and data[key] is None:
                del data[key]
        if "retainRecent" in data:
            _map_retain_recent(data, data.pop("retainRecent"))
        return data

    @field_validator("parameters", mode="before")
    @classmethod
    def _null_parameters(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("trigger", mode="before")
    @classmethod
    def _trigger_as_tuple(cls, value: Any) -> Any:
        if isinstance(value, Mapping | ContextSize) or _is_pair(value):
            return (value,)
        if isinstance(value, list | tuple) and not value:
            raise ValueError(
                "an empty list never fires; use null to fire only when the context no longer fits"
            )
        return value

    @classmethod
    def coerce(cls, value: CompactionConfig | Mapping[str, Any] | None) -> CompactionConfig:
        """Accept what ``create_compaction_graph(config=...)`` accepts: a config, a mapping
        (snake_case or camelCase keys) or None for the defaults."""
        if value is None:
            return cls()
        if isinstance(value, CompactionConfig):
            return value
        if isinstance(value, Mapping):
            odd = [key for key in value if not isinstance(key, str)]
            if odd:
                raise CompactionConfigError(f"config keys must be strings, got {odd[0]!r}")
            # Not model_validate: it would wrap the error raised by __init__ in a ValidationError.
            return cls(**value)
        raise CompactionConfigError(
            f"config must be a CompactionConfig, a mapping or None, not {type(value).__name__}"
        )

    @classmethod
    def from_yaml(
        cls, path: str | os.PathLike[str], key: str | None = "summarization"
    ) -> CompactionConfig:
        """Load the ``key`` section of a YAML file (DeerFlow's ``config.yaml`` or LibreChat's
        ``librechat.yaml`` work unchanged). A file whose top level is the config itself loads
        too; ``key=None`` always takes the whole document."""
        try:
            with open(path, encoding="utf-8") as file:
                document = yaml.safe_load(file)
        except FileNotFoundError:
            raise CompactionConfigError(f"config file not found: {os.fspath(path)}") from None
        except (OSError, yaml.YAMLError) as exc:
            raise CompactionConfigError(f"cannot read {os.fspath(path)}: {exc}") from exc
        where, section = os.fspath(path), document
        if key is not None and isinstance(document, Mapping):
            if key in document:
                where, section = f"{where} [{key}]", document[key]
            elif not any(name in [*_accepted_keys(cls), *_REMOVED_KEYS] for name in document):
                raise CompactionConfigError(
                    f"{where} has no `{key}:` section; pass key=None if the file is the config"
                )
        if not isinstance(section, Mapping | None):
            raise CompactionConfigError(f"{where}: expected a mapping of settings")
        try:
            return cls.coerce(section)
        except CompactionConfigError as exc:
            raise CompactionConfigError(f"{where}: {exc}") from exc


def _map_retain_recent(data: dict[str, Any], retain: Any) -> None:
    """LibreChat's ``retainRecent: {turns, tokens}``: ``tokens`` becomes ``keep``."""
    if retain is None:
        return
    if not isinstance(retain, Mapping) or not set(retain) <= {"turns", "tokens"}:
        raise ValueError("retainRecent: expected a mapping with `turns` and/or `tokens`")
    turns = retain.get("turns")
    if turns is not None and (type(turns) is not int or not 0 <= turns <= 20):
        raise ValueError("retainRecent.turns: must be an integer in [0, 20]")
    tokens = retain.get("tokens")
    if tokens is not None:
        if "keep" in data:
            raise ValueError("retainRecent.tokens and keep both set the kept tail; give one")
        data["keep"] = {"type": "tokens", "value": tokens}


def _accepted_keys(model: type[_ConfigModel]) -> list[str]:
    keys = [key for spellings in _spellings(model).values() for key in spellings]
    return [*keys, *model._extra_keys]


def _model_at(model: type[_ConfigModel], loc: tuple[int | str, ...]) -> type[_ConfigModel]:
    """The (nested) model class that an error location points into."""
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is not None:
            model = _nested_model(field.annotation) or model
    return model


def _nested_model(annotation: Any) -> type[_ConfigModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, _ConfigModel):
        return annotation
    return next(filter(None, map(_nested_model, get_args(annotation))), None)


def _dotted(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else part
    return path


def _explain(exc: ValidationError) -> str:
    """For each problem: the dotted path of the field, what is wrong, what was given."""
    lines = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        path = _dotted(loc)
        if error["type"] == "extra_forbidden":
            parent = _model_at(CompactionConfig, loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), _accepted_keys(parent), n=1)
            valid = ", ".join([*parent.model_fields, *parent._extra_keys])
            hint = f"did you mean {close[0]!r}?" if close else f"valid keys: {valid}"
            lines.append(f"{path}: unknown key; {hint}")
            continue
        context = error.get("ctx") or {}
        message = str(context["error"]) if "error" in context else error["msg"]
        given = error.get("input")
        if not isinstance(given, Mapping | BaseModel) and error["type"] != "missing":
            message += f" (got {_short(given)})"
        lines.append(f"{path}: {message}" if path else message)
    return "invalid compaction config: " + "; ".join(lines)


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
