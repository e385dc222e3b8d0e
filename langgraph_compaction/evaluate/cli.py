"""``python -m langgraph_compaction.evaluate``: the command line.

Everything is read and checked before the first call is replayed (the conversations, the
configuration, the prices, the output paths, and each model with one call), so bad input ends
the command at once with exit status 2 and one line naming the file line, thread or model at
fault. The outputs are written only once the whole run succeeded, each to a temporary file
renamed into place: nothing is ever half written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.errors import CompactionConfigError
from langgraph_compaction.evaluate.conversations import read_checkpointer, read_file
from langgraph_compaction.evaluate.models import check_reachable, load_model
from langgraph_compaction.evaluate.page import render_page
from langgraph_compaction.evaluate.prices import price_book, read_prices
from langgraph_compaction.evaluate.records import EvaluationInputError, as_json
from langgraph_compaction.evaluate.run import Plan, evaluate
from langgraph_compaction.evaluate.table import render_table

__all__ = ["main", "parser"]

EXIT_BAD_INPUT = 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m langgraph_compaction.evaluate",
        description=(
            "Replay your conversations through a compaction configuration: tokens sent with "
            "and without it, the bill under prompt caching, what survives each summary, and "
            "(with --judge) probe questions answered with and without compaction."
        ),
    )
    p.add_argument(
        "file",
        nargs="?",
        type=Path,
        help="conversations: JSON Lines (one conversation a line) or one JSON list, as "
        "LangChain message dicts or OpenAI chat messages",
    )
    p.add_argument(
        "--checkpointer",
        metavar="URL",
        help="read threads from a LangGraph "
        "checkpointer instead: sqlite:///agent.db or postgresql://...",
    )
    p.add_argument(
        "--thread",
        action="append",
        default=[],
        metavar="T",
        help="a thread of --checkpointer (repeat for more)",
    )
    p.add_argument(
        "--config",
        type=Path,
        metavar="YAML",
        help="CompactionConfig YAML (its `summarization:` section, or the whole file)",
    )
    p.add_argument(
        "--model",
        metavar="PROVIDER:MODEL",
        help="the summarizer (default: the config's model, else the local model)",
    )
    p.add_argument(
        "--agent-model",
        metavar="PROVIDER:MODEL",
        help="the agent's model: answers the probes, and is the fallback summarizer",
    )
    p.add_argument(
        "--judge",
        metavar="PROVIDER:MODEL",
        help="writes and grades probe questions on each compaction (needs --agent-model)",
    )
    p.add_argument(
        "--store", metavar="URL", help="summary store (default: a temporary SQLite file)"
    )
    p.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="prices per million tokens (YAML or JSON) instead of genai-prices' table",
    )
    p.add_argument(
        "--price-model",
        metavar="PROVIDER:MODEL",
        help="price the agent's calls as this model (default: --agent-model when "
        "priced, else anthropic:claude-sonnet-4-5)",
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="write every figure as JSON")
    p.add_argument("--html", type=Path, metavar="PATH", help="write one static HTML page")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _plan(args: argparse.Namespace) -> Plan:
    """Read and check everything the run needs; raises EvaluationInputError on bad input."""
    if (args.file is None) == (args.checkpointer is None):
        raise EvaluationInputError("give a conversations FILE or --checkpointer URL --thread T")
    if args.checkpointer is not None and not args.thread:
        raise EvaluationInputError(f"--checkpointer {args.checkpointer}: name a --thread")
    if args.thread and args.checkpointer is None:
        raise EvaluationInputError("--thread needs --checkpointer URL")
    if args.judge and not args.agent_model:
        raise EvaluationInputError(
            f"--judge {args.judge}: needs --agent-model (the model that answers the probes)"
        )
    for path in (args.json, args.html):
        if path is not None and not path.resolve().parent.is_dir():
            raise EvaluationInputError(f"{path}: its folder does not exist")
    try:
        config = CompactionConfig.from_yaml(args.config) if args.config else CompactionConfig()
    except CompactionConfigError as error:
        raise EvaluationInputError(f"--config {error}") from None
    if args.file is not None:
        conversations = read_file(args.file)
    else:
        conversations = read_checkpointer(args.checkpointer, args.thread)
    summarizer = load_model(args.model or config.model, "--model")
    agent = load_model(args.agent_model, "--agent-model") if args.agent_model else None
    judge = load_model(args.judge, "--judge") if args.judge else None
    if args.prices is not None:
        prices = read_prices(args.prices)
    else:
        prices = price_book(args.price_model, args.agent_model, summarizer.spec)
    for named in (summarizer, agent, judge):
        if named is not None:
            check_reachable(named)
    return Plan(conversations, config, summarizer, prices, agent, judge, args.store)


def _write_all(outputs: Sequence[tuple[Path, str]]) -> None:
    """Write each text beside its path first, then rename them all into place."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in outputs:
            handle, temporary = tempfile.mkstemp(dir=path.resolve().parent, prefix=f".{path.name}.")
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
            staged.append((temporary, path))
        for temporary, path in staged:
            os.replace(temporary, path)
    finally:
        for temporary, _ in staged:
            if os.path.exists(temporary):
                os.unlink(temporary)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        plan = _plan(args)
    except EvaluationInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    evaluation = evaluate(plan, progress=not args.quiet)
    outputs: list[tuple[Path, str]] = []
    if args.json is not None:
        text = json.dumps(as_json(evaluation), indent=2, ensure_ascii=False)
        # A lone surrogate (from a tool result) becomes its JSON escape, \ud800: valid UTF-8.
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
        outputs.append((args.json, text + "\n"))
    if args.html is not None:
        outputs.append((args.html, render_page(evaluation)))
    _write_all(outputs)
    print(render_table(evaluation).encode("utf-8", "replace").decode("utf-8"))
    unprobed = [f"{r.name} {why}" for r in evaluation.results for why in r.unprobed]
    if unprobed:
        print(f"No probes for {len(unprobed)} compactions (the judge failed): {unprobed[0][:200]}")
    return 0
