"""What survives a compaction (DESIGN 6.13): identifiers and artifacts in the model input.

    python benchmarks/integrity.py                       # the fake summarizer, 5 conversations
    python benchmarks/integrity.py --summarizer both     # and the local model (see below)
    python benchmarks/integrity.py --quick               # a smoke run (short conversations)
    python benchmarks/integrity.py --json out.json       # the figures and every compaction

Workloads (``tests/traces.py``; ``--runs N`` conversations each, default 5):

- ``tau``: tau-bench airline runs joined 12 at a time by ``concatenate_sessions`` (one
  customer after another in one thread, about 350 messages, 35k tokens): trigger 12,000 tokens.
- ``swe``: SWE-Gym OpenHands runs, one thread each (all 5 at most; 23 to 61 messages, 9k to
  21k tokens, tool results of thousands of tokens): trigger 6,000 tokens.
- ``locomo``: LoCoMo dialogues, one thread each (370 to 690 short turns, 15k to 29k tokens):
  trigger 8,000 tokens.

The triggers are ``compare.py``'s; each is a third to a half of a conversation or less, so a
thread compacts several times: a first summary, then updates that merge the previous
summary's trail, which is what the ledger must carry across. Every workload keeps 10
messages (not ``compare.py``'s 20), so that the covered part, not the kept one, is the bulk of
what the input must hold; ``headroom_ratio`` stays at its default 0.75. Each conversation is
replayed call by call (``model_call_points``) through ``create_compaction_graph`` with a SQLite
store in a temporary folder, ``integrity.ledger_tokens`` 400 (a tenth of the smallest trigger,
the package's other bound, is more at these triggers) and the approximate token counter.

After each call whose report says ``summarized``, the covered messages are the history before the
summary's boundary (``report.summarized_messages`` after the leading system messages). Their
trail is computed afresh with ``summary.integrity.trail_of`` (excluding the system prompt's and
the summary prompts' own identifiers, as ``summary/verify.py`` does), not read from the row, so a
merge that loses an item shows. It is looked for in the text of the model input
(``llm_input_messages``: every message's text, tool-call arguments included; folded with
``fold_text``, whitespace collapsed as a ledger line collapses it; ``summary.ledger.holds``):

- ``ids``: share of the covered identifiers present; ``user``: of those from user messages;
- ``art``: share of the covered artifacts that changed something or failed whose target is
  present (a target cut with "…" by its prefix; artifacts without a target are left out);
- each ``without`` the ledger (the summary message's ledger cut off with ``split_ledger``) and
  ``with`` it; pooled over the compactions (present / total);
- ``ids, none dropped``: ``ids`` with the ledger over the compactions whose ledger dropped nothing
  (``report.integrity.dropped == 0``): the aim of 0.9 holds where everything fits the budget;
- ``ledger tok``: the ledger's tokens (the summary message counted with and without it),
  median; ``% input``: as a share of the model input's tokens at the compaction (the smallest
  input the summary sees), median and max; ``% all``: median share over every call whose input
  holds a ledger (the compaction and the calls that reuse its summary);
- ``ms/200``: the check's own work per summary, ``trail_of`` (``find``) + ``check_summary``
  (``check``: what ``verified`` adds besides a repair call) on 200 covered messages of the
  workload (the first 200 non-system messages of its conversations, run after run, repeated
  when short), against the fake's summary, median of 20 runs each (3 with ``--quick``).

Rescued messages (the latest user request kept verbatim before the boundary) are covered here
but not in the package's own trail, which takes them when they are folded in later; so the
package's ``report.integrity.identifiers`` equals ``ids``' total only at a compaction without
rescued messages, up to the extraction's context: a capitalized word read as a name in one
window is not one when the whole prefix also writes it in lower case, so the package's merged
trail may hold a few more. ``package_trail_smaller`` in the JSON counts the compactions without
rescued messages where the package's trail holds fewer (a merge that lost items, or the
trail's 1,000-identifier bound).

Summarizers (``--summarizer fake|local|both``):

- ``fake``: answers at once with a vague three-section summary naming none of the identifiers:
  a dozen plain lowercase words of the transcript (so the not-a-summary check passes) and no
  identifier. Everything the input holds of the covered part is then there by the ledger or
  because a kept message repeats it: the ledger's own worth.
- ``local``: the demo's SmolLM2-135M-Instruct through its OpenAI-compatible server
  (``COMPACTION_LOCAL_MODEL_URL``), with the demo's short prompts, a 128-token summary cap and
  1,500 tokens per summary call (its context is 4,096 tokens). About 20 s a call on 2 cores,
  so it replays ``--local-runs`` conversations (default 1) and stops each after
  ``--local-compactions`` compactions (default 2); its ``% all`` then counts those calls only
  (no call reuses their summaries). A reply the not-a-summary check rejects is a failed call
  (``fail``; three in a row open the circuit breaker for 10 messages), as in production::

    source scripts/_local_model.sh && start_local_model .venv/bin/python
    python benchmarks/integrity.py --summarizer both
    stop_local_model

Aims at ``ledger_tokens`` 400: every user identifier and every writing or failing artifact
present (1.0), all covered identifiers at least 0.9 where they fit the budget, the ledger under
10% of the model input, under 5 ms added per summary of 200 covered messages.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from _small_model import SMALL_MODEL_SUMMARY_PROMPT, SMALL_MODEL_UPDATE_PROMPT
from traces import (
    concatenate_sessions,
    load_locomo,
    load_swe_gym,
    load_tau_bench_airline,
    model_call_points,
)

from langgraph_compaction import CompactionConfig, SummaryStore, create_compaction_graph
from langgraph_compaction.content.identifiers import identifiers_in
from langgraph_compaction.content.writing_systems import fold_text
from langgraph_compaction.pipeline.report import CompactionReport
from langgraph_compaction.summary.integrity import Trail, check_summary, trail_of
from langgraph_compaction.summary.ledger import LEDGER_HEADING, holds, split_ledger
from langgraph_compaction.summary.verify import not_identifiers

LEDGER_TOKENS = 400
KEEP = 10
TAU_RUNS_PER_THREAD = 12
WINDOW = 200
LOCAL_SUMMARY_TOKENS = 128
LOCAL_TRIM_TOKENS = 1500
_SPACE = re.compile(r"\s+")


def _progress(text: str) -> None:
    print(f"[integrity] {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Workload:
    name: str
    conversations: list[list[BaseMessage]]
    trigger: int
    window: list[BaseMessage]
    """A leading system message (when the workload has one), then 200 messages to check."""


def _window(conversations: Sequence[Sequence[BaseMessage]]) -> list[BaseMessage]:
    head = [m for m in conversations[0][:1] if isinstance(m, SystemMessage)]
    body = [m for c in conversations for m in c if not isinstance(m, SystemMessage)]
    return head + (body * (WINDOW // len(body) + 1))[:WINDOW]


def load_workloads(runs: int, quick: bool) -> list[Workload]:
    """``runs`` conversations of each workload; ``quick``: one short one each."""
    tau_runs, swe, locomo = load_tau_bench_airline(), load_swe_gym(), load_locomo()
    per = 5 if quick else TAU_RUNS_PER_THREAD
    tau = [concatenate_sessions(tau_runs[k * per :], per) for k in range(runs)]
    swe_threads = swe[: min(runs, len(swe))]
    locomo_threads = [c[:250] if quick else c for c in locomo[: min(runs, len(locomo))]]
    return [
        Workload("tau", tau, 12_000, _window([concatenate_sessions(tau_runs, 10)])),
        Workload("swe", swe_threads, 6_000, _window(swe)),
        Workload("locomo", locomo_threads, 8_000, _window(locomo[:1])),
    ]


# --------------------------------------------------------------------------- summarizers


class VagueSummarizer(BaseChatModel):
    """A summary that names none of the identifiers: plain lowercase words of the transcript."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "vague-summarizer"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage(vague(messages[-1].text)))])


def vague(prompt: str) -> str:
    """The fake's reply to ``prompt``: its transcript's last dozen plain words, no identifier."""
    transcript = prompt.rsplit("<conversation>", 1)[-1].split("</conversation>", 1)[0]
    words: list[str] = []
    for word in reversed(transcript.split()):
        plain = word.isascii() and word.isalpha() and word.islower() and len(word) >= 6
        if plain and word not in words and not identifiers_in(f"about the {word} here"):
            words.append(word)
        if len(words) == 12:
            break
    topics = ", ".join(reversed(words)) or "several things"
    return (
        "## Goal\nthe user asked the assistant for help with a few requests.\n"
        f"## Progress\nthey went over {topics}.\n"
        "## Next Steps\ncarry on with whatever is still open."
    )


def local_model() -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    url = os.environ["COMPACTION_LOCAL_MODEL_URL"]
    return ChatOpenAI(base_url=url, api_key="local", model="smollm2", temperature=0, timeout=300)


def settings(workload: Workload, summarizer: str) -> CompactionConfig:
    fields: dict[str, Any] = {
        "trigger": {"type": "tokens", "value": workload.trigger},
        "keep": {"type": "messages", "value": KEEP},
        "integrity": {"ledger_tokens": LEDGER_TOKENS},
    }
    if summarizer == "local":
        fields |= {
            "summary_prompt": SMALL_MODEL_SUMMARY_PROMPT,
            "update_prompt": SMALL_MODEL_UPDATE_PROMPT,
            "max_summary_tokens": LOCAL_SUMMARY_TOKENS,
            "trim_tokens_to_summarize": LOCAL_TRIM_TOKENS,
            "summary_timeout": 600.0,
            "parameters": {"extra_body": {"max_tokens": LOCAL_SUMMARY_TOKENS}},
        }
    return CompactionConfig(**fields)


# --------------------------------------------------------------------------- measures


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif value is not None:
        yield str(value)


def input_text(messages: Sequence[BaseMessage], ledger: bool) -> str:
    """The model input as one folded text, whitespace collapsed; ``ledger`` False cuts it off."""
    parts: list[str] = []
    for message in messages:
        parts.append(message.text if ledger else split_ledger(message.text)[0])
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                parts.extend(_strings(call["args"]))
    return _SPACE.sub(" ", fold_text("\n".join(parts)))


def _present(text: str, needle: str) -> bool:
    if needle.endswith("…"):  # a target cut by the artifact's 160-character bound
        return _SPACE.sub(" ", fold_text(needle[:-1])).strip() in text
    return holds(text, _SPACE.sub(" ", fold_text(needle)).strip())


@dataclass(frozen=True)
class Count:
    total: int
    without: int
    with_ledger: int


def _count(needles: Sequence[str], without: str, with_ledger: str) -> Count:
    return Count(
        len(needles),
        sum(_present(without, n) for n in needles),
        sum(_present(with_ledger, n) for n in needles),
    )


@dataclass(frozen=True)
class Compaction:
    """What the model input held of the covered part after one compaction."""

    conversation: int
    call: int
    covered: int
    rescued: int
    ids: Count
    user: Count
    artifacts: Count
    dropped: int
    appended: int
    ledger_tokens: int
    input_tokens: int
    reported_identifiers: int
    """``report.integrity.identifiers`` (the package's merged trail), beside ``ids.total``."""


def ledger_tokens(messages: Sequence[BaseMessage]) -> int:
    for message in messages:
        if LEDGER_HEADING in message.text:
            prose = split_ledger(message.text)[0]
            with_ledger = count_tokens_approximately([HumanMessage(message.text)])
            return with_ledger - count_tokens_approximately([HumanMessage(prose)])
    return 0


def measure(
    history: Sequence[BaseMessage],
    lead: int,
    exclude: frozenset[str],
    report: CompactionReport,
    model_input: Sequence[BaseMessage],
    where: tuple[int, int],
) -> Compaction:
    trail = trail_of(history, range(lead, lead + report.summarized_messages), exclude)
    without, with_ledger = input_text(model_input, False), input_text(model_input, True)
    ids = [i.text for i in trail.identifiers]
    users = [i.text for i in trail.identifiers if i.source == "user"]
    artifacts = [
        a.target for a in trail.artifacts if a.target and (a.changes or a.outcome == "error")
    ]
    integrity = report.integrity
    return Compaction(
        conversation=where[0],
        call=where[1],
        covered=report.summarized_messages,
        rescued=report.rescued_count,
        ids=_count(ids, without, with_ledger),
        user=_count(users, without, with_ledger),
        artifacts=_count(artifacts, without, with_ledger),
        dropped=integrity.dropped if integrity else -1,
        appended=integrity.appended if integrity else -1,
        ledger_tokens=ledger_tokens(model_input),
        input_tokens=count_tokens_approximately(model_input),
        reported_identifiers=integrity.identifiers if integrity else -1,
    )


@dataclass
class Replay:
    compactions: list[Compaction] = field(default_factory=list)
    shares: list[float] = field(default_factory=list)
    """The ledger's share of the input on every call whose input holds one."""
    calls: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def replay(
    workload: Workload,
    summarizer: str,
    make_model: Callable[[], BaseChatModel],
    most: int | None,
) -> Replay:
    """Every conversation call by call; a measure after each new summary (``most`` per one)."""
    config = settings(workload, summarizer)
    result = Replay()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="compaction-integrity-") as tmp:
        store = SummaryStore(f"sqlite:///{Path(tmp) / 'summaries.db'}")
        try:
            for c, history in enumerate(workload.conversations):
                graph = create_compaction_graph(
                    config,
                    model=make_model(),
                    store=store,
                    token_counter=count_tokens_approximately,
                )
                thread: Any = {"configurable": {"thread_id": f"{workload.name}-{c}"}}
                lead = next(
                    (i for i, m in enumerate(history) if not isinstance(m, SystemMessage)), 0
                )
                exclude = not_identifiers(config, history[:lead])
                made = 0
                for call, end in enumerate(model_call_points(history)):
                    state: Any = {"messages": history[:end]}
                    output = graph.invoke(state, thread)
                    report: CompactionReport = output["compaction"]
                    result.calls += 1
                    if report.action == "failed":
                        result.failed += 1
                        result.errors.append(str(report.error))
                    model_input = output["llm_input_messages"]
                    ledger = ledger_tokens(model_input)
                    if ledger:
                        result.shares.append(ledger / count_tokens_approximately(model_input))
                    if report.action != "summarized":
                        continue
                    result.compactions.append(
                        measure(history, lead, exclude, report, model_input, (c, call))
                    )
                    made += 1
                    if most is not None and made >= most:
                        break
                _progress(f"{summarizer} {workload.name} #{c}: {made} compactions")
        finally:
            store.close()
    result.seconds = time.perf_counter() - began
    return result


@dataclass(frozen=True)
class Timing:
    find: float
    check: float
    total: float


def check_ms(workload: Workload, repeats: int) -> Timing:
    """Median ms of ``trail_of`` and ``check_summary`` on the workload's 200-message window."""
    window = workload.window
    lead = len(window) - WINDOW
    exclude = not_identifiers(CompactionConfig(), window[:lead])
    summary = vague("<conversation>\n" + "\n".join(m.text for m in window) + "\n</conversation>")
    base = count_tokens_approximately([HumanMessage("")])

    def tokens(line: str) -> int:
        return max(count_tokens_approximately([HumanMessage(line)]) - base, 1)

    finds: list[float] = []
    checks: list[float] = []
    totals: list[float] = []
    for _ in range(repeats):
        started = time.perf_counter_ns()
        trail: Trail = trail_of(window, range(lead, len(window)), exclude)
        found = time.perf_counter_ns()
        check_summary(summary, trail, LEDGER_TOKENS, tokens)
        done = time.perf_counter_ns()
        finds.append((found - started) / 1e6)
        checks.append((done - found) / 1e6)
        totals.append((done - started) / 1e6)
    return Timing(*(statistics.median(t) for t in (finds, checks, totals)))


# --------------------------------------------------------------------------- report


def _share(counts: Sequence[Count], ledger: bool) -> float | None:
    total = sum(c.total for c in counts)
    present = sum(c.with_ledger if ledger else c.without for c in counts)
    return present / total if total else None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def figures(result: Replay, timing: Timing) -> dict[str, Any]:
    done = result.compactions
    fits = [c.ids for c in done if c.dropped == 0]
    shares = [c.ledger_tokens / c.input_tokens for c in done if c.input_tokens]
    out: dict[str, Any] = {
        "compactions": len(done),
        "failed_calls": result.failed,
        "calls": result.calls,
        "seconds": round(result.seconds, 1),
        "ms_find": round(timing.find, 2),
        "ms_check": round(timing.check, 2),
        "ms_per_200": round(timing.total, 2),
        "none_dropped": len(fits),
        "ids_none_dropped": _share(fits, True),
        "ledger_tokens_median": _median([c.ledger_tokens for c in done]),
        "ledger_share_median": _median(shares),
        "ledger_share_max": max(shares, default=None),
        "ledger_share_all_calls_median": _median(result.shares),
        "package_trail_smaller": sum(
            c.reported_identifiers < c.ids.total for c in done if c.rescued == 0
        ),
    }
    for name in ("ids", "user", "artifacts"):
        counts = [getattr(c, name) for c in done]
        out[f"{name}_without"] = _share(counts, False)
        out[f"{name}_with"] = _share(counts, True)
        out[f"{name}_total"] = sum(c.total for c in counts)
        out[f"{name}_min_with"] = min(
            (c.with_ledger / c.total for c in counts if c.total), default=None
        )
    return out


def _cell(value: float | None, width: int = 6) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.2f}"


def _percent(value: float | None, width: int) -> str:
    return f"{'-' if value is None else f'{value:.1%}':>{width}}"


def table(title: str, rows: dict[str, dict[str, Any]]) -> str:
    lines = [
        title,
        f"{'workload':<8} {'comp':>4} {'fail':>4}  {'ids w/o':>7} {'with':>5}  "
        f"{'user w/o':>8} {'with':>5}  {'art w/o':>7} {'with':>5}  {'ids, none dropped':>17}  "
        f"{'ledger tok':>10} {'% input':>7} {'max':>6} {'% all':>6}  "
        f"{'ms/200':>6} {'find':>6} {'check':>6}",
    ]
    for name, f in rows.items():
        fits = f"{_cell(f['ids_none_dropped'], 5)} ({f['none_dropped']})"
        tokens = f["ledger_tokens_median"]
        lines.append(
            f"{name:<8} {f['compactions']:>4} {f['failed_calls']:>4}  "
            f"{_cell(f['ids_without'], 7)} {_cell(f['ids_with'], 5)}  "
            f"{_cell(f['user_without'], 8)} {_cell(f['user_with'], 5)}  "
            f"{_cell(f['artifacts_without'], 7)} {_cell(f['artifacts_with'], 5)}  {fits:>17}  "
            f"{'-' if tokens is None else f'{tokens:.0f}':>10} "
            f"{_percent(f['ledger_share_median'], 7)} {_percent(f['ledger_share_max'], 6)} "
            f"{_percent(f['ledger_share_all_calls_median'], 6)}  "
            f"{f['ms_per_200']:>6.2f} {f['ms_find']:>6.2f} {f['ms_check']:>6.2f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--summarizer", choices=("fake", "local", "both"), default="fake")
    parser.add_argument("--runs", type=int, default=5, help="conversations per workload (fake)")
    parser.add_argument("--local-runs", type=int, default=1, help="conversations (local model)")
    parser.add_argument(
        "--local-compactions", type=int, default=2, help="compactions per conversation (local)"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: short conversations")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    kinds = ("fake", "local") if args.summarizer == "both" else (args.summarizer,)
    if "local" in kinds and not os.environ.get("COMPACTION_LOCAL_MODEL_URL"):
        parser.error("start the local model first (COMPACTION_LOCAL_MODEL_URL is not set)")
    repeats = 3 if args.quick else 20
    runs = {"fake": 1 if args.quick else args.runs, "local": args.local_runs}
    timed: dict[str, Timing] = {}
    report: dict[str, Any] = {"ledger_tokens": LEDGER_TOKENS, "keep": KEEP, "summarizers": {}}
    for kind in kinds:
        workloads = load_workloads(runs[kind], args.quick)
        make: Callable[[], BaseChatModel] = VagueSummarizer if kind == "fake" else local_model
        most = args.local_compactions if kind == "local" else None
        rows: dict[str, dict[str, Any]] = {}
        details: dict[str, list[dict[str, Any]]] = {}
        for workload in workloads:
            if workload.name not in timed:
                timed[workload.name] = check_ms(workload, repeats)
            _progress(f"{kind} {workload.name}: {len(workload.conversations)} conversations ...")
            result = replay(workload, kind, make, most)
            rows[workload.name] = figures(result, timed[workload.name])
            rows[workload.name]["trigger"] = workload.trigger
            rows[workload.name]["conversations"] = len(workload.conversations)
            rows[workload.name]["errors"] = result.errors[:5]
            details[workload.name] = [asdict(c) for c in result.compactions]
        title = {
            "fake": "fake summarizer (names no identifier)",
            "local": "local model (SmolLM2-135M-Instruct, llama.cpp server)",
        }[kind]
        print(table(f"{title}, ledger_tokens {LEDGER_TOKENS}, keep {KEEP} messages", rows))
        print(flush=True)
        report["summarizers"][kind] = {"workloads": rows, "compactions": details}
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        _progress(f"figures: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
