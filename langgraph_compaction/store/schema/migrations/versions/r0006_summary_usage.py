"""Schema version 6: what each summary cost, as the summarizer reported it.

``compaction_summaries`` and ``compaction_reviews`` gain ``input_tokens``, ``output_tokens``
and ``cache_read_tokens``, nullable integers: NULL when the model reported nothing (every row
stored before this revision, and a person's edit, which made no model call), never 0 for
"not reported". Every row already stored stays as it was. SQLite adds a nullable column in
place, so no table is copied and the indexes stay as they are.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

_TABLES = ("compaction_summaries", "compaction_reviews")
_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens")


def upgrade() -> None:
    for table in _TABLES:
        for column in _COLUMNS:
            op.add_column(table, sa.Column(column, sa.Integer(), nullable=True))
    op.execute("UPDATE compaction_meta SET value = '6' WHERE key = 'schema_version'")


def downgrade() -> None:
    """Back to schema 5: the usage columns and what they held are dropped (ALTER TABLE ...
    DROP COLUMN, SQLite 3.35 or newer; no column dropped is indexed)."""
    for table in _TABLES:
        for column in reversed(_COLUMNS):
            op.drop_column(table, column)
    op.execute("UPDATE compaction_meta SET value = '5' WHERE key = 'schema_version'")
