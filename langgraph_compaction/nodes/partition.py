"""partition: find the summary to reuse, or choose what a new summary evicts.

The cutoff comes from ``keep``, snapped to whole tool units, and never before a call that no
result answers (it goes to the summary with its message rather than get an invented result);
the latest user request and recent skill files are rescued from the evicted side; stickiness
headroom moves the cutoff forward until the kept side sits well below every trigger, so the
next call reuses the summary instead of making another. A background summary of the thread
still in flight is waited for (never a second summary of what is being made).

Pinned units and, with ``keep_user_messages``, the newest user turns of the whole prefix are
rescued too, within their budgets (the rules are ``pruning.pins``'s); a rescue no longer called
for (unpinned, past the budget, no longer a skill's) is folded into the new summary.

    partition -> summarize
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.config.triggers import find_keep_start, within_headroom
from langgraph_compaction.content.history_scan import HistoryScan
from langgraph_compaction.content.messages import (
    answered_calls,
    caller_index,
    find_latest_user_index,
    has_unanswered_call,
    split_tool_units,
)
from langgraph_compaction.errors import SummaryStoreError, ThreadDeletedError
from langgraph_compaction.pipeline.context import Pipeline, Precompact
from langgraph_compaction.pipeline.effects import (
    Step,
    WaitFlight,
    latest_summaries,
    perform,
    set_calibration,
    thread_state,
)
from langgraph_compaction.pipeline.records import (
    Decision,
    Measured,
    MeasuredInput,
    Partition,
    Reuse,
)
from langgraph_compaction.pruning.pins import (
    choose_pinned,
    choose_user_messages,
    pinned_units,
    user_messages,
)
from langgraph_compaction.store import SummaryRecord
from langgraph_compaction.summary.matching import (
    compressed_context,
    compressed_triggers,
    find_matching_summaries,
    rescued_positions,
    store_outage,
    summary_fits,
)

__all__ = ["JOB_WAIT_S", "decide", "find_skill_results", "partition_step", "plan_partition"]

JOB_WAIT_S = 120.0
"""Longest a call waits for its thread's background summary before deciding without it."""


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
    found: list[int] = []
    for first, unit_end in split_tool_units(messages, start):
        if first >= end:
            break
        found.extend(_unit_skill_results(messages, first, min(unit_end, end), config))
    return found


def _unit_skill_results(
    messages: Sequence[BaseMessage], first: int, end: int, config: CompactionConfig
) -> list[int]:
    """The skill-file results among ``messages[first + 1:end]``, the results of one unit."""
    caller = messages[first]
    if not isinstance(caller, AIMessage) or not caller.tool_calls:
        return []
    names = set(config.skill_file_read_tool_names)
    calls = list(caller.tool_calls)
    found = []
    for index in range(first + 1, end):
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


def _is_skill_result(messages: Sequence[BaseMessage], index: int, config: CompactionConfig) -> bool:
    """Whether a tool result read a skill file (a former rescue may be a pin's instead)."""
    caller = caller_index(messages, index)
    return caller >= 0 and index in _unit_skill_results(messages, caller, index + 1, config)


def _choose_skills(
    candidates: Sequence[int], scan: HistoryScan, config: CompactionConfig
) -> list[int]:
    """Newest first, within the count, total-token and per-skill budgets."""
    chosen: list[int] = []
    total = 0
    for index in reversed(candidates):
        if len(chosen) >= config.preserve_recent_skill_count:
            break
        tokens = scan.token(index)
        if tokens > config.preserve_recent_skill_tokens_per_skill:
            continue
        if total + tokens > config.preserve_recent_skill_tokens:
            continue
        chosen.append(index)
        total += tokens
    return chosen


def _callers_of(messages: Sequence[BaseMessage], results: Sequence[int]) -> set[int]:
    """The AI message each tool result belongs to (it travels with its rescued results)."""
    return {caller_index(messages, i) for i in results if isinstance(messages[i], ToolMessage)}


def _split_callers(messages: Sequence[BaseMessage], rescued: Sequence[int]) -> set[int]:
    """Rescued AI messages that keep only some of their calls (the others' results were not
    rescued, or never recorded): each goes to the summary whole, and a copy stays."""
    kept = set(rescued)
    split = set()
    for index in rescued:
        message = messages[index]
        if isinstance(message, AIMessage) and message.tool_calls:
            answered = answered_calls(messages, index)
            if sum(1 for result in answered if result in kept) < len(message.tool_calls):
                split.add(index)
    return split


def _past_unanswered_calls(
    messages: Sequence[BaseMessage], units: Sequence[tuple[int, int]]
) -> int:
    """Where the kept side may start: after the newest unit with a call no result answers.

    Such a call goes to the summary with its message instead of getting an invented result
    (DeerFlow's rule). The newest unit is the exception: it is never evicted, and the final
    pair check answers it.
    """
    for first, end in reversed(units[:-1]):
        if has_unanswered_call(messages, first):
            return end
    return 0


def plan_partition(
    pipe: Pipeline,
    measured: Measured,
    previous: SummaryRecord | None,
    headroom: float | None = None,
    keep_start: int | None = None,
) -> Partition | None:
    """Choose the new cutoff and what is rescued; None when nothing more can be evicted.

    ``headroom`` overrides ``headroom_ratio`` and ``keep_start`` where the keep window
    starts: a summary prepared ahead of time leaves room for the turns that still come
    before the trigger fires, and evicts what the keep window will have left by then.
    """
    settings = pipe.settings
    messages, scan, config = measured.messages, measured.scan, settings.config
    if headroom is None:
        headroom = config.headroom_ratio
    start = previous.covered_messages if previous else measured.lead
    units = split_tool_units(messages, start)
    if len(units) < 2:
        return None
    if keep_start is None:
        keep_start = find_keep_start(messages, scan, measured.lead, config.keep, settings.window)
    earliest = max(keep_start, _past_unanswered_calls(messages, units))
    candidates = [first for first, _ in units[1:] if first >= earliest] or [units[-1][0]]
    previous_rescued = rescued_positions(pipe, previous, messages) if previous else ()
    summary_tokens = (
        pipe.memory.summary_message(previous, settings.recall_tool)[1] if previous else 0
    )
    latest_user = find_latest_user_index(messages, measured.lead)
    old_skills = [
        i
        for i in previous_rescued
        if isinstance(messages[i], ToolMessage) and _is_skill_result(messages, i, config)
    ]
    kept = _KeptVerbatim.find(measured, candidates[-1], config, latest_user)
    cutoff = candidates[-1]
    rescued: tuple[int, ...] = ()
    for candidate in candidates:
        rescued = _rescue(messages, scan, config, start, candidate, latest_user, old_skills, kept)
        tokens, count, refine = compressed_context(
            pipe, measured, candidate, rescued, summary_tokens
        )
        if within_headroom(settings.thresholds, headroom, tokens, count, refine):
            cutoff = candidate
            break
    else:
        rescued = _rescue(messages, scan, config, start, cutoff, latest_user, old_skills, kept)
    staying: set[int] = set(rescued)
    folded = [i for i in previous_rescued if i not in staying]
    split = _split_callers(messages, rescued)
    evicted = folded + [i for i in range(start, cutoff) if i not in staying or i in split]
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


@dataclass(frozen=True, slots=True)
class _KeptVerbatim:
    """Pinned units and user turns of the prefix, found once for every candidate cutoff."""

    pinned: list[tuple[int, int]]
    users: list[int]
    """Real user turns (not the latest request, not pinned) when ``keep_user_messages``."""
    token: Callable[[int], int]
    pin_budget: int
    user_budget: int

    @classmethod
    def find(
        cls,
        measured: Measured,
        end: int,
        config: CompactionConfig,
        latest_user: int | None,
    ) -> _KeptVerbatim:
        messages, lead = measured.messages, measured.lead
        pinned = pinned_units(messages, lead, end, measured.pins)
        users: list[int] = []
        keep = config.keep_user_messages
        if keep is not None:
            in_pins = {i for first, unit_end in pinned for i in range(first, unit_end)}
            users = [
                i
                for i in user_messages(messages, lead, end)
                if i != latest_user and i not in in_pins
            ]
        budget = int(keep.value) if keep is not None else 0
        return cls(pinned, users, measured.scan.token, config.pin_budget, budget)

    def before(self, cutoff: int) -> set[int]:
        """What stays verbatim from before ``cutoff``."""
        kept = {
            i
            for first, end in choose_pinned(self.pinned, cutoff, self.token, self.pin_budget)
            for i in range(first, end)
        }
        kept.update(choose_user_messages(self.users, cutoff, self.token, self.user_budget))
        return kept


def _rescue(
    messages: Sequence[BaseMessage],
    scan: HistoryScan,
    config: CompactionConfig,
    start: int,
    cutoff: int,
    latest_user: int | None,
    old_skills: Sequence[int],
    kept: _KeptVerbatim,
) -> tuple[int, ...]:
    """What stays verbatim from before ``cutoff``: the latest user request, skill files,
    pinned units and kept user turns."""
    skills = _choose_skills(
        [*old_skills, *find_skill_results(messages, start, cutoff, config)], scan, config
    )
    rescued = set(skills) | _callers_of(messages, skills) | kept.before(cutoff)
    if latest_user is not None and latest_user < cutoff:
        rescued.add(latest_user)
    return tuple(sorted(rescued))


def decide(pipe: Pipeline, measured: Measured) -> Step[Decision]:
    """Load the thread's summaries and state, then decide: reuse, or what to evict."""
    settings, memory = pipe.settings, pipe.memory
    ns, thread_id, key = settings.namespace, measured.thread_id, measured.key
    state = yield from perform(thread_state(thread_id, ns))
    unsaved = memory.take_unsaved_ratio(key)
    if unsaved is not None:
        with suppress(ThreadDeletedError):  # measured before the thread's deletion: dropped
            yield from perform(set_calibration(thread_id, ns, unsaved, state.generation))
    else:
        memory.load_ratio(key, state.calibration)
    summaries = yield from perform(latest_summaries(thread_id, ns, 8))
    matching = find_matching_summaries(summaries, measured.messages, measured.scan)
    newest = matching[0] if matching else None
    # The oldest summary that still fits stays in use: the input keeps its bytes until the
    # trigger fires, and a summary prepared ahead of time takes over exactly then.
    in_use = None
    if not measured.control.force:  # forced: a new summary, even where one would serve
        in_use = next((r for r in reversed(matching) if summary_fits(pipe, measured, r)), None)
    if in_use is None:
        return Decision(state, newest, plan_partition(pipe, measured, newest))
    near = settings.precompact_thresholds and compressed_triggers(
        pipe, measured, in_use, settings.precompact_thresholds
    )
    precompact_from = in_use if near and in_use is newest else None  # nothing newer yet
    return Decision(state, newest, Reuse(in_use), precompact_from)


def partition_step(
    pipe: Pipeline, precompact: Precompact, state: MeasuredInput, config: RunnableConfig
) -> Step[dict[str, Decision]]:
    """The node: a decision, or the store outage's outcome for summarize to pass on."""
    measured = state["measured"]
    try:
        decision = yield from decide(pipe, measured)
        job = pipe.jobs.running(measured.key)
        if isinstance(decision.plan, Partition) and job is not None:
            yield WaitFlight(job.flight, JOB_WAIT_S)  # never a second summary of it
            decision = yield from decide(pipe, measured)
    except SummaryStoreError as exc:  # the agent's call goes ahead without the store
        outcome = store_outage(pipe, measured, exc)
        return {"decision": Decision(None, None, None, outcome=outcome)}
    pipe.memory.note_store_ok(pipe.settings.store)
    if decision.precompact_from is not None:
        yield precompact(pipe, measured, decision.precompact_from)
    return {"decision": decision}
