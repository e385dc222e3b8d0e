"""What the store's test modules share: the PostgreSQL server, fresh schemas, row checks.

The PostgreSQL cases use the server at 127.0.0.1:5432 (database ``test``, user ``postgres``
or ``root``, trust auth). Each test gets a schema of its own, dropped afterwards. Without a
server they are skipped, saying why; under CI (``CI`` set) they fail instead, so that a CI run
never passes without having run them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from uuid import uuid4

import pytest

__all__ = ["PG_DATABASE", "PG_HOST", "PG_PORT", "pg_schema", "pg_server_url", "unavailable"]

PG_HOST, PG_PORT, PG_DATABASE, PG_USERS = "127.0.0.1", 5432, "test", ("postgres", "root")


@cache
def _probe() -> tuple[str | None, str]:
    """The server's base URL, or None and why not (probed once per process)."""
    try:
        import psycopg
    except ImportError:
        return None, "psycopg is not installed (pip install 'langgraph-compaction[postgres]')"
    failures = []
    for user in PG_USERS:
        try:
            with psycopg.connect(
                host=PG_HOST, port=PG_PORT, dbname=PG_DATABASE, user=user, connect_timeout=3
            ):
                return f"postgresql://{user}@{PG_HOST}:{PG_PORT}/{PG_DATABASE}", ""
        except psycopg.Error as exc:
            failures.append(f"{user}: {str(exc).strip().splitlines()[0]}")
    return None, (
        f"no PostgreSQL server answers at {PG_HOST}:{PG_PORT} (database {PG_DATABASE!r}, "
        f"users {PG_USERS}, trust auth): {'; '.join(failures)}"
    )


def unavailable(reason: str) -> None:
    """Skip the test, or fail it under CI, where the server must be there."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the PostgreSQL tests, but {reason}")
    pytest.skip(reason)


def pg_server_url() -> str:
    """``postgresql://user@127.0.0.1:5432/test``; skips (fails under CI) without a server."""
    url, reason = _probe()
    if url is None:
        unavailable(reason)
        raise AssertionError("unreachable")
    return url


@contextmanager
def pg_schema(prefix: str = "lgc_test") -> Iterator[str]:
    """A store URL whose search_path is a new, empty schema; dropped (with its rows) after."""
    import psycopg

    base = pg_server_url()
    schema = f"{prefix}_{uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        try:
            yield f"{base}?options=-csearch_path%3D{schema}"
        finally:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
