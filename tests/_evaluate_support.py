"""For the evaluate tests: a support agent's conversation with tool calls, in four languages,
with a NUL byte and a lone surrogate in a tool result, written as the command reads them; and
the command run as a user runs it, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_to_dict,
)

__all__ = [
    "REPO",
    "evaluate",
    "one_line_error",
    "support_conversation",
    "write_conversations",
]

REPO = Path(__file__).resolve().parents[1]

_ASKS = [
    "Where is my order ORD-{n}41? It was due on Monday.",
    "我的订单 ORD-{n}42 还没有到，请帮我查一下。",  # noqa: RUF001 (Chinese punctuation)
    "أين طلبي ORD-{n}43؟ لم يصل بعد.",
    "Где мой заказ ORD-{n}44? Он должен был прийти вчера.",
]


def support_conversation(turns: int = 8, *, tag: str = "") -> list[BaseMessage]:
    """``turns`` user questions, each answered after one ``lookup_order`` call.

    Every order id, tracking file and carrier reply is distinct, so what compaction keeps or
    loses can be told apart; turn 3's tool result holds a NUL byte and a lone surrogate.
    """
    messages: list[BaseMessage] = [
        SystemMessage("You are the support agent of a parcel shop. Use the tools.", id=f"{tag}s")
    ]
    for n in range(turns):
        ask = _ASKS[n % len(_ASKS)].format(n=n)
        order = f"ORD-{n}4{n % len(_ASKS) + 1}"
        call_id = f"call-{tag}{n}"
        result = (
            f"order {order}: shipped by carrier DHL, tracking file /var/track/{order}.json, "
            f"status delayed at hub HUB-{n}7 because of a customs check; decided to refund "
            f"the shipping fee of {n + 3}.50 EUR"
        )
        if n == 3:
            result += " raw: \x00 and \ud800 end"
        messages += [
            HumanMessage(ask, id=f"{tag}u{n}"),
            AIMessage(
                "",
                tool_calls=[{"name": "lookup_order", "args": {"order_id": order}, "id": call_id}],
                id=f"{tag}a{n}",
            ),
            ToolMessage(result, tool_call_id=call_id, name="lookup_order", id=f"{tag}t{n}"),
            AIMessage(
                f"Your order {order} is delayed at HUB-{n}7 for a customs check; the next step "
                f"is to wait for the carrier's update, and I refunded {n + 3}.50 EUR shipping.",
                id=f"{tag}r{n}",
            ),
        ]
    return messages


def write_conversations(
    path: Path,
    conversations: Sequence[Sequence[BaseMessage]],
    schema: Literal["langchain", "openai"] = "langchain",
) -> Path:
    """One conversation a line (JSON Lines), as ``messages_to_dict`` or OpenAI chat messages."""
    lines = []
    for conversation in conversations:
        if schema == "langchain":
            data: object = messages_to_dict(list(conversation))
        else:
            data = convert_to_openai_messages(list(conversation))
        lines.append(json.dumps(data, ensure_ascii=False).encode("utf-8", "backslashreplace"))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def evaluate(
    *args: str | Path, base_url: str | None = None, local_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "COMPACTION_"))}
    if base_url is not None:
        env |= {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "stand-in"}
    if local_url is not None:
        env["COMPACTION_LOCAL_MODEL_URL"] = local_url
    return subprocess.run(
        [sys.executable, "-m", "langgraph_compaction.evaluate", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=REPO,
        timeout=300,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The error of a run that failed on bad input: exit status 2, one line on stderr."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert result.stdout == ""
    return lines[0]
