"""partition: find the summary to reuse, or choose what a new summary evicts.

The cutoff comes from ``keep``, snapped to whole tool units; the latest user request and
recent skill files are rescued from the evicted side; stickiness headroom moves the cutoff
forward until the kept side sits well below every trigger, so the next call reuses the
summary instead of making another.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from .._config import CompactionConfig
from .._effects import Step, StoreCall
from .._exceptions import ThreadDeletedError
from .._messages import find_latest_user_index, split_tool_units
from .._runtime import CallWork, CompactionRuntime
from .._tokens import HistoryScan, calibrated
from ..store import SummaryRecord
from .measure import Threshold, find_keep_start, fired_triggers
from .prune import pruned_summary_triggers

__all__ = [
    "Partition",
    "Reuse",
    "compressed_triggers",
    "find_matching_summaries",
    "find_skill_results",
    "message_key",
    "partition_step",
    "plan_partition",
    "rescued_positions",
    "still_serves",
    "summary_fits",
]


@dataclass(frozen=True, slots=True)
class Reuse:
    """Serve a stored summary: its prefix matches and the compressed context fits."""

    record: SummaryRecord


@dataclass(frozen=True, slots=True)
class Partition:
    """A new summary: ``messages[:cutoff]`` becomes its prefix."""

    cutoff: int
    rescued: tuple[int, ...]
    """Indexes before the cutoff kept verbatim, in order."""
    evicted: tuple[int, ...]
    """Indexes the summarizer must see now (newly evicted, and folded-in former rescues)."""
    previous: SummaryRecord | None
    prefix_hash: str
    boundary_message_id: str


def find_matching_summaries(
    summaries: Sequence[SummaryRecord], messages: Sequence[BaseMessage], scan: HistoryScan
) -> list[SummaryRecord]:
    """The summaries (in the given order) whose prefix is still exactly the head of this history."""
    matching = []
    for record in summaries:
        covered = record.covered_messages
        if covered > len(messages) or covered <= 0:
            continue
        if (messages[covered - 1].id or "") != record.boundary_message_id:
            continue
        if scan.prefix_hash(covered) == record.prefix_hash:
            matching.append(record)
    return matching


def rescued_positions(
    runtime: CompactionRuntime, record: SummaryRecord, messages: Sequence[BaseMessage]
) -> tuple[int, ...]:
    """Indexes of a summary's rescued messages (its prefix matched, so they are stable)."""
    cached = runtime.rescued_positions.get(record.id)
    if cached is None:
        wanted = set(record.rescued_message_ids)
        cached = tuple(
            i for i in range(record.covered_messages) if message_key(messages, i) in wanted
        )
        runtime.remember(runtime.rescued_positions, record.id, cached)
    return cached


def message_key(messages: Sequence[BaseMessage], index: int) -> str:
    """A message's id, or its position when it has none."""
    return messages[index].id or f"#{index}"


def _count_check(
    runtime: CompactionRuntime,
    work: CallWork,
    kept_from: int,
    rescued: Sequence[int],
    summary_tokens: int,
) -> tuple[int, int, int]:
    """Tokens, message count and refine count of ``system + summary + rescued + kept``."""
    scan, lead = work.scan, work.lead
    raw = (
        runtime.fixed_tokens
        + scan.cumulative[lead]
        + summary_tokens
        + sum(scan.tokens[i] for i in rescued)
        + scan.tokens_between(kept_from, len(work.messages))
    )
    count = lead + 1 + len(rescued) + len(work.messages) - kept_from
    refine = 0
    if runtime.needs_refine_count:
        keep = runtime.config.keep
        refine = find_keep_start(work.messages, scan, kept_from, keep, runtime.window) - kept_from
    return calibrated(raw, work.ratio), count, refine


def compressed_triggers(
    runtime: CompactionRuntime,
    work: CallWork,
    record: SummaryRecord,
    thresholds: Sequence[Threshold] | None = None,
) -> tuple[str, ...]:
    """Triggers the context fires with this summary in place of its prefix."""
    _, summary_tokens = runtime.summary_message(record)
    rescued = rescued_positions(runtime, record, work.messages)
    tokens, count, refine = _count_check(
        runtime, work, record.covered_messages, rescued, summary_tokens
    )
    if thresholds is None:
        thresholds = runtime.thresholds
    return fired_triggers(thresholds, tokens, count, refine)


def summary_fits(runtime: CompactionRuntime, work: CallWork, record: SummaryRecord) -> bool:
    """Whether this summary can serve the call: its compressed context fires no trigger, as it
    stands or with the messages after its boundary pruned (DESIGN 6.2: pruning comes first)."""
    if not compressed_triggers(runtime, work, record):
        return True
    if not runtime.config.pruning.enabled:
        return False
    rescued = rescued_positions(runtime, record, work.messages)
    return not pruned_summary_triggers(runtime, work, record, rescued)


def still_serves(runtime: CompactionRuntime, work: CallWork) -> SummaryRecord | None:
    """The summary this process served the thread last, if it can serve this call as well.

    Contexts only grow, so a summary that matches and fits is the one the store lookup would
    pick too; the call then needs no store access and no further node.
    """
    record = runtime.held(work.key)
    if record is None or not find_matching_summaries([record], work.messages, work.scan):
        return None
    return record if summary_fits(runtime, work, record) else None


def _within_headroom(
    thresholds: Sequence[Threshold], headroom: float, tokens: int, count: int, refine: int
) -> bool:
    measured = {"tokens": tokens, "messages": count, "refine": refine}
    return all(measured[t.kind] < headroom * t.limit for t in thresholds)


def _skill_path(call_args: object, container: str) -> str | None:
    if not isinstance(call_args, dict):
        return None
    prefix = container.rstrip("/") + "/"
    for value in call_args.values():
        if isinstance(value, str) and (value == container or value.startswith(prefix)):
            return value
    return None


def find_skill_results(
    messages: Sequence[BaseMessage], start: int, end: int, config: CompactionConfig
) -> list[int]:
    """Indexes of tool results in ``[start, end)`` that read a skill file, oldest first.

    A result is paired with its call by position within its unit (ids repeat in real traces).
    """
    names = set(config.skill_file_read_tool_names)
    found: list[int] = []
    for first, unit_end in split_tool_units(messages, start):
        if first >= end:
            break
        caller = messages[first]
        if not isinstance(caller, AIMessage) or not caller.tool_calls:
            continue
        calls = list(caller.tool_calls)
        for index in range(first + 1, min(unit_end, end)):
            result = messages[index]
            assert isinstance(result, ToolMessage)
            call = next((c for c in calls if c.get("id") == result.tool_call_id), None)
            if call is None:
                continue
            calls.remove(call)
            path = _skill_path(call.get("args"), config.skills_container_path)
            if call.get("name") in names and path is not None:
                found.append(index)
    return found


def _choose_skills(
    candidates: Sequence[int], scan: HistoryScan, config: CompactionConfig
) -> list[int]:
    """Newest first, within the count, total-token and per-skill budgets."""
    chosen: list[int] = []
    total = 0
    for index in reversed(candidates):
        if len(chosen) >= config.preserve_recent_skill_count:
            break
        tokens = scan.tokens[index]
        if tokens > config.preserve_recent_skill_tokens_per_skill:
            continue
        if total + tokens > config.preserve_recent_skill_tokens:
            continue
        chosen.append(index)
        total += tokens
    return chosen


def _callers_of(messages: Sequence[BaseMessage], results: Sequence[int]) -> set[int]:
    """The AI message each tool result belongs to (it travels with its rescued results)."""
    callers: set[int] = set()
    for index in results:
        if not isinstance(messages[index], ToolMessage):
            continue
        caller = index - 1
        while caller >= 0 and isinstance(messages[caller], ToolMessage):
            caller -= 1
        callers.add(caller)
    return callers


def plan_partition(
    runtime: CompactionRuntime,
    work: CallWork,
    previous: SummaryRecord | None,
    headroom: float | None = None,
) -> Partition | None:
    """Choose the new cutoff and what is rescued; None when nothing more can be evicted.

    ``headroom`` overrides ``headroom_ratio``: a summary prepared ahead of time leaves room
    for the turns that still come before the trigger fires.
    """
    messages, scan, config = work.messages, work.scan, runtime.config
    if headroom is None:
        headroom = config.headroom_ratio
    start = previous.covered_messages if previous else work.lead
    units = split_tool_units(messages, start)
    if len(units) < 2:
        return None
    keep_start = find_keep_start(messages, scan, work.lead, config.keep, runtime.window)
    candidates = [first for first, _ in units[1:] if first >= keep_start] or [units[-1][0]]
    previous_rescued = rescued_positions(runtime, previous, messages) if previous else ()
    summary_tokens = runtime.summary_message(previous)[1] if previous else 0
    latest_user = find_latest_user_index(messages, work.lead)
    old_skills = [i for i in previous_rescued if isinstance(messages[i], ToolMessage)]
    cutoff = candidates[-1]
    rescued: tuple[int, ...] = ()
    for candidate in candidates:
        rescued = _rescue(messages, scan, config, start, candidate, latest_user, old_skills)
        tokens, count, refine = _count_check(runtime, work, candidate, rescued, summary_tokens)
        if _within_headroom(runtime.thresholds, headroom, tokens, count, refine):
            cutoff = candidate
            break
    else:
        rescued = _rescue(messages, scan, config, start, cutoff, latest_user, old_skills)
    kept: set[int] = set(rescued)
    folded = [i for i in previous_rescued if i not in kept]
    callers = _callers_of(messages, [i for i in range(start, cutoff) if i not in kept])
    evicted = folded + [i for i in range(start, cutoff) if i not in kept or i in callers]
    if not evicted:
        return None
    return Partition(
        cutoff=cutoff,
        rescued=rescued,
        evicted=tuple(evicted),
        previous=previous,
        prefix_hash=scan.prefix_hash(cutoff),
        boundary_message_id=messages[cutoff - 1].id or "",
    )


def _rescue(
    messages: Sequence[BaseMessage],
    scan: HistoryScan,
    config: CompactionConfig,
    start: int,
    cutoff: int,
    latest_user: int | None,
    old_skills: Sequence[int],
) -> tuple[int, ...]:
    """What stays verbatim from before ``cutoff``: the latest user request and skill files."""
    skills = _choose_skills(
        [*old_skills, *find_skill_results(messages, start, cutoff, config)], scan, config
    )
    rescued = set(skills) | _callers_of(messages, skills)
    if latest_user is not None and latest_user < cutoff:
        rescued.add(latest_user)
    return tuple(sorted(rescued))


def partition_step(runtime: CompactionRuntime, work: CallWork) -> Step[None]:
    """Load the thread's summaries and state, then decide: reuse, or what to evict."""
    ns, thread_id, key = runtime.namespace, work.thread_id, work.key
    work.thread_state = yield StoreCall("thread_state", {"thread_id": thread_id, "namespace": ns})
    if key in runtime.calibration_dirty:
        runtime.calibration_dirty.discard(key)
        ratio = runtime.calibration[key]
        args = {"ratio": ratio, "generation": work.thread_state.generation}
        with suppress(ThreadDeletedError):  # measured before the thread's deletion: dropped
            yield StoreCall("set_calibration", {"thread_id": thread_id, "namespace": ns, **args})
    elif key not in runtime.calibration and work.thread_state.calibration:
        runtime.calibration[key] = work.thread_state.calibration
    summaries = yield StoreCall(
        "latest_summaries", {"thread_id": thread_id, "namespace": ns, "limit": 8}
    )
    matching = find_matching_summaries(summaries, work.messages, work.scan)
    work.matching = matching[0] if matching else None
    # The oldest summary that still fits stays in use: the input keeps its bytes until the
    # trigger fires, and a summary prepared ahead of time takes over exactly then.
    in_use = next((r for r in reversed(matching) if summary_fits(runtime, work, r)), None)
    if in_use is not None:
        work.plan = Reuse(in_use)
        near = runtime.precompact_thresholds and compressed_triggers(
            runtime, work, in_use, runtime.precompact_thresholds
        )
        if near and in_use is work.matching:  # nothing newer prepared yet
            work.precompact_from = in_use
    else:
        work.plan = plan_partition(runtime, work, work.matching)
