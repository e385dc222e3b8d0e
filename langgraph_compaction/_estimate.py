"""The default token counter: langchain-core's rule, by script, media by type."""

from __future__ import annotations

__all__: list[str] = []
