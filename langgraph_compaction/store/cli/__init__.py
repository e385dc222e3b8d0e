"""``python -m langgraph_compaction.store``: inspect, check, migrate, edit and revoke, and the
tables they print.

May import: the rest of ``store``, ``errors``.
"""
