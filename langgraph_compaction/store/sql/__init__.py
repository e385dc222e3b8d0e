"""The store's statements, one module per table family, each a plain function over a sync
SQLAlchemy ``Connection`` (the async store runs the same function through ``run_sync``).

May import: ``store.schema``, ``store.records``, ``store.db``, ``errors``.
"""
