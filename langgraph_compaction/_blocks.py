"""Content blocks of every provider format: media, reasoning, text, and what each costs."""

from __future__ import annotations

__all__: list[str] = []
