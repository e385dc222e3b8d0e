"""The store's databases: engines and their settings, the per-call control reader, the SQLite
writer queue, reopening a file that was replaced, and text the databases refuse.

May import: ``errors``.
"""
