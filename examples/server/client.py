"""A conversation with the served app over HTTP, with ``langgraph_sdk``.

Start the server with ``scripts/serve`` (it prints the URL), then, from the checkout::

    python examples/server/client.py --url http://127.0.0.1:PORT [--graph agent] [--turns 12]

All turns go to one thread (a new one unless ``--thread`` names it); each sends one user
message and streams the run with
``stream_mode=["custom", "values"]`` and ``stream_subgraphs=True``: the compaction events come
from inside the graph (the compaction subgraph of ``parent``, the model node of ``agent``), so
without ``stream_subgraphs`` the client would not see them. It prints each turn (the request,
any tool call, the answer) and each compaction event as it arrives; the stand-in models make
the conversation long enough to be summarized within a dozen turns. Exit status 1 when a run
fails.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import textwrap
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _events import describe_event

__all__ = ["REQUESTS", "converse", "main", "request"]

GRAPHS = ("parent", "agent")
REQUESTS = (
    "what is the weather in {city} on day {turn}? We want to walk all afternoon.",
    "please convert {amount} EUR to JPY for the ryokan we booked in {city}.",
    "what should we do on day {turn} in {city}, something quiet and not too far?",
)
CITIES = ("Kyoto", "Osaka", "Nara", "Sapporo", "Hakone", "Kanazawa")
WIDTH = 100


def request(turn: int) -> str:
    """The user's message of a turn: the weather, a conversion or a plan, in turn."""
    template = REQUESTS[(turn - 1) % len(REQUESTS)]
    city = CITIES[turn % len(CITIES)]
    return f"Turn {turn}: " + template.format(city=city, turn=turn, amount=100 + turn)


def _line(label: str, text: str) -> str:
    """``label`` then ``text`` on one line of at most ``WIDTH`` characters."""
    return label + textwrap.shorten(text, WIDTH - len(label), placeholder=" ...")


def describe_message(message: dict[str, Any]) -> str:
    """One line for a message of the run: a tool call, a tool result or an answer."""
    if message.get("type") == "ai" and message.get("tool_calls"):
        calls = ", ".join(f"{c['name']}({c['args']})" for c in message["tool_calls"])
        return _line("    tool call: ", calls)
    if message.get("type") == "tool":
        return _line("    tool:      ", str(message.get("content", "")))
    return _line("    assistant: ", str(message.get("content", "")))


async def send(client: Any, thread_id: str, graph: str, turn: int) -> tuple[int, list[str]]:
    """One turn, printed as it streams; the number of summaries made and the run's errors."""
    text = request(turn)
    print(_line(f"turn {turn:>2}  user: ", text), flush=True)
    message = {"role": "user", "content": text, "id": f"turn-{turn}"}
    summaries, errors, final = 0, [], None
    async for part in client.runs.stream(
        thread_id,
        graph,
        input={"messages": [message]},
        stream_mode=["custom", "values"],
        stream_subgraphs=True,  # the compaction events come from inside the graph
    ):
        kind, _, namespace = part.event.partition("|")
        if kind == "custom":
            print(describe_event(part.data), flush=True)
            summaries += part.data.get("type") == "context_compacted"
        elif kind == "values" and not namespace:  # the thread's own state, not a subgraph's
            final = part.data
        elif kind == "error":
            errors.append(str(part.data))
    messages = final["messages"] if isinstance(final, dict) else []
    ids = [m.get("id") for m in messages]
    for reply in messages[ids.index(message["id"]) + 1 :] if message["id"] in ids else []:
        print(describe_message(reply), flush=True)
    return summaries, errors


async def converse(url: str, graph: str, turns: int, thread_id: str) -> int:
    """``turns`` turns on one thread; the exit status (1 when a run failed)."""
    async with get_client(url=url) as client:
        await client.threads.create(thread_id=thread_id, graph_id=graph, if_exists="do_nothing")
        print(f"graph {graph}, thread {thread_id}, {url}", flush=True)
        made = 0
        for turn in range(1, turns + 1):
            summaries, errors = await send(client, thread_id, graph, turn)
            made += summaries
            if errors:
                print(f"turn {turn} failed: {'; '.join(errors)}", file=sys.stderr)
                return 1
        print(f"{turns} turns; summaries made: {made}", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments and hold the conversation; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python examples/server/client.py",
        description="Hold a conversation with examples/server (start it with scripts/serve).",
    )
    parser.add_argument("--url", required=True, help="the server's URL, as scripts/serve prints")
    parser.add_argument("--graph", choices=GRAPHS, default="parent", help="default: parent")
    parser.add_argument("--turns", type=int, default=12, help="user turns (default: 12)")
    parser.add_argument("--thread", help="the thread id (default: a new one)")
    args = parser.parse_args(argv)
    if args.turns < 1:
        parser.error("--turns must be at least 1")
    thread_id = args.thread or str(uuid.uuid4())
    try:
        return asyncio.run(converse(args.url, args.graph, args.turns, thread_id))
    except httpx.HTTPError as exc:  # langgraph_sdk speaks httpx
        print(
            f"error: {args.url}: {exc!r}; is the server running (scripts/serve)?", file=sys.stderr
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
