"""Schema version 1: the tables of the first release (summaries, per-thread state, meta).

Stores made by that release, before the store used Alembic, hold exactly these tables and
``schema_version = 1``; the store stamps them with this revision instead of running it.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

# Timezone-aware timestamps; SQLite keeps them as fixed-width ISO-8601 text.
_STAMP = sa.DateTime(timezone=True).with_variant(sa.String(32), "sqlite")


def upgrade() -> None:
    op.create_table(
        "compaction_summaries",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("parent_id", sa.Text(), nullable=True),
        sa.Column("boundary_message_id", sa.Text(), nullable=False),
        sa.Column("covered_messages", sa.Integer(), nullable=False),
        sa.Column("prefix_hash", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("summary_tokens", sa.Integer(), nullable=False),
        sa.Column("source_tokens", sa.Integer(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("created_at", _STAMP, nullable=False),
        sa.Column("rescued_message_ids", sa.Text(), nullable=False),
        sa.CheckConstraint("kind IN ('initial', 'update')", name="ck_compaction_summaries_kind"),
    )
    op.create_index(
        "ix_compaction_summaries_newest",
        "compaction_summaries",
        ["thread_id", "namespace", sa.text("version DESC")],
        unique=True,
    )
    op.create_index(
        "ux_compaction_summaries_prefix",
        "compaction_summaries",
        ["thread_id", "namespace", "prefix_hash"],
        unique=True,
    )
    op.create_table(
        "compaction_threads",
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("messages_at_last_failure", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_failure_at", _STAMP, nullable=True),
        sa.Column("calibration", sa.Float(), nullable=True),
        sa.Column("updated_at", _STAMP, nullable=False),
        sa.PrimaryKeyConstraint("thread_id", "namespace", name="pk_compaction_threads"),
    )
    meta = op.create_table(
        "compaction_meta",
        sa.Column("key", sa.Text(), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )
    op.bulk_insert(meta, [{"key": "schema_version", "value": "1"}])


def downgrade() -> None:
    op.drop_table("compaction_meta")
    op.drop_table("compaction_threads")
    op.drop_index("ux_compaction_summaries_prefix", table_name="compaction_summaries")
    op.drop_index("ix_compaction_summaries_newest", table_name="compaction_summaries")
    op.drop_table("compaction_summaries")
