"""The configuration model: one validated, frozen object the whole pipeline reads.

Canonical names are snake_case (DeerFlow's); LibreChat's camelCase spellings are accepted too,
so the ``summarization:`` section of either project's YAML loads unchanged. Everything is checked
here, at load time, so that a typo or an out-of-range value fails before the first model call
instead of in the middle of a run. Every failure is a :class:`CompactionConfigError` naming the
field (dotted path) and what a valid value is.

Keys of DeerFlow's ``config.yaml`` and LibreChat's ``librechat.yaml`` that are not spelled
like ours:

- DeerFlow: ``model_name`` (-> ``model``); ``summary_prompt: null`` means the built-in prompt.
- LibreChat: ``prompt`` / ``updatePrompt``; ``contextPruning`` (-> ``pruning``);
  ``retainRecent.tokens`` (-> ``keep: {type: tokens}``). ``retainRecent.turns`` is accepted and
  has no effect: ``keep`` decides the verbatim tail, and the latest user turn is always kept whole.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self, get_args

import yaml
from pydantic import (
    BaseModel,
    Field,
    StrictFloat,
    ValidationError,
    field_validator,
    model_validator,
)

from langgraph_compaction.config.parts import (
    ConfigModel,
    ContextSize,
    IntegrityConfig,
    KeepSize,
    PruningConfig,
    RecallConfig,
    UserKeepSize,
    at_least_one,
    count,
    is_pair,
    names,
    positive,
    spellings,
    text_value,
    value_range,
)
from langgraph_compaction.config.prompts import DEFAULT_SUMMARY_PROMPT, DEFAULT_UPDATE_PROMPT
from langgraph_compaction.errors import CompactionConfigError

__all__ = ["CONVERSATION_MODEL_CONFLICT", "CompactionConfig"]

CONVERSATION_MODEL_CONFLICT = (
    "summary_context 'conversation' summarizes with the agent's own model (a prompt cache "
    "belongs to one model), so {given} cannot be used with it: remove the model, or set "
    "summary_context: transcript to summarize with another model"
)
"""The error of a summarizer given for ``summary_context: "conversation"``."""

_REMOVED_KEYS = {
    "summarize": "`enabled: true` (or false) in the summarization section",
    "summaryModel": "`model: <name>` (and `provider:`) in the summarization section",
}


class CompactionConfig(ConfigModel):
    """Everything the compaction pipeline can be told; see DESIGN section 4.

    Build it directly, from a mapping with :meth:`coerce`, or from a YAML file (DeerFlow's
    ``config.yaml``, LibreChat's ``librechat.yaml``, or your own) with :meth:`from_yaml`::

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
    model: str | None = Field(None, validation_alias=names("model", "model_name"))
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
    trim_tokens_to_summarize: positive | None = 4000
    """Most conversation tokens sent in one summary call (more is chunked); null: no limit."""
    max_summary_chunks: at_least_one = 8
    """Most summary calls one compaction may make."""
    summary_prompt: text_value = Field(
        DEFAULT_SUMMARY_PROMPT, validation_alias=names("summary_prompt", "prompt")
    )
    """Template for a thread's first summary; ``{messages}`` marks the transcript."""
    update_prompt: text_value = DEFAULT_UPDATE_PROMPT
    """Template merging the previous ``{summary}`` with newly evicted ``{messages}``."""
    max_summary_tokens: positive = 1024
    """Output cap of the summary call. A longer reply (beyond 10%) is cut at a line or
    sentence boundary to this size; a summary is never stored larger."""
    summary_timeout: Annotated[StrictFloat, value_range("> 0", lambda v: v > 0)] = 120.0
    """Seconds one summary call may take; past it the call is a retryable failure (then the
    fallback model, then the circuit breaker) and the agent's call goes ahead."""
    summary_check: Literal["basic", "off"] = "basic"
    """``basic``: a reply that is plainly not a summary (empty, the instruction read back, a
    request for input, none of the conversation's terms in any script) is a failure.
    ``off``: any non-blank reply is stored, for teams that judge summaries themselves."""
    reserve_ratio: Annotated[StrictFloat, value_range("in [0, 1)", lambda v: 0 <= v < 1)] = 0.05
    """Headroom: budget = context_window x (1 - reserve_ratio)."""
    context_window: positive | None = None
    """The model's max input tokens; null: read from the fallback model's profile."""
    headroom_ratio: Annotated[StrictFloat, value_range("in (0, 1]", lambda v: 0 < v <= 1)] = 0.75
    """After a new summary the kept window must sit below this share of every trigger."""
    pruning: PruningConfig = Field(
        default_factory=PruningConfig, validation_alias=names("pruning", "contextPruning")
    )
    """Pruning of old tool results (LibreChat: ``contextPruning``)."""
    preserve_recent_skill_count: count = 5
    """Most skill-file reads rescued from summarization."""
    preserve_recent_skill_tokens: count = 25000
    """Total token budget of rescued skill reads."""
    preserve_recent_skill_tokens_per_skill: count = 5000
    """A skill read larger than this is summarized, not rescued."""
    skill_file_read_tool_names: tuple[str, ...] = ("read_file", "read", "view", "cat")
    """Tools whose results count as skill reads (when the path is under the skills folder)."""
    skills_container_path: str = "/mnt/skills"
    """Folder holding skills, as the agent's tools see it."""
    max_failures: at_least_one = 3
    """Consecutive summary failures before the circuit breaker opens."""
    failure_cooldown_messages: count = 10
    """New messages to wait, once open, before trying again."""
    precompact_ratio: (
        Annotated[StrictFloat, value_range("in (0, 1) or null", lambda v: 0 < v < 1)] | None
    ) = None
    """Start the next summary in the background at this share of the trigger; null: off."""
    store_url: text_value = "sqlite:///compaction.db"
    """SQLAlchemy URL of the summary store."""
    recall: RecallConfig = Field(default_factory=RecallConfig)
    """Total recall of evicted messages (off by default)."""
    summary_instructions: text_value | None = None
    """Added to every summary prompt, built-in or custom (after the transcript), instead of
    replacing it: what the summaries of this agent must keep, say."""
    pin_budget: count = 4000
    """Tokens of pinned messages (with their tool pairs) kept verbatim after the summary,
    newest first; a pinned message past it goes to the summary and is counted."""
    keep_user_messages: UserKeepSize | None = None
    """``{type: tokens, value: N}``: evicted user messages stay verbatim after the summary,
    newest first within N tokens, in their order (Codex's rule). Null: off."""
    cache_breakpoint: bool = False
    """True: the summary message's content carries ``cache_control: {"type": "ephemeral"}``
    (Anthropic prompt caching), so a reused summary is read from the provider's cache."""
    summary_context: Literal["transcript", "conversation"] = "transcript"
    """``transcript``: the summary call sends the evicted messages as a transcript in one
    prompt. ``conversation``: it sends the input the agent's own call would send without a new
    summary (system prompt, tools with tool use off, messages), then one instruction, so it
    rides the agent's prompt cache; the agent's own model summarizes (no ``model``), and an
    input over the window falls back to the transcript for that call."""
    integrity: IntegrityConfig = Field(default_factory=IntegrityConfig)
    """The identifier check and ledger of every new summary (on by default)."""
    review: bool = False
    """True: a new summary is put to a person (LangGraph ``interrupt()``) before its first
    use; needs a checkpointer on the parent graph."""

    @model_validator(mode="before")
    @classmethod
    def _map_deerflow_and_librechat_keys(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        for key, instead in _REMOVED_KEYS.items():
            if key in data:
                raise ValueError(f"{key} was removed; use {instead} instead")
        # DeerFlow writes `summary_prompt: null` for "the built-in prompt".
        for key in (*spellings(cls)["summary_prompt"], *spellings(cls)["update_prompt"]):
            if key in data and data[key] is None:
                del data[key]
        if "retainRecent" in data:
            _map_retain_recent(data, data.pop("retainRecent"))
        return data

    @model_validator(mode="after")
    def _conversation_uses_the_agents_model(self) -> Self:
        if self.summary_context == "conversation" and self.model is not None:
            raise ValueError(CONVERSATION_MODEL_CONFLICT.format(given=f"model {self.model!r}"))
        return self

    @field_validator("parameters", mode="before")
    @classmethod
    def _null_parameters(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("trigger", mode="before")
    @classmethod
    def _trigger_as_tuple(cls, value: Any) -> Any:
        if isinstance(value, Mapping | ContextSize) or is_pair(value):
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


def _accepted_keys(model: type[ConfigModel]) -> list[str]:
    keys = [key for spellings in spellings(model).values() for key in spellings]
    return [*keys, *model._extra_keys]


def _model_at(model: type[ConfigModel], loc: tuple[int | str, ...]) -> type[ConfigModel]:
    """The (nested) model class that an error location points into."""
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is not None:
            model = _nested_model(field.annotation) or model
    return model


def _nested_model(annotation: Any) -> type[ConfigModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, ConfigModel):
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
