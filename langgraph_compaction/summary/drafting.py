"""Making a new summary's text, not storing it: the summary model's calls or your compactor.

The summary model reads the evicted messages in consecutive chunks within what one call takes
(``trim_tokens_to_summarize`` and what the summarizer's window is known to take), each an update
of the last, every prompt ending with the caller's instructions; a prompt the model refuses as
too long is summarized again in smaller chunks. A custom compactor gets every evicted message
in one call (chunks exist to fit a model's window). With ``summary_context: "conversation"``
the agent's own model reads the agent's own input and one request instead, in one call
(``summary.conversation``), and the transcript serves when that input would not fit. A model's
reply is tidied first (``summary.tidy``: echoed delimiters, a repeated section, a sentence cut
at ``max_tokens``; a compactor's text is its own). Either reply must pass the not-a-summary
check and is capped at ``max_summary_tokens``; a failure is a value (``Failure``), so the caller
can try the fallback model or apply the failure policy. Every call runs labelled as the caller
says (``labels``, from ``summary.model_call.summary_labels``), and what the answered calls reported
as usage is summed into the draft (a failed one too: a failure was paid for). A new draft is
then checked for the identifiers and artifacts it must keep, its ledger appended
(``summary.verify``, DESIGN 6.13).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langgraph_compaction.config.run_control import join_instructions
from langgraph_compaction.config.settings import Compactor, emit
from langgraph_compaction.errors import SummarizerError
from langgraph_compaction.pipeline.context import Pipeline
from langgraph_compaction.pipeline.effects import Step, next_version, perform
from langgraph_compaction.pipeline.records import Measured, Partition
from langgraph_compaction.pipeline.report import IntegrityReport, SummaryUsage
from langgraph_compaction.summary.cap import cap_summary
from langgraph_compaction.summary.checks import not_a_summary
from langgraph_compaction.summary.chunks import ChunkPlan, plan_chunks, transcript_tokens
from langgraph_compaction.summary.compactor import compactor_name, compactor_reply
from langgraph_compaction.summary.conversation import ConversationRequest, conversation_request
from langgraph_compaction.summary.model_call import (
    PromptTooLong,
    SummaryCallFailed,
    add_usage,
    bind_summarizer,
    distinct_models,
    model_name,
    summary_call,
    summary_call_messages,
    summary_labels,
)
from langgraph_compaction.summary.prompts import add_instructions, fill_prompt, render_transcript
from langgraph_compaction.summary.tidy import prompt_tags, tidy_reply
from langgraph_compaction.summary.verify import verified

__all__ = [
    "Draft",
    "Failure",
    "draft_by_compactor",
    "draft_by_conversation",
    "draft_by_models",
    "draft_summary",
    "plan_summary_chunks",
]

_MAX_OVERFLOW_RETRIES = 3
"""Times one compaction re-chunks after the summarizer refused a prompt as too long."""


@dataclass(frozen=True, slots=True)
class Draft:
    """A summary made, not stored yet (or saved for review), and what making it cost."""

    text: str
    model: str
    calls: int = 0
    shortened: int = 0
    over_trim: int = 0
    summary_cut: bool = False
    usage: SummaryUsage | None = None
    """What its calls cost as reported (None: no call made it, as with a person's text)."""
    integrity: IntegrityReport | None = None
    """Its identifier check (``text`` then ends with the ledger); None: not checked."""
    integrity_items: str | None = None
    """The trail it was checked against, as JSON, stored with the row."""


@dataclass(frozen=True, slots=True)
class Failure:
    """Every way of making the summary failed."""

    error: str
    calls: int = 0
    usage: SummaryUsage | None = None
    """What the calls that answered cost, as reported (None: none was made)."""


def draft_by_compactor(
    pipe: Pipeline,
    compactor: Compactor,
    evicted: list[BaseMessage],
    previous: str | None,
    instruction: str | None,
    labels: RunnableConfig | None = None,
) -> Step[Draft | Failure]:
    """One call of the custom compactor with every evicted message, checked and capped.

    A function reports no usage: the draft's (or failure's) usage fields are all None.
    """
    settings = pipe.settings
    config = settings.config
    name = compactor_name(compactor)
    try:
        reply = yield from compactor_reply(
            compactor, evicted, previous, instruction, config.summary_timeout, labels
        )
        if config.summary_check == "basic":
            reason = not_a_summary(reply, f"{previous or ''}\n{render_transcript(evicted)}")
            if reason is not None:
                raise SummarizerError(f"the reply of {name} is not a summary ({reason})")
    except SummarizerError as exc:
        return Failure(str(exc), calls=1, usage=SummaryUsage())
    text = cap_summary(reply, config.max_summary_tokens, settings.counter)
    cut = len(text) < len(reply)
    return Draft(text, name, calls=1, summary_cut=cut, usage=SummaryUsage())


def draft_by_models(
    pipe: Pipeline,
    models: list[BaseChatModel],
    chunks: ChunkPlan,
    previous: str | None,
    instruction: str | None,
    labels: RunnableConfig | None = None,
    calls: int = 0,
    usage: SummaryUsage | None = None,
) -> Step[Draft | Failure]:
    """The summary model's calls, chunk after chunk, each an update of the last.

    ``models`` shrinks as each fails for good: the one left first made the summary.
    ``calls`` and ``usage``: what was spent on this summary before (a failed compactor).
    """
    settings, memory = pipe.settings, pipe.memory
    config = settings.config
    text, shortened, over_trim, cut = previous, chunks.shortened, chunks.over_trim, False
    try:
        if not models:
            raise SummarizerError("no summarizer model: pass model= or fallback_model=")
        bound = [bind_summarizer(m, config, labels) for m in models]
        queue = list(chunks.chunks)
        overflows, made = 0, 0
        while queue:
            chunk = queue.pop(0)
            template = config.update_prompt if text is not None else config.summary_prompt
            transcript = render_transcript(chunk)
            prompt = add_instructions(fill_prompt(template, transcript, text), instruction)
            estimate = settings.counter([HumanMessage(content=prompt)])
            calls, made = calls + 1, made + 1
            try:
                reply = yield from summary_call(
                    models, bound, prompt, estimate, config.summary_timeout
                )
            except PromptTooLong as exc:
                usage = add_usage(usage, exc.usage)
                overflows += 1
                if overflows > _MAX_OVERFLOW_RETRIES:
                    raise
                memory.learn_summarizer_overflow(
                    exc.overflow, exc.estimate, config.max_summary_tokens
                )
                rest = [*chunk, *(m for c in queue for m in c)]
                left = max(config.max_summary_chunks - made + 1, 1)
                replanned = plan_summary_chunks(pipe, rest, text, left, instruction)
                queue = list(replanned.chunks)
                shortened += replanned.shortened
                over_trim = replanned.over_trim
                continue
            usage = add_usage(usage, reply.usage)
            tidied = tidy_reply(reply.text, prompt_tags(template), reply.stopped_at_cap)
            reason = (
                not_a_summary(tidied, f"{text or ''}\n{transcript}")
                if config.summary_check == "basic"
                else None
            )
            if reason is not None:
                raise SummarizerError(f"the reply is not a summary ({reason})")
            memory.learn_summarizer_usage(reply.estimate, reply.input_tokens)
            text = cap_summary(tidied, config.max_summary_tokens, settings.counter)
            cut = cut or reply.stopped_at_cap or len(text) < len(tidied)
    except SummarizerError as exc:
        if isinstance(exc, SummaryCallFailed):
            usage = add_usage(usage, exc.usage)
        return Failure(str(exc), calls, usage)
    assert text is not None
    return Draft(text, model_name(models[0]), calls, shortened, over_trim, cut, usage)


def draft_by_conversation(
    pipe: Pipeline,
    models: list[BaseChatModel],
    request: ConversationRequest,
    source: str,
    labels: RunnableConfig | None = None,
) -> Step[Draft | Failure]:
    """One conversation summary call (DESIGN 6.15): the agent's own input and tools, then the
    request; its reply checked and capped as any summary. ``source``: the text the reply must
    be about (the previous summary and the evicted messages' transcript).

    Raises:
        PromptTooLong: the model refused the input as too long (the caller falls back to
            the transcript).
    """
    settings = pipe.settings
    config = settings.config
    try:
        bound = [
            bind_summarizer(m, config, labels, settings.tools, settings.model_settings)
            for m in models
        ]
        reply = yield from summary_call_messages(
            models, bound, request.messages, request.estimate, config.summary_timeout
        )
        tidied = tidy_reply(reply.text, prompt_tags(request.instruction), reply.stopped_at_cap)
        reason = not_a_summary(tidied, source) if config.summary_check == "basic" else None
        if reason is not None:
            raise SummaryCallFailed(f"the reply is not a summary ({reason})", reply.usage)
    except SummaryCallFailed as exc:
        return Failure(str(exc), 1, exc.usage)
    text = cap_summary(tidied, config.max_summary_tokens, settings.counter)
    cut = reply.stopped_at_cap or len(text) < len(tidied)
    return Draft(text, model_name(models[0]), 1, summary_cut=cut, usage=reply.usage)


def plan_summary_chunks(
    pipe: Pipeline,
    messages: Sequence[BaseMessage],
    previous: str | None,
    max_chunks: int,
    instruction: str | None = None,
) -> ChunkPlan:
    """Chunks within the configured trim and what the summarizer's window is known to take,
    each message sized by its transcript: what the summarizer reads, not what the model paid."""
    settings = pipe.settings
    config = settings.config
    overhead = settings.counter([HumanMessage(content=config.update_prompt)])
    if previous:
        overhead += settings.counter([HumanMessage(content=previous)])
    if instruction:
        overhead += settings.counter([HumanMessage(content=add_instructions("", instruction))])
    trim = pipe.memory.transcript_capacity(
        config.trim_tokens_to_summarize, overhead, config.max_summary_tokens
    )
    # Without a trim one call takes everything: there is nothing to size.
    tokens = transcript_tokens(messages, settings.counter) if trim is not None else []
    return plan_chunks(messages, tokens, trim, max_chunks, settings.counter)


def draft_summary(pipe: Pipeline, measured: Measured, plan: Partition) -> Step[Draft | Failure]:
    """Make the summary of ``plan``'s evicted messages: the compactor or the summary model,
    then the fallback model once (DESIGN 6.5), after the ``context_compacting`` event."""
    settings = pipe.settings
    config = settings.config
    evicted = [measured.messages[i] for i in plan.evicted]
    source_tokens = sum(map(measured.scan.token, plan.evicted))  # what the model paid for them
    previous = plan.previous.summary if plan.previous else None
    instruction = join_instructions(config.summary_instructions, measured.control.instruction)
    compactor = settings.compactor
    # The compactor is used instead of the summary model; the fallback model backs it up.
    models = distinct_models(
        *(
            (settings.fallback_model,)
            if compactor
            else (settings.summarizer, settings.fallback_model)
        )
    )
    # The conversation mode needs the agent's model, and not a custom compactor (its own).
    request = (
        conversation_request(pipe, measured, plan, instruction)
        if config.summary_context == "conversation" and compactor is None and models
        else None
    )
    chunks = (
        ChunkPlan((tuple(evicted),), 0, 0)
        if request is not None
        else plan_summary_chunks(pipe, evicted, previous, config.max_summary_chunks, instruction)
    )
    version = yield from perform(next_version(measured.thread_id, settings.namespace))
    labels = summary_labels(measured.thread_id, settings.namespace, version)
    emit(
        {
            "type": "context_compacting",
            "thread_id": measured.thread_id,
            "namespace": settings.namespace,
            "messages": len(evicted),
            "source_tokens": source_tokens,
            "chunks": 1 if compactor else len(chunks.chunks),
            "tokens_before": measured.tokens_before,
        }
    )
    if request is not None:
        source = f"{previous or ''}\n{render_transcript(evicted)}"
        try:
            made = yield from draft_by_conversation(pipe, models, request, source, labels)
        except PromptTooLong as exc:  # over the window after all: the transcript, this once
            chunks = plan_summary_chunks(
                pipe, evicted, previous, config.max_summary_chunks, instruction
            )
            made = yield from draft_by_models(
                pipe, models, chunks, previous, instruction, labels, 1, exc.usage
            )
    elif compactor is None:
        made = yield from draft_by_models(pipe, models, chunks, previous, instruction, labels)
    else:
        made = yield from draft_by_compactor(
            pipe, compactor, evicted, previous, instruction, labels
        )
        if isinstance(made, Failure) and models:  # the fallback model, once
            first = made
            made = yield from draft_by_models(
                pipe, models, chunks, previous, instruction, labels, first.calls, first.usage
            )
            if isinstance(made, Failure):
                made = replace(made, error=f"{first.error}; then {made.error}")
    if isinstance(made, Failure) or not config.integrity.enabled:
        return made
    # The check and ledger of DESIGN 6.13, whoever wrote the text; a repair uses the model
    # that worked (``models`` lost the ones that failed for good).
    checked = yield from verified(pipe, measured, plan, made.text, models, labels)
    return replace(
        made,
        text=checked.text,
        calls=made.calls + checked.calls,
        usage=add_usage(made.usage, checked.usage) if checked.calls else made.usage,
        integrity=checked.report,
        integrity_items=checked.items,
    )
