"""Schema version 3: deletion generations and summary leases.

``compaction_generations`` counts the deletions of a thread per namespace (``*``: in every
namespace); its rows outlive the deletion, so a write that read the generation before a
deletion is refused. ``compaction_leases`` lets one worker at a time summarize a prefix, with
an expiry that frees the lease of a worker that died. Both start empty.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

# Timezone-aware timestamps; SQLite keeps them as fixed-width ISO-8601 text.
_STAMP = sa.DateTime(timezone=True).with_variant(sa.String(32), "sqlite")


def upgrade() -> None:
    op.create_table(
        "compaction_generations",
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("deleted_at", _STAMP, nullable=False),
        sa.PrimaryKeyConstraint("thread_id", "namespace", name="pk_compaction_generations"),
    )
    op.create_table(
        "compaction_leases",
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("prefix_hash", sa.Text(), nullable=False),
        sa.Column("owner", sa.Text(), nullable=False),
        sa.Column("acquired_at", _STAMP, nullable=False),
        sa.Column("expires_at", _STAMP, nullable=False),
        sa.PrimaryKeyConstraint(
            "thread_id", "namespace", "prefix_hash", name="pk_compaction_leases"
        ),
    )
    op.execute("UPDATE compaction_meta SET value = '3' WHERE key = 'schema_version'")


def downgrade() -> None:
    op.drop_table("compaction_leases")
    op.drop_table("compaction_generations")
    op.execute("UPDATE compaction_meta SET value = '2' WHERE key = 'schema_version'")
