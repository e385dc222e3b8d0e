"""CompactionConfig: defaults, DeerFlow's config.yaml and LibreChat's librechat.yaml,
aliases, and one failing test per bad value."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.config.parts import (
    ContextSize,
    HardClearConfig,
    KeepSize,
    PruningConfig,
    SoftTrimConfig,
)
from langgraph_compaction.config.prompts import DEFAULT_SUMMARY_PROMPT, DEFAULT_UPDATE_PROMPT
from langgraph_compaction.errors import CompactionConfigError

DATA = Path(__file__).parents[1] / "data" / "config"


def test_defaults() -> None:
    config = CompactionConfig()
    assert config.enabled is True
    assert config.model is None
    assert config.provider is None
    assert config.parameters == {}
    assert config.trigger is None
    assert config.keep == KeepSize(type="messages", value=20)
    assert config.trim_tokens_to_summarize == 4000
    assert config.max_summary_chunks == 8
    assert config.summary_prompt == DEFAULT_SUMMARY_PROMPT
    assert config.update_prompt == DEFAULT_UPDATE_PROMPT
    assert config.max_summary_tokens == 1024
    assert config.reserve_ratio == 0.05
    assert config.context_window is None
    assert config.headroom_ratio == 0.75
    assert config.preserve_recent_skill_count == 5
    assert config.preserve_recent_skill_tokens == 25000
    assert config.preserve_recent_skill_tokens_per_skill == 5000
    assert config.skill_file_read_tool_names == ("read_file", "read", "view", "cat")
    assert config.skills_container_path == "/mnt/skills"
    assert config.max_failures == 3
    assert config.failure_cooldown_messages == 10
    assert config.precompact_ratio is None
    assert config.store_url == "sqlite:///compaction.db"

    pruning = config.pruning
    assert pruning.enabled is False
    assert pruning.keep_last_assistants == 3
    assert pruning.soft_trim_ratio == 0.3
    assert pruning.hard_clear_ratio == 0.5
    assert pruning.min_prunable_tool_chars == 50000
    assert pruning.soft_trim == SoftTrimConfig(max_chars=4000, head_chars=1500, tail_chars=1500)
    assert pruning.hard_clear == HardClearConfig(
        enabled=True, placeholder="[Old tool result content cleared]"
    )
    assert pruning.tools_allow == []
    assert pruning.tools_deny == []


@pytest.mark.parametrize(
    "model", [CompactionConfig, ContextSize, KeepSize, PruningConfig, SoftTrimConfig]
)
def test_every_field_is_documented(model: type[Any]) -> None:
    undocumented = [name for name, field in model.model_fields.items() if not field.description]
    assert undocumented == []


# --- DeerFlow's config.yaml and LibreChat's librechat.yaml -------------------------------------


def test_deerflow_yaml_loads_unchanged() -> None:
    config = CompactionConfig.from_yaml(DATA / "deerflow.yaml", key="summarization")
    assert config.enabled is True
    assert config.model == "gpt-4o-mini"
    assert config.trigger == (
        ContextSize(type="tokens", value=32000),
        ContextSize(type="messages", value=50),
        ContextSize(type="fraction", value=0.8),
    )
    assert config.keep == KeepSize(type="messages", value=10)
    assert config.trim_tokens_to_summarize == 15564
    assert config.summary_prompt == DEFAULT_SUMMARY_PROMPT  # `summary_prompt: null`
    assert config.preserve_recent_skill_count == 3
    assert config.preserve_recent_skill_tokens == 12000
    assert config.preserve_recent_skill_tokens_per_skill == 3000
    assert config.skill_file_read_tool_names == ("read_file", "read", "view", "cat")


def test_librechat_yaml_loads_unchanged() -> None:
    config = CompactionConfig.from_yaml(DATA / "librechat.yaml", key="summarization")
    assert config.enabled is True
    assert config.provider == "openAI"
    assert config.model == "gpt-4o-mini"
    assert config.parameters == {"temperature": 0.2, "top_p": 0.9}
    assert config.summary_prompt.startswith("Write a checkpoint summary")
    assert config.update_prompt.startswith("Merge the new messages")
    assert config.max_summary_tokens == 4096
    assert config.reserve_ratio == 0.05
    assert config.trigger == (ContextSize(type="token_ratio", value=0.8),)
    assert config.keep == KeepSize(type="tokens", value=2000)  # retainRecent.tokens
    pruning = config.pruning
    assert pruning.enabled is True
    assert pruning.keep_last_assistants == 3
    assert (pruning.soft_trim_ratio, pruning.hard_clear_ratio) == (0.3, 0.5)
    assert pruning.min_prunable_tool_chars == 50000
    assert pruning.soft_trim == SoftTrimConfig(max_chars=4000, head_chars=1500, tail_chars=1500)
    assert pruning.hard_clear.placeholder == "[Old tool result content cleared]"


def test_default_key_is_summarization() -> None:
    assert CompactionConfig.from_yaml(DATA / "deerflow.yaml").model == "gpt-4o-mini"
    assert CompactionConfig.from_yaml(str(DATA / "librechat.yaml")).model == "gpt-4o-mini"


# --- snake_case and camelCase ------------------------------------------------------------------

# (every key that may set the field, a valid non-default value, the value read back)
TOP_LEVEL: list[tuple[tuple[str, ...], Any, str, Any]] = [
    (("model", "model_name"), "gpt-4o-mini", "model", "gpt-4o-mini"),
    (("trim_tokens_to_summarize", "trimTokensToSummarize"), None, "trim_tokens_to_summarize", None),
    (("max_summary_chunks", "maxSummaryChunks"), 2, "max_summary_chunks", 2),
    (
        ("summary_prompt", "summaryPrompt", "prompt"),
        "S {messages}",
        "summary_prompt",
        "S {messages}",
    ),
    (("update_prompt", "updatePrompt"), "U {summary}", "update_prompt", "U {summary}"),
    (("max_summary_tokens", "maxSummaryTokens"), 512, "max_summary_tokens", 512),
    (("reserve_ratio", "reserveRatio"), 0.1, "reserve_ratio", 0.1),
    (("context_window", "contextWindow"), 8192, "context_window", 8192),
    (("headroom_ratio", "headroomRatio"), 0.5, "headroom_ratio", 0.5),
    (("pruning", "contextPruning"), {"enabled": True}, "pruning", PruningConfig(enabled=True)),
    (
        ("preserve_recent_skill_count", "preserveRecentSkillCount"),
        1,
        "preserve_recent_skill_count",
        1,
    ),
    (
        ("preserve_recent_skill_tokens", "preserveRecentSkillTokens"),
        100,
        "preserve_recent_skill_tokens",
        100,
    ),
    (
        ("preserve_recent_skill_tokens_per_skill", "preserveRecentSkillTokensPerSkill"),
        10,
        "preserve_recent_skill_tokens_per_skill",
        10,
    ),
    (
        ("skill_file_read_tool_names", "skillFileReadToolNames"),
        ["skill_load"],
        "skill_file_read_tool_names",
        ("skill_load",),
    ),
    (
        ("skills_container_path", "skillsContainerPath"),
        "/skills",
        "skills_container_path",
        "/skills",
    ),
    (("max_failures", "maxFailures"), 5, "max_failures", 5),
    (("failure_cooldown_messages", "failureCooldownMessages"), 0, "failure_cooldown_messages", 0),
    (("precompact_ratio", "precompactRatio"), 0.7, "precompact_ratio", 0.7),
    (("store_url", "storeUrl"), "sqlite:///other.db", "store_url", "sqlite:///other.db"),
]


@pytest.mark.parametrize(
    ("key", "value", "attribute", "expected"),
    [(key, value, attr, exp) for keys, value, attr, exp in TOP_LEVEL for key in keys],
)
def test_every_spelling_of_a_field(key: str, value: Any, attribute: str, expected: Any) -> None:
    assert getattr(CompactionConfig(**{key: value}), attribute) == expected
    assert getattr(CompactionConfig.coerce({key: value}), attribute) == expected


PRUNING: list[tuple[str, str, Any, str]] = [
    ("keep_last_assistants", "keepLastAssistants", 5, "keep_last_assistants"),
    ("soft_trim_ratio", "softTrimRatio", 0.25, "soft_trim_ratio"),
    ("hard_clear_ratio", "hardClearRatio", 0.6, "hard_clear_ratio"),
    ("min_prunable_tool_chars", "minPrunableToolChars", 100, "min_prunable_tool_chars"),
    ("tools_allow", "toolsAllow", ["search*"], "tools_allow"),
    ("tools_deny", "toolsDeny", ["image*"], "tools_deny"),
]


@pytest.mark.parametrize(("snake", "camel", "value", "attribute"), PRUNING)
def test_pruning_keys_in_both_cases(snake: str, camel: str, value: Any, attribute: str) -> None:
    a = CompactionConfig(pruning={snake: value}).pruning
    b = CompactionConfig(contextPruning={camel: value}).pruning
    assert getattr(a, attribute) == getattr(b, attribute) == value


def test_nested_pruning_sections_in_both_cases() -> None:
    snake = CompactionConfig(
        pruning={
            "soft_trim": {"max_chars": 6000, "head_chars": 2500, "tail_chars": 2500},
            "hard_clear": {"enabled": False, "placeholder": "[cleared]"},
        }
    )
    camel = CompactionConfig(
        contextPruning={
            "softTrim": {"maxChars": 6000, "headChars": 2500, "tailChars": 2500},
            "hardClear": {"enabled": False, "placeholder": "[cleared]"},
        }
    )
    assert snake == camel
    assert snake.pruning.soft_trim.head_chars == 2500
    assert snake.pruning.hard_clear.enabled is False


def test_pruning_tools_allow_deny_mapping() -> None:
    pruning = CompactionConfig(
        contextPruning={"tools": {"allow": ["exec", "read"], "deny": ["*image*"]}}
    ).pruning
    assert (pruning.tools_allow, pruning.tools_deny) == (["exec", "read"], ["*image*"])


def test_two_spellings_of_one_field_are_an_error() -> None:
    with pytest.raises(CompactionConfigError, match="model and model_name both set model"):
        CompactionConfig(model="a", model_name="b")
    with pytest.raises(CompactionConfigError, match=re.escape("tools.allow and tools_allow")):
        CompactionConfig(pruning={"tools": {"allow": ["a"]}, "tools_allow": ["b"]})


# --- triggers and keep -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("tokens", 32000),
        ("messages", 50),
        ("fraction", 0.8),
        ("token_ratio", 0.8),
        ("remaining_tokens", 8000),
        ("messages_to_refine", 10),
    ],
)
def test_each_trigger_type(kind: str, value: float) -> None:
    expected = (ContextSize(type=kind, value=value),)
    assert CompactionConfig(trigger={"type": kind, "value": value}).trigger == expected
    assert CompactionConfig(trigger=(kind, value)).trigger == expected
    assert CompactionConfig(trigger=[kind, value]).trigger == expected
    assert CompactionConfig(trigger=[{"type": kind, "value": value}]).trigger == expected


def test_trigger_list_keeps_order_and_null_stays_null() -> None:
    config = CompactionConfig(trigger=[("tokens", 4000), {"type": "messages", "value": 50}])
    assert [t.type for t in config.trigger or ()] == ["tokens", "messages"]
    assert CompactionConfig(trigger=None).trigger is None
    given = ContextSize(type="tokens", value=10)
    assert CompactionConfig(trigger=given).trigger == (given,)


@pytest.mark.parametrize(("kind", "value"), [("messages", 20), ("tokens", 3000), ("fraction", 0.3)])
def test_each_keep_type(kind: str, value: float) -> None:
    expected = KeepSize(type=kind, value=value)
    assert CompactionConfig(keep={"type": kind, "value": value}).keep == expected
    assert CompactionConfig(keep=(kind, value)).keep == expected


def test_librechat_retain_recent() -> None:
    assert CompactionConfig(retainRecent={"tokens": 500}).keep == KeepSize(type="tokens", value=500)
    # `turns` has no counterpart: `keep` decides the tail (the latest user turn always stays).
    assert CompactionConfig(retainRecent={"turns": 2}).keep == CompactionConfig().keep
    with pytest.raises(CompactionConfigError, match=re.escape("retainRecent.tokens and keep")):
        CompactionConfig(retainRecent={"tokens": 500}, keep=("messages", 5))
    with pytest.raises(CompactionConfigError, match=re.escape("retainRecent.turns")):
        CompactionConfig(retainRecent={"turns": 21})
    with pytest.raises(CompactionConfigError, match="retainRecent"):
        CompactionConfig(retainRecent={"messages": 3})


def test_null_prompt_and_parameters_mean_defaults() -> None:
    config = CompactionConfig(summary_prompt=None, updatePrompt=None, parameters=None)
    assert config.summary_prompt == DEFAULT_SUMMARY_PROMPT
    assert config.update_prompt == DEFAULT_UPDATE_PROMPT
    assert config.parameters == {}


# --- invalid values ----------------------------------------------------------------------------

BAD: list[tuple[dict[str, Any], str]] = [
    ({"reserve_ratio": 1.0}, "reserve_ratio: must be in [0, 1)"),
    ({"reserveRatio": -0.1}, "reserve_ratio"),
    ({"headroom_ratio": 0}, "headroom_ratio: must be in (0, 1]"),
    ({"headroom_ratio": 1.5}, "headroom_ratio"),
    ({"precompact_ratio": 0.0}, "precompact_ratio: must be in (0, 1) or null"),
    ({"precompact_ratio": 1.0}, "precompact_ratio"),
    (
        {"trigger": {"type": "fraction", "value": 0}},
        "trigger[0].value: a fraction must be in (0, 1]",
    ),
    ({"trigger": {"type": "fraction", "value": 1.5}}, "trigger[0].value"),
    ({"trigger": {"type": "token_ratio", "value": 1.2}}, "trigger[0].value"),
    ({"trigger": {"type": "tokens", "value": 0}}, "trigger[0].value: tokens must be > 0"),
    ({"trigger": [("tokens", 10), ("messages", 0)]}, "trigger[1].value"),
    ({"trigger": {"type": "messages", "value": 2.5}}, "trigger[0].value: messages counts whole"),
    ({"trigger": {"type": "remaining_tokens", "value": -1}}, "trigger[0].value"),
    ({"trigger": {"type": "messages_to_refine", "value": 1.5}}, "trigger[0].value"),
    ({"trigger": {"type": "tokenz", "value": 1}}, "trigger[0].type"),
    ({"trigger": {"type": "tokens"}}, "trigger[0].value"),
    ({"trigger": {"type": "tokens", "value": float("inf")}}, "trigger[0].value"),
    ({"trigger": []}, "trigger: an empty list never fires; use null to fire only when"),
    ({"trigger": 5}, "trigger"),
    ({"keep": {"type": "fraction", "value": 0}}, "keep.value: a fraction must be in (0, 1]"),
    ({"keep": {"type": "fraction", "value": 2}}, "keep.value"),
    ({"keep": {"type": "tokens", "value": 0}}, "keep.value"),
    ({"keep": {"type": "messages", "value": 0}}, "keep.value"),
    ({"keep": ("messages", 2.5)}, "keep.value: messages counts whole messages"),
    ({"keep": {"type": "token_ratio", "value": 0.5}}, "keep.type"),
    ({"max_summary_tokens": 0}, "max_summary_tokens: must be > 0"),
    ({"maxSummaryTokens": 1.5}, "max_summary_tokens"),
    ({"trim_tokens_to_summarize": 0}, "trim_tokens_to_summarize: must be > 0"),
    ({"max_summary_chunks": 0}, "max_summary_chunks: must be >= 1"),
    ({"context_window": 0}, "context_window: must be > 0"),
    ({"context_window": -5}, "context_window"),
    ({"max_failures": 0}, "max_failures: must be >= 1"),
    ({"max_failures": True}, "max_failures"),
    ({"failure_cooldown_messages": -1}, "failure_cooldown_messages: must be >= 0"),
    ({"preserve_recent_skill_count": -1}, "preserve_recent_skill_count"),
    ({"preserve_recent_skill_tokens": -1}, "preserve_recent_skill_tokens"),
    ({"preserve_recent_skill_tokens_per_skill": -1}, "preserve_recent_skill_tokens_per_skill"),
    ({"skill_file_read_tool_names": "read_file"}, "skill_file_read_tool_names"),
    ({"store_url": ""}, "store_url: must not be blank"),
    ({"summary_prompt": "  "}, "summary_prompt: must not be blank"),
    ({"enabled": "maybe"}, "enabled"),
    ({"parameters": [1]}, "parameters"),
    ({"pruning": {"soft_trim_ratio": 1.5}}, "pruning.soft_trim_ratio: must be in [0, 1]"),
    ({"contextPruning": {"hardClearRatio": -0.1}}, "pruning.hard_clear_ratio"),
    ({"pruning": {"soft_trim_ratio": 0.6}}, "soft_trim_ratio (0.6) must be <= hard_clear_ratio"),
    ({"pruning": {"keep_last_assistants": -1}}, "pruning.keep_last_assistants"),
    ({"pruning": {"min_prunable_tool_chars": -1}}, "pruning.min_prunable_tool_chars"),
    ({"pruning": {"soft_trim": {"head_chars": -1}}}, "pruning.soft_trim.head_chars: must be >= 0"),
    ({"pruning": {"softTrim": {"tailChars": -1}}}, "pruning.soft_trim.tail_chars"),
    ({"pruning": {"soft_trim": {"max_chars": 0}}}, "pruning.soft_trim.max_chars: must be > 0"),
    ({"pruning": {"soft_trim": {"max_chars": 2000}}}, "head_chars + tail_chars (3000) must be <="),
    ({"pruning": {"hard_clear": {"enabled": "sometimes"}}}, "pruning.hard_clear.enabled"),
    ({"pruning": {"tools": ["a"]}}, "tools: expected a mapping"),
    ({"pruning": {"tools_allow": "a"}}, "pruning.tools_allow"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD)
def test_invalid_values_name_the_field(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(CompactionConfigError, match=re.escape(message)):
        CompactionConfig(**kwargs)
    with pytest.raises(CompactionConfigError, match=re.escape(message)):
        CompactionConfig.coerce(kwargs)


def test_error_shows_the_value_given() -> None:
    with pytest.raises(CompactionConfigError, match=re.escape("(got 1.5)")):
        CompactionConfig(reserve_ratio=1.5)


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="reserve_ratio"):
        CompactionConfig(reserve_ratio=2)


@pytest.mark.parametrize(
    ("key", "instead"), [("summarize", "`enabled: true`"), ("summaryModel", "`model: <name>`")]
)
def test_removed_per_endpoint_keys(key: str, instead: str) -> None:
    with pytest.raises(CompactionConfigError, match=f"{key} was removed; use {re.escape(instead)}"):
        CompactionConfig(**{key: True})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reserve_ratoi": 0.1}, "reserve_ratoi: unknown key; did you mean 'reserve_ratio'?"),
        ({"maxSumaryTokens": 9}, "maxSumaryTokens: unknown key; did you mean 'maxSummaryTokens'?"),
        ({"triger": None}, "triger: unknown key; did you mean 'trigger'?"),
        (
            {"contextPruning": {"softTrim": {"headChar": 1}}},
            "pruning.soft_trim.headChar: unknown key; did you mean 'headChars'?",
        ),
        (
            {"pruning": {"hard_clear": {"placeholdr": "x"}}},
            "pruning.hard_clear.placeholdr: unknown key; did you mean 'placeholder'?",
        ),
        ({"trigger": {"type": "tokens", "value": 1, "vale": 2}}, "trigger[0].vale: unknown key"),
        ({"zzz": 1}, "zzz: unknown key; valid keys: enabled, model, provider"),
    ],
)
def test_unknown_keys_are_named_with_a_suggestion(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(CompactionConfigError, match=re.escape(message)):
        CompactionConfig(**kwargs)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(CompactionConfigError) as caught:
        CompactionConfig(reserve_ratio=2, max_failures=0)
    assert "reserve_ratio" in str(caught.value)
    assert "max_failures" in str(caught.value)


# --- frozen, coerce ----------------------------------------------------------------------------


def test_frozen() -> None:
    config = CompactionConfig()
    with pytest.raises(ValidationError, match="frozen"):
        config.enabled = False  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        config.pruning.enabled = True  # type: ignore[misc]


def test_coerce() -> None:
    config = CompactionConfig(max_failures=7)
    assert CompactionConfig.coerce(config) is config
    assert CompactionConfig.coerce(None) == CompactionConfig()
    assert CompactionConfig.coerce({"maxFailures": 7}) == config
    assert CompactionConfig.coerce({}) == CompactionConfig()


@pytest.mark.parametrize(("value", "message"), [(42, "not int"), ({1: 2}, "keys must be strings")])
def test_coerce_rejects_other_input(value: Any, message: str) -> None:
    with pytest.raises(CompactionConfigError, match=message):
        CompactionConfig.coerce(value)


# --- from_yaml ---------------------------------------------------------------------------------


def test_from_yaml_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(
        CompactionConfigError, match=f"config file not found: {re.escape(str(missing))}"
    ):
        CompactionConfig.from_yaml(missing)


def test_from_yaml_document_is_the_config(tmp_path: Path) -> None:
    path = tmp_path / "compaction.yaml"
    path.write_text("model: gpt-4o-mini\ntrigger: {type: tokens, value: 1000}\n")
    assert CompactionConfig.from_yaml(path).model == "gpt-4o-mini"  # no `summarization:` key
    assert CompactionConfig.from_yaml(path, key=None).model == "gpt-4o-mini"


def test_from_yaml_key_none_takes_the_whole_document(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text("summarization:\n  enabled: false\n")
    with pytest.raises(CompactionConfigError, match="summarization: unknown key"):
        CompactionConfig.from_yaml(path, key=None)


def test_from_yaml_other_key(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text("compaction:\n  maxSummaryTokens: 99\nsummarization:\n  enabled: false\n")
    assert CompactionConfig.from_yaml(path, key="compaction").max_summary_tokens == 99


def test_from_yaml_without_the_section(tmp_path: Path) -> None:
    path = tmp_path / "librechat.yaml"
    path.write_text("version: 1.3.17\ncache: true\n")
    with pytest.raises(CompactionConfigError, match="has no `summarization:` section"):
        CompactionConfig.from_yaml(path)


@pytest.mark.parametrize("text", ["", "summarization:\n", "summarization: null\n"])
def test_from_yaml_empty_section_means_defaults(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    assert CompactionConfig.from_yaml(path) == CompactionConfig()


def test_from_yaml_errors_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("summarization:\n  contextPruning:\n    softTrim:\n      headChars: -1\n")
    with pytest.raises(CompactionConfigError) as caught:
        CompactionConfig.from_yaml(path)
    message = str(caught.value)
    assert str(path) in message
    assert "[summarization]" in message
    assert "pruning.soft_trim.head_chars: must be >= 0" in message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("summarization: [1, 2]\n", "expected a mapping"),
        ("summarization: {enabled: [\n", "cannot read"),
        ("summarization:\n  summarize: true\n", "summarize was removed"),
    ],
)
def test_from_yaml_bad_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(CompactionConfigError, match=message):
        CompactionConfig.from_yaml(path)
