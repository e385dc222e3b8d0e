"""Per-run control: ``config["configurable"]["compaction"]`` read into a frozen record.

A person or an agent steers one call without rebuilding the graph: ``force`` compacts now even
under the trigger (the keep window still applies), ``skip`` passes the call through untouched,
``instruction`` goes into the prompt of the summary this call makes. A request filed in the
store (``SummaryStore.request_compaction``, the ``compact`` tool) is merged in as ``force``
with its instruction. Bad values fail the call with an error naming the key: a typo must not
silently compact, or silently not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from langchain_core.runnables import RunnableConfig

from langgraph_compaction.errors import CompactionConfigError
from langgraph_compaction.store import CompactionRequest

__all__ = ["CONTROL_KEY", "NO_CONTROL", "RunControl", "join_instructions", "run_control"]

CONTROL_KEY = "compaction"
"""The key under ``config["configurable"]``."""

_KEYS = ("force", "skip", "instruction")


@dataclass(frozen=True, slots=True)
class RunControl:
    """What the caller asked of this one call."""

    force: bool = False
    skip: bool = False
    instruction: str | None = None
    request: CompactionRequest | None = None
    """The store's pending request this call serves (it forces it): consumed in the
    transaction that stores its summary, never before (DESIGN 6.11)."""

    def with_request(self, request: CompactionRequest) -> RunControl:
        """This control with a pending store request merged in."""
        return RunControl(
            force=True,
            skip=self.skip,
            instruction=join_instructions(self.instruction, request.instruction),
            request=request,
        )


NO_CONTROL = RunControl()
"""Nothing asked: the default of every call."""


def join_instructions(*parts: str | None) -> str | None:
    """Non-blank instructions, one per paragraph; None when there are none."""
    kept = [part.strip() for part in parts if part is not None and part.strip()]
    return "\n\n".join(kept) if kept else None


def run_control(config: RunnableConfig | None) -> RunControl:
    """The control a run's config gives; the default (nothing asked) when it gives none.

    Raises:
        CompactionConfigError: the value is not a mapping, a key is unknown, ``force`` or
            ``skip`` is not a bool, both are true, or ``instruction`` is not a string.
    """
    configurable = (config or {}).get("configurable") or {}
    value = configurable.get(CONTROL_KEY)
    if value is None:
        return NO_CONTROL
    where = f'config["configurable"]["{CONTROL_KEY}"]'
    if not isinstance(value, Mapping):
        raise CompactionConfigError(
            f"{where} must be a mapping such as {{'force': True}}, got {type(value).__name__}"
        )
    unknown = [key for key in value if key not in _KEYS]
    if unknown:
        raise CompactionConfigError(
            f"{where} has unknown key {unknown[0]!r}; the keys are {', '.join(_KEYS)}"
        )
    flags: dict[str, bool] = {}
    for key in ("force", "skip"):
        flag = value.get(key, False)
        if flag is None:
            flag = False
        if not isinstance(flag, bool):
            raise CompactionConfigError(f"{where}[{key!r}] must be true or false, got {flag!r}")
        flags[key] = flag
    if flags["force"] and flags["skip"]:
        raise CompactionConfigError(f"{where} sets both force and skip; give one")
    instruction = value.get("instruction")
    if instruction is not None and not isinstance(instruction, str):
        raise CompactionConfigError(
            f"{where}['instruction'] must be a string, got {type(instruction).__name__}"
        )
    return RunControl(flags["force"], flags["skip"], join_instructions(instruction))
