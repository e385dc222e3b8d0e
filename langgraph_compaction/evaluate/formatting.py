"""How a figure reads, the same on the terminal and on the page."""

from __future__ import annotations

import math

__all__ = ["dollars", "ratio"]


def dollars(value: float) -> str:
    """Cents from $100 up, four significant figures below (a cheap run is still told apart)."""
    if value == 0:
        return "$0"
    if abs(value) >= 100:
        return f"${value:,.2f}"
    decimals = min(10, 3 - math.floor(math.log10(abs(value))))
    return f"${value:,.{decimals}f}"


def ratio(with_: int, without: int) -> str:
    """Tokens with compaction over tokens without, as ``0.41x``; ``-`` when there were none."""
    return f"{with_ / without:.2f}x" if without else "-"
