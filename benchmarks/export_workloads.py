"""Write the shared workloads as a file ``python -m langgraph_compaction.evaluate`` reads.

    python benchmarks/export_workloads.py tau OUT.jsonl [--runs N] [--first K]
    python benchmarks/export_workloads.py swe OUT.jsonl [--runs N]
    python benchmarks/export_workloads.py locomo OUT.jsonl [--runs N] [--sessions S]

One conversation a line, as LangChain message dicts (``messages_to_dict``). ``tau``: the first
``--first`` tau-bench airline runs joined into one session (as ``benchmarks/compare.py`` does),
``--runs`` such sessions; ``swe``: the first ``--runs`` SWE-Gym runs; ``locomo``: the first
``--runs`` LoCoMo dialogues cut to their first ``--sessions`` sessions. The data comes from
``../shared/data`` (``tests/traces.py``) and stays out of the package: write the file outside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from langchain_core.messages import BaseMessage, messages_to_dict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from traces import (  # noqa: E402
    concatenate_sessions,
    load_locomo,
    load_swe_gym,
    load_tau_bench_airline,
)


def workload(name: str, runs: int, first: int, sessions: int) -> list[list[BaseMessage]]:
    if name == "tau":
        tau = load_tau_bench_airline()
        return [concatenate_sessions(tau[k * first :], first) for k in range(runs)]
    if name == "swe":
        return load_swe_gym()[:runs]
    dialogues = load_locomo()[:runs]
    return [
        [m for m in dialogue if m.response_metadata.get("session", 0) <= sessions]
        for dialogue in dialogues
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", choices=("tau", "swe", "locomo"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=1, help="conversations to write")
    parser.add_argument("--first", type=int, default=1, help="tau: runs joined per session")
    parser.add_argument("--sessions", type=int, default=2, help="locomo: sessions kept")
    args = parser.parse_args()
    conversations = workload(args.workload, args.runs, args.first, args.sessions)
    with args.out.open("w", encoding="utf-8") as file:
        for conversation in conversations:
            file.write(json.dumps(messages_to_dict(conversation), ensure_ascii=False) + "\n")
    sizes = ", ".join(str(len(c)) for c in conversations)
    print(f"wrote {len(conversations)} conversations ({sizes} messages) to {args.out}")


if __name__ == "__main__":
    main()
