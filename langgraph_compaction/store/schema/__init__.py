"""The store's tables (what a person sees in an SQLite browser), full text, and the Alembic
migrations that produce them.

May import: ``store.records``, ``store.db``, ``errors``.
"""
