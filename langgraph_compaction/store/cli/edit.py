"""The store CLI's writing verbs: ``edit`` and ``revoke`` a thread's summary (DESIGN 6.11).

``edit --url U --thread T [--namespace N] (--text S | --file F)`` stores the text as a new
version of the thread's newest summary in use (``--file -`` reads standard input);
``revoke --url U --thread T [--namespace N] [--version N]`` withdraws that version (default:
the newest in use) and every later one. Each prints one line saying what it did. Input the
store refuses (no summary to edit, an unknown version, blank text, a file that cannot be
read) exits with status 2 and a one-line ``error:``; a store that cannot be reached exits 1,
as every verb does. ``store.cli.inspect.main`` parses the arguments and checks that the store exists
before calling :func:`run_edit_command`, so neither verb ever creates a database.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store.cli.render import wrap
from langgraph_compaction.store.db.engine import mask_url
from langgraph_compaction.store.summary_store import SummaryStore

__all__ = ["EDIT_COMMANDS", "add_edit_commands", "run_edit_command"]

EDIT_COMMANDS = ("edit", "revoke")
"""The verbs of this module."""

_REFUSED = 2
"""Exit status for input the store refused (argparse's, for a usage error)."""


def _version(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a version number (1, 2, ...)")
    return int(value)


def add_edit_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``edit`` and ``revoke`` to the CLI's sub-commands."""
    edit = commands.add_parser(
        "edit", help="store a text as a new version of a thread's newest summary"
    )
    edit.add_argument("--url", required=True)
    edit.add_argument("--thread", required=True, help="the thread id")
    edit.add_argument("--namespace", default="default", help="default: %(default)s")
    text = edit.add_mutually_exclusive_group(required=True)
    text.add_argument("--text", help="the summary's new text")
    text.add_argument("--file", help="a UTF-8 file holding the new text; - reads standard input")
    revoke = commands.add_parser(
        "revoke", help="withdraw a summary version and every later one from use"
    )
    revoke.add_argument("--url", required=True)
    revoke.add_argument("--thread", required=True, help="the thread id")
    revoke.add_argument("--namespace", default="default", help="default: %(default)s")
    revoke.add_argument(
        "--version", type=_version, help="the version to revoke; default: the newest in use"
    )


def run_edit_command(args: argparse.Namespace) -> int:
    """Run ``edit`` or ``revoke``; print what it did, or one ``error:`` line. Exit status."""
    where = mask_url(args.url)
    try:
        with SummaryStore(args.url) as store:
            said = _edit(store, args) if args.command == "edit" else _revoke(store, args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return _REFUSED
    except SummaryStoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(wrap(f"{where}: {said}")))
    return 0


def _scope(args: argparse.Namespace) -> str:
    return f"thread {args.thread} [{args.namespace}]"


def _edit(store: SummaryStore, args: argparse.Namespace) -> str:
    text = args.text if args.file is None else _read(args.file)
    row = store.edit_summary(args.thread, text, namespace=args.namespace)
    stored = {r.id: r for r in store.list_summaries(args.thread, args.namespace)}
    base = stored.get(row.parent_id or "")  # None when retention trimmed it
    of = "" if base is None else f" of v{base.version}"
    return (
        f"{_scope(args)}: stored v{row.version}, an edit{of} covering "
        f"{row.covered_messages} message(s), about {row.summary_tokens} token(s); later "
        "compaction calls use it"
    )


def _read(path: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"cannot read --file {path}: {reason}") from exc


def _revoke(store: SummaryStore, args: argparse.Namespace) -> str:
    version = args.version
    if version is None:  # say which one; revoke_summary refuses when there is none
        in_use = store.latest_summaries(args.thread, args.namespace, limit=1)
        version = in_use[0].version if in_use else None
    count = store.revoke_summary(args.thread, namespace=args.namespace, version=version)
    later = f" and {count - 1} later version(s)" if count > 1 else ""
    newest = store.latest_summaries(args.thread, args.namespace, limit=1)
    then = f"v{newest[0].version} is now the newest in use" if newest else "no summary is in use"
    return (
        f"{_scope(args)}: revoked v{version}{later}; {then}, and the next compaction call "
        "over the trigger makes a new summary"
    )
