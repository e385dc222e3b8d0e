"""Bring a database to this package's schema when a store opens it, with Alembic.

The migration scripts ship in ``migrations/versions``; revision ``000N`` produces schema
version N and records it twice: in Alembic's version table (``compaction_alembic_version``,
so it never collides with an application's own ``alembic_version``) and in
``compaction_meta.schema_version``, which the first release already checked, so a worker still
running that release refuses an upgraded store instead of misreading it.

Opening is safe when processes race: the check that the schema is current is one read; only
when it is not does the opener take the schema lock (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL:
an advisory lock, with transactional DDL) and migrate inside that one transaction, after
looking again. A store newer than this package is refused, naming both versions.
"""

from __future__ import annotations

import threading
from functools import cache

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import (
    Column,
    Connection,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    inspect,
    select,
)
from sqlalchemy.exc import SQLAlchemyError

from langgraph_compaction.errors import SummaryStoreError
from langgraph_compaction.store.db.locks import lock_schema
from langgraph_compaction.store.schema.tables import meta, metadata, summaries

__all__ = [
    "HEAD_REVISION",
    "MIGRATION_LOCK",
    "SCHEMA_VERSION",
    "VERSION_TABLE",
    "create_head_schema",
    "current_revision",
    "ensure_schema",
    "schema_is_current",
    "script_directory",
    "stored_schema_version",
]

SCHEMA_VERSION = 7
"""The schema this package reads and writes."""

HEAD_REVISION = f"{SCHEMA_VERSION:04d}"
"""The Alembic revision that produces :data:`SCHEMA_VERSION` (a test keeps the two in step)."""

VERSION_TABLE = "compaction_alembic_version"
"""Alembic's version table, under a name of our own."""

_FIRST_RELEASE_REVISION = "0001"
"""What a store made before Alembic (``schema_version = 1``, same tables) is stamped with."""

_SCRIPTS = "langgraph_compaction.store.schema:migrations"

MIGRATION_LOCK = threading.Lock()
"""Held around a migration: Alembic's ``context`` and ``op`` are process-wide globals, so two
threads migrating at once (two stores, or a store's heartbeat and its caller) would mix up
their migrations. Take it before the database's schema lock, never inside it."""

_alembic_version = Table(
    VERSION_TABLE,
    MetaData(),
    Column("version_num", String(32), nullable=False),
    PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"),
)
"""Alembic's version table as Alembic creates it, for :func:`create_head_schema`."""


def alembic_config(connection: Connection) -> Config:
    """An Alembic config that runs the shipped scripts on ``connection`` (no ini file)."""
    config = Config()
    config.set_main_option("script_location", _SCRIPTS)
    config.attributes["connection"] = connection
    return config


@cache
def script_directory() -> ScriptDirectory:
    """The shipped migration scripts, read once per process."""
    config = Config()
    config.set_main_option("script_location", _SCRIPTS)
    return ScriptDirectory.from_config(config)


def current_revision(conn: Connection) -> str | None:
    """The revision recorded in the database; None when Alembic never ran there."""
    context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def stored_schema_version(conn: Connection) -> str | None:
    """``compaction_meta.schema_version`` as stored, or None without that table or row."""
    if not inspect(conn).has_table(meta.name):
        return None
    return conn.scalar(select(meta.c.value).where(meta.c.key == "schema_version"))


def schema_is_current(conn: Connection) -> bool:
    """Whether the database is at this package's schema: two cheap reads."""
    try:
        if current_revision(conn) != HEAD_REVISION:
            return False
        stored = conn.scalar(select(meta.c.value).where(meta.c.key == "schema_version"))
    except SQLAlchemyError:
        return False  # e.g. a table of another shape: let ensure_schema explain
    return stored == str(SCHEMA_VERSION)


def ensure_schema(conn: Connection) -> None:
    """Create or upgrade the store's tables in ``conn``'s write transaction.

    Raises:
        SummaryStoreError: the database holds a newer store, or tables this package cannot
            place in its history.
    """
    lock_schema(conn)
    revision = current_revision(conn)
    stored = stored_schema_version(conn)
    _refuse_newer(revision, stored)
    if revision == HEAD_REVISION:  # another process migrated while we waited for the lock
        return
    config = alembic_config(conn)
    if revision is None and inspect(conn).has_table(summaries.name):
        # A store of the first release: the same tables, versioned only in compaction_meta.
        if stored != "1":
            raise SummaryStoreError(
                f"the database holds a {summaries.name} table but no schema version this "
                "package knows; point the store at another database or schema"
            )
        command.stamp(config, _FIRST_RELEASE_REVISION)
    command.upgrade(config, "head")


def create_head_schema(conn: Connection) -> None:
    """Create the current tables in an empty database, as the migrations would, no files read.

    For a new in-memory database reached from an event loop, where reading the migration
    scripts would block the loop; a file or server database is migrated by
    :func:`ensure_schema` off the loop instead. A test keeps the two schemas identical.
    """
    metadata.create_all(conn)
    _alembic_version.create(conn)
    conn.execute(_alembic_version.insert().values(version_num=HEAD_REVISION))
    conn.execute(meta.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))


def _refuse_newer(revision: str | None, stored: str | None) -> None:
    known = {script.revision for script in script_directory().walk_revisions()}
    if revision is not None and revision not in known:
        raise SummaryStoreError(
            f"the store is at schema revision {revision}, which this package does not know "
            f"(it reads up to revision {HEAD_REVISION}, schema_version {SCHEMA_VERSION}); "
            "a newer langgraph-compaction wrote it: upgrade the package on every worker, "
            "or point the store at another database"
        )
    if stored is None:
        if revision is not None:
            raise SummaryStoreError(
                f"the store is at schema revision {revision} but compaction_meta holds no "
                "schema_version; the tables were changed by hand: restore them from a backup"
            )
        return
    if not stored.isdigit():
        raise SummaryStoreError(
            f"the store has schema_version {stored!r}, which is not a number; "
            "compaction_meta was changed by hand: restore it from a backup"
        )
    if int(stored) > SCHEMA_VERSION:
        raise SummaryStoreError(
            f"the store has schema_version {stored}, this package reads up to "
            f"{SCHEMA_VERSION}; a newer langgraph-compaction wrote it: upgrade the package on "
            "every worker, or point the store at another database"
        )
