"""People and agents in control (DESIGN 6.11): what was changed about a thread (a compaction
request, a pin, an edit, a revoke) as its next call in any process sees it.

May import: ``summary``, ``pruning``, ``pipeline``, ``config``, ``content``, ``store``, ``errors``.
"""
