"""The agents' tools: deterministic, offline, and with stable result ids.

Each tool returns its ``ToolMessage`` itself, with an id derived from the tool call's id. A
summary is keyed by a hash of its prefix's message ids and contents, so a conversation
replayed on a restarted server reuses the stored summaries only if it produces the same
messages, ids included; ``ToolNode`` would otherwise give every result a fresh random id.
"""

from __future__ import annotations

import hashlib
from typing import Annotated

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool

__all__ = ["TOOLS", "convert_currency", "get_weather"]


def _figure(text: str, low: int, high: int) -> int:
    """A number in [low, high] that depends only on ``text`` (no randomness, no clock)."""
    digest = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
    return low + digest % (high - low + 1)


@tool
def get_weather(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Today's weather forecast for a city: temperature, sky and wind."""
    celsius = _figure(city.lower(), -5, 32)
    sky = ("clear", "cloudy", "rainy", "foggy", "windy")[_figure(city, 0, 4)]
    report = (
        f"Forecast for {city}: {celsius} degrees Celsius, {sky} skies, wind "
        f"{_figure(city + 'wind', 2, 40)} km/h, humidity {_figure(city + 'hum', 20, 95)} percent. "
        f"Sunrise 06:{_figure(city + 'sun', 10, 59)}, sunset 19:{_figure(city + 'set', 10, 59)}."
    )
    return ToolMessage(report, tool_call_id=tool_call_id, id=f"{tool_call_id}-result")


@tool
def convert_currency(
    amount: float, source: str, target: str, tool_call_id: Annotated[str, InjectedToolCallId]
) -> ToolMessage:
    """Convert an amount of money from one currency (ISO code) to another at today's rate."""
    pair = f"{source.upper()}/{target.upper()}"
    rate = _figure(pair, 50, 200) / 100
    result = (
        f"{amount:g} {source.upper()} is {amount * rate:.2f} {target.upper()} at the rate of "
        f"{rate:.2f} for {pair}; the bank fee would be {amount * rate * 0.015:.2f} "
        f"{target.upper()}."
    )
    return ToolMessage(result, tool_call_id=tool_call_id, id=f"{tool_call_id}-result")


TOOLS: list[BaseTool] = [get_weather, convert_currency]
