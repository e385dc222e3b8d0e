"""The configuration: ``CompactionConfig`` and its parts, the built-in prompts, the per-run
control read from ``config["configurable"]["compaction"]``, the settings a graph resolves once
when it is built, and the triggers resolved against the context window.

May import: ``content``, ``store``, ``errors``.
"""
