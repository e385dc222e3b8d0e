"""Schema version 4: total recall's index of evicted messages, with full text.

``compaction_messages`` holds the messages summaries evicted, one row per message (unique on
thread, namespace, message id and content hash), and full text over it: an FTS5
external-content table with its triggers on SQLite, a generated ``tsvector`` column under a
GIN index on PostgreSQL (``store/_fulltext.py``). It starts empty: messages evicted before
the upgrade were never indexed.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from langgraph_compaction.store.schema.fulltext import create_fulltext, drop_fulltext

revision = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

_STAMP = sa.DateTime(timezone=True).with_variant(sa.String(32), "sqlite")


def upgrade() -> None:
    op.create_table(
        "compaction_messages",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Text(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("previous_text", sa.Text(), nullable=False),
        sa.Column("next_text", sa.Text(), nullable=False),
        sa.Column("session_date", sa.Text(), nullable=True),
        sa.Column("content_hash", sa.Text(), nullable=False),
        sa.Column("created_at", _STAMP, nullable=False),
    )
    op.create_index(
        "ux_compaction_messages_message",
        "compaction_messages",
        ["thread_id", "namespace", "message_id", "content_hash"],
        unique=True,
    )
    op.create_index(
        "ix_compaction_messages_position",
        "compaction_messages",
        ["thread_id", "namespace", "position"],
    )
    create_fulltext(op.get_bind())
    op.execute("UPDATE compaction_meta SET value = '4' WHERE key = 'schema_version'")


def downgrade() -> None:
    drop_fulltext(op.get_bind())
    op.drop_index("ix_compaction_messages_position", table_name="compaction_messages")
    op.drop_index("ux_compaction_messages_message", table_name="compaction_messages")
    op.drop_table("compaction_messages")
    op.execute("UPDATE compaction_meta SET value = '3' WHERE key = 'schema_version'")
