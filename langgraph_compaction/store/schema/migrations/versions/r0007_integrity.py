"""Schema version 7: what the integrity check found for each summary (DESIGN 6.13).

``compaction_summaries`` gains ``integrity_identifiers``, ``integrity_kept``,
``integrity_appended``, ``integrity_dropped``, ``integrity_artifacts`` (integers),
``integrity_repaired`` (a boolean) and ``integrity_items`` (the ledger's items, JSON text), all
nullable: NULL when no check ran (every row stored before this revision, the check turned off,
a person's edit). Every row already stored stays as it was. SQLite adds a nullable column in
place (the boolean without a CHECK constraint), so no table is copied and the indexes stay as
they are.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None

_TABLE = "compaction_summaries"
_COLUMNS = (
    ("integrity_identifiers", sa.Integer()),
    ("integrity_kept", sa.Integer()),
    ("integrity_appended", sa.Integer()),
    ("integrity_dropped", sa.Integer()),
    ("integrity_artifacts", sa.Integer()),
    ("integrity_repaired", sa.Boolean(create_constraint=False)),
    ("integrity_items", sa.Text()),
)


def upgrade() -> None:
    for name, type_ in _COLUMNS:
        op.add_column(_TABLE, sa.Column(name, type_, nullable=True))
    op.execute("UPDATE compaction_meta SET value = '7' WHERE key = 'schema_version'")


def downgrade() -> None:
    """Back to schema 6: the integrity columns and what they held are dropped (ALTER TABLE ...
    DROP COLUMN, SQLite 3.35 or newer; no column dropped is indexed)."""
    for name, _ in reversed(_COLUMNS):
        op.drop_column(_TABLE, name)
    op.execute("UPDATE compaction_meta SET value = '6' WHERE key = 'schema_version'")
