"""Schema version 5: steering compaction (edits, revocations, requests, pins, reviews).

``compaction_summaries`` gains ``revoked_at`` and a third kind, ``edited`` (a person's text
as a new version of the same prefix); its unique prefix index becomes partial, over the rows
that are neither edited nor revoked, so an edit or a new summary of a revoked prefix can be
stored, and a plain index on the same columns serves ``find_summary``.
``compaction_threads`` gains the control version (``controls``) and the pending compaction
request (``requested_at``, ``request_instruction``). ``compaction_pins`` and
``compaction_reviews`` are new and start empty. Every row already stored stays as it was.

SQLite cannot alter a CHECK constraint: batch mode copies the table into a new one. The
indexes are dropped before and made again after, since the copy would lose the ``DESC`` of
``ix_compaction_summaries_newest``.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

_STAMP = sa.DateTime(timezone=True).with_variant(sa.String(32), "sqlite")
_LIVE = sa.text("kind <> 'edited' AND revoked_at IS NULL")
_PREFIX_INDEX = "ux_compaction_summaries_prefix"
_NEWEST_INDEX = "ix_compaction_summaries_newest"
_LOOKUP_INDEX = "ix_compaction_summaries_prefix"
_KEY = ["thread_id", "namespace", "prefix_hash"]


def _drop_indexes() -> None:
    op.drop_index(_PREFIX_INDEX, table_name="compaction_summaries")
    op.drop_index(_NEWEST_INDEX, table_name="compaction_summaries")


def _create_indexes(prefix_where: sa.TextClause | None) -> None:
    op.create_index(
        _NEWEST_INDEX,
        "compaction_summaries",
        ["thread_id", "namespace", sa.text("version DESC")],
        unique=True,
    )
    op.create_index(
        _PREFIX_INDEX,
        "compaction_summaries",
        _KEY,
        unique=True,
        sqlite_where=prefix_where,
        postgresql_where=prefix_where,
    )


def upgrade() -> None:
    _drop_indexes()
    with op.batch_alter_table("compaction_summaries") as batch:
        batch.add_column(sa.Column("revoked_at", _STAMP, nullable=True))
        batch.drop_constraint("ck_compaction_summaries_kind", type_="check")
        batch.create_check_constraint(
            "ck_compaction_summaries_kind", "kind IN ('initial', 'update', 'edited')"
        )
    _create_indexes(_LIVE)
    op.create_index(_LOOKUP_INDEX, "compaction_summaries", _KEY)
    with op.batch_alter_table("compaction_threads") as batch:
        batch.add_column(
            sa.Column("controls", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )
        batch.add_column(sa.Column("requested_at", _STAMP, nullable=True))
        batch.add_column(sa.Column("request_instruction", sa.Text(), nullable=True))
    op.create_table(
        "compaction_pins",
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("message_id", sa.Text(), nullable=False),
        sa.Column("pinned_at", _STAMP, nullable=False),
        sa.PrimaryKeyConstraint("thread_id", "namespace", "message_id", name="pk_compaction_pins"),
    )
    op.create_table(
        "compaction_reviews",
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("prefix_hash", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("created_at", _STAMP, nullable=False),
        sa.PrimaryKeyConstraint(
            "thread_id", "namespace", "prefix_hash", name="pk_compaction_reviews"
        ),
    )
    op.execute("UPDATE compaction_meta SET value = '5' WHERE key = 'schema_version'")


def downgrade() -> None:
    """Back to schema 4, which can hold neither edits nor revoked rows: those are deleted."""
    op.drop_table("compaction_reviews")
    op.drop_table("compaction_pins")
    op.drop_index(_LOOKUP_INDEX, table_name="compaction_summaries")
    with op.batch_alter_table("compaction_threads") as batch:
        batch.drop_column("request_instruction")
        batch.drop_column("requested_at")
        batch.drop_column("controls")
    _drop_indexes()
    op.execute("DELETE FROM compaction_summaries WHERE kind = 'edited' OR revoked_at IS NOT NULL")
    with op.batch_alter_table("compaction_summaries") as batch:
        batch.drop_constraint("ck_compaction_summaries_kind", type_="check")
        batch.create_check_constraint(
            "ck_compaction_summaries_kind", "kind IN ('initial', 'update')"
        )
        batch.drop_column("revoked_at")
    _create_indexes(None)
    op.execute("UPDATE compaction_meta SET value = '4' WHERE key = 'schema_version'")
