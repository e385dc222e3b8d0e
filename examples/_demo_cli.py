"""The demo's command line: its modes and options, checked before anything starts.

Standard library only, so ``scripts/demo`` can reject a typo with the system's ``python3``
before it creates a virtual environment or starts a model server. ``examples/agent_loop.py``
parses its own options with the same parser, so the two cannot disagree.

Run as a script (``python3 examples/_demo_cli.py ARGS...``) it prints the chosen mode, or the
help, and exits 0; a usage error is printed to stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "CHECKPOINT_FILE",
    "DATA_DIR",
    "MODES",
    "STORE_FILE",
    "agent_parser",
    "check_demo_args",
    "parse_agent_args",
]

PROG = "scripts/demo"
MODES = {
    "agent": "(the default) an agent with a tool loop replays a 36-turn conversation; each "
    "model call and compaction event is printed as it happens (examples/agent_loop.py, "
    "which takes the options below)",
    "notebook": "executes notebooks/demo.ipynb into notebooks/demo.out.ipynb, printing a line "
    "per model call as it runs; its table, plot and store rows are in the output notebook "
    "(files in demo-data/notebook/)",
    "quickstart": "the offline quickstart (examples/quickstart.py, no model)",
}
"""Every mode of ``scripts/demo`` and what it runs."""
DATA_DIR = Path(__file__).resolve().parents[1] / "demo-data"
"""Where the demo keeps its files: in the checkout, visible, ignored by git."""
STORE_FILE = "compaction.db"
CHECKPOINT_FILE = "checkpoints.db"


def _positive_int(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not a positive number of turns")
    return number


def agent_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The agent loop's options; ``prog`` names the command in the usage line."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="An agent with a real tool loop, compacted before every model call.",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DATA_DIR,
        metavar="DIR",
        help=f"where the two SQLite files go and stay: {STORE_FILE} (the summaries) and "
        f"{CHECKPOINT_FILE} (the conversation); default: demo-data/ in the checkout. "
        "A replay starts by deleting the earlier run's files there.",
    )
    parser.add_argument(
        "--turns",
        type=_positive_int,
        metavar="N",
        help="replay the first N turns (default: all 36)",
    )
    parser.add_argument(
        "--say",
        metavar="TEXT",
        help="continue the thread of an earlier run (in --data-dir) with this message",
    )
    parser.add_argument(
        "--store-url", metavar="URL", help="a SQLAlchemy URL for the summaries, e.g. PostgreSQL"
    )
    return parser


def parse_agent_args(
    argv: Sequence[str] | None, parser: argparse.ArgumentParser | None = None
) -> argparse.Namespace:
    """The agent loop's options, or a usage error (exit 2) that suggests the closest option."""
    parser = parser or agent_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        known = [o for action in parser._actions for o in action.option_strings]
        first = unknown[0]
        close = difflib.get_close_matches(first.split("=")[0], known, n=1)
        hint = f"; did you mean {close[0]}?" if close and first.startswith("-") else ""
        parser.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    if args.say and not (args.data_dir / CHECKPOINT_FILE).exists():
        parser.error(f"--say continues an earlier run, but {args.data_dir} holds none")
    return args


def demo_parser() -> argparse.ArgumentParser:
    """``scripts/demo``'s parser: its usage line and help name the script and list the modes."""
    modes = "\n".join(
        textwrap.fill(text, 92, initial_indent=f"  {name:<11} ", subsequent_indent=" " * 14)
        for name, text in MODES.items()
    )
    parser = agent_parser(PROG)
    parser.usage = f"{PROG} [{'|'.join(MODES)}] [options]"
    parser.description = (
        "Run the demo on the local model (started here, stopped on exit), or on a model over\n"
        "an OpenAI-compatible API when OPENAI_API_KEY or OPENAI_BASE_URL is set.\n\n"
        f"modes:\n{modes}"
    )
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "The options belong to the agent mode; the other modes take none."
    return parser


def check_demo_args(argv: Sequence[str]) -> str:
    """The mode ``argv`` asks for, once it and its options are valid; else exit 2."""
    parser = demo_parser()
    if not argv or argv[0].startswith("-"):
        mode, rest = "agent", list(argv)
    else:
        mode, rest = argv[0], list(argv[1:])
    if mode not in MODES:
        close = difflib.get_close_matches(mode, list(MODES), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        parser.error(f"unknown mode {mode!r}; {hint}the modes are {', '.join(MODES)}")
    if mode == "agent":
        parse_agent_args(rest, parser)
    elif rest and set(rest) & {"-h", "--help"}:
        parser.print_help()
        parser.exit()
    elif rest:
        parser.error(f"the {mode} mode takes no arguments, got: {' '.join(rest)}")
    return mode


if __name__ == "__main__":
    print(check_demo_args(sys.argv[1:]))
