"""Schema version 2: ``compaction_summaries.parent_version``, the parent's version number.

Lineage stays readable, and checkable, after retention has deleted the parent row: a row
whose parent is gone still says which version it updated, and a consistency check can tell
a parent trimmed by retention (older than every kept version) from a dangling one.
Existing rows get it from their parent where that row is still stored.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("compaction_summaries", sa.Column("parent_version", sa.Integer(), nullable=True))
    op.execute(
        "UPDATE compaction_summaries SET parent_version = ("
        "SELECT parent.version FROM compaction_summaries AS parent "
        "WHERE parent.id = compaction_summaries.parent_id)"
        " WHERE parent_id IS NOT NULL"
    )
    op.execute("UPDATE compaction_meta SET value = '2' WHERE key = 'schema_version'")


def downgrade() -> None:
    with op.batch_alter_table("compaction_summaries") as batch:
        batch.drop_column("parent_version")
    op.execute("UPDATE compaction_meta SET value = '1' WHERE key = 'schema_version'")
