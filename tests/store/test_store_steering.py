"""The store's side of steering compaction (DESIGN 6.11): requests, pins, edits, revocations,
reviews, the control version, and schema 5.

Every body runs on SQLite and PostgreSQL, sync and async (the ``backend`` fixture); the
request race runs in real worker processes on both databases.
"""

# ruff: noqa: RUF001 (Chinese punctuation and Arabic letters in the texts)

from __future__ import annotations

import queue
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from multiprocessing.context import ForkServerContext
from typing import Any

import _steering_workers as steering
import _store_workers as workers
import pytest
from _store_support import Backend, preloaded_forkserver, raw_transaction, summary_fields
from alembic import command
from sqlalchemy import Connection, create_engine, text

from langgraph_compaction.errors import ThreadDeletedError
from langgraph_compaction.store import SummaryStore, ThreadControls
from langgraph_compaction.store.db.engine import derive_urls
from langgraph_compaction.store.schema.migrate import SCHEMA_VERSION, alembic_config
from langgraph_compaction.store.sql.summaries import LIVE_SUMMARY, dialect_insert, summaries
from langgraph_compaction.store.summary_store import plumbing

TIMEOUT_S = 90


async def _chain(b: Backend, count: int, **overrides: Any) -> list[Any]:
    """``count`` summaries of the backend's thread, each updating the one before."""
    rows: list[Any] = []
    for n in range(1, count + 1):
        parent = rows[-1].id if rows else None
        fields = summary_fields(b.thread, b.ns, n, parent_id=parent, **overrides)
        rows.append(await b.add_summary(**fields))
    return rows


# -- compaction requests and the control version ---------------------------------------------


async def test_a_request_is_consumed_once_with_its_instructions_joined(backend: Backend) -> None:
    b = backend
    assert await b.thread_controls(b.thread, b.ns) == ThreadControls(0, False)
    assert await b.pending_request(b.thread, b.ns) is None

    before = datetime.now(UTC)
    await b.request_compaction(b.thread, namespace=b.ns, instruction="保留所有航班号")
    await b.request_compaction(b.thread, namespace=b.ns, instruction="   ")
    await b.request_compaction(b.thread, namespace=b.ns)
    await b.request_compaction(b.thread, namespace=b.ns, instruction="احتفظ بالأسعار")
    controls = await b.thread_controls(b.thread, b.ns)
    assert controls.requested and controls.version == 4

    taken = await b.pending_request(b.thread, b.ns)
    assert taken is not None
    assert taken.instruction == "保留所有航班号\n\nاحتفظ بالأسعار"
    assert before <= taken.requested_at <= datetime.now(UTC)
    assert taken.requested_at.tzinfo is not None
    assert await b.pending_request(b.thread, b.ns) == taken  # read, not consumed
    assert await b.consume_request(b.thread, b.ns, taken)
    assert not await b.consume_request(b.thread, b.ns, taken)  # once
    assert await b.pending_request(b.thread, b.ns) is None
    assert await b.thread_controls(b.thread, b.ns) == ThreadControls(4, False)

    # A request joined after it was read is a new one: consuming the old one leaves it.
    await b.request_compaction(b.thread, namespace=b.ns, instruction="first")
    read = await b.pending_request(b.thread, b.ns)
    assert read is not None
    await b.request_compaction(b.thread, namespace=b.ns, instruction="second")
    assert not await b.consume_request(b.thread, b.ns, read)
    joined = await b.pending_request(b.thread, b.ns)
    assert joined is not None and joined.instruction == "first\n\nsecond"
    assert await b.consume_request(b.thread, b.ns, joined)

    # Without an instruction, in another namespace: the namespaces do not mix.
    await b.request_compaction(b.thread, namespace=f"{b.ns}-2")
    assert await b.pending_request(b.thread, b.ns) is None
    other = await b.pending_request(b.thread, f"{b.ns}-2")
    assert other is not None and other.instruction is None


@pytest.mark.parametrize(
    ("thread", "instruction", "error"),
    [
        ("", None, r"thread_id must be a non-empty str, got ''"),
        (7, None, r"thread_id must be a non-empty str, got 7"),
        ("t", 3, r"instruction must be a str or None, got 3"),
    ],
)
async def test_a_bad_request_is_refused_naming_what_is_wrong(
    backend: Backend, thread: Any, instruction: Any, error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        await backend.request_compaction(thread, instruction=instruction)


async def test_the_control_version_moves_with_every_steering_write(backend: Backend) -> None:
    b = backend
    await _chain(b, 2)
    seen = [(await b.thread_controls(b.thread, b.ns)).version]
    assert seen == [0]  # summaries and failures are not steering

    async def step() -> None:
        version = (await b.thread_controls(b.thread, b.ns)).version
        assert version > seen[-1], (version, seen)
        seen.append(version)

    await b.request_compaction(b.thread, namespace=b.ns)
    await step()
    await b.pin_messages(b.thread, ["m-1"], namespace=b.ns)
    await step()
    await b.pin_messages(b.thread, ["m-1"], namespace=b.ns)  # already pinned: no change
    assert (await b.thread_controls(b.thread, b.ns)).version == seen[-1]
    await b.unpin_messages(b.thread, ["m-1"], namespace=b.ns)
    await step()
    await b.unpin_messages(b.thread, ["m-1"], namespace=b.ns)  # not pinned: no change
    assert (await b.thread_controls(b.thread, b.ns)).version == seen[-1]
    await b.edit_summary(b.thread, "Отредактировано человеком.", namespace=b.ns)
    await step()
    await b.revoke_summary(b.thread, namespace=b.ns)
    await step()

    # A deletion starts the counter again, but never at a version held before it.
    await b.delete_thread(b.thread, b.ns)
    after = await b.thread_controls(b.thread, b.ns)
    assert after.version > max(seen) and not after.requested
    for _ in range(len(seen)):
        await b.request_compaction(b.thread, namespace=b.ns)
        assert (await b.thread_controls(b.thread, b.ns)).version not in seen


def test_thread_controls_is_one_statement(tmp_path: Any) -> None:
    store = SummaryStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.request_compaction("seen")
    plumbing(store).thread_controls("other", "default")  # opens the control read's own connection
    assert store._db._controls is not None
    statements: list[str] = []
    store._db._controls.connection.set_trace_callback(statements.append)
    try:
        for thread in ("seen", "never"):
            statements.clear()
            plumbing(store).thread_controls(thread, "default")
            # PRAGMA data_version (nothing committed since? see _control_reads), then the read
            assert [s.split()[0] for s in statements] == ["PRAGMA", "SELECT"], statements
    finally:
        store.close()


# -- pins --------------------------------------------------------------------------------------


async def test_pins_are_kept_per_thread_and_namespace(backend: Backend) -> None:
    b = backend
    assert await b.pinned_messages(b.thread, namespace=b.ns) == frozenset()
    await b.pin_messages(b.thread, ["msg-1", "сообщение-2", "msg-1"], namespace=b.ns)
    await b.pin_messages(b.thread, ("msg-1", "رسالة\x00"), namespace=b.ns)
    assert await b.pinned_messages(b.thread, namespace=b.ns) == {
        "msg-1",
        "сообщение-2",
        "رسالة\ufffd",  # a NUL is stored as U+FFFD, as every id is
    }
    assert await b.pinned_messages(b.thread, namespace=f"{b.ns}-2") == frozenset()
    assert await b.pinned_messages(f"{b.thread}-2", namespace=b.ns) == frozenset()

    await b.unpin_messages(b.thread, ["msg-1", "never-pinned"], namespace=b.ns)
    await b.pin_messages(b.thread, [], namespace=b.ns)
    assert await b.pinned_messages(b.thread, namespace=b.ns) == {"сообщение-2", "رسالة\ufffd"}


@pytest.mark.parametrize(
    ("ids", "error"),
    [
        ("msg-1", r"message_ids must be a sequence of ids, not one string"),
        (["ok", ""], r"message_ids holds ''; pass non-empty str ids"),
        (["ok", 3], r"message_ids holds 3"),
    ],
)
@pytest.mark.parametrize("method", ["pin_messages", "unpin_messages"])
async def test_bad_message_ids_are_refused(
    backend: Backend, method: str, ids: Any, error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        await getattr(backend, method)(backend.thread, ids, namespace=backend.ns)
    assert await backend.pinned_messages(backend.thread, namespace=backend.ns) == frozenset()


# -- edits ---------------------------------------------------------------------------------------


async def test_an_edit_is_a_new_version_of_the_newest_summary(backend: Backend) -> None:
    b = backend
    first, second = await _chain(b, 2, rescued_message_ids=("skill-1",))
    text = "用户要订从柏林到东京的航班，经济舱，一位成人。"
    edited = await b.edit_summary(b.thread, text, namespace=b.ns)

    assert (edited.version, edited.parent_id, edited.kind, edited.model) == (
        3,
        second.id,
        "edited",
        None,
    )
    same = ("boundary_message_id", "covered_messages", "prefix_hash", "source_tokens")
    assert [getattr(edited, f) for f in same] == [getattr(second, f) for f in same]
    assert edited.rescued_message_ids == ("skill-1",)
    assert edited.summary == text and edited.summary_tokens == -(-len(text) // 4)
    assert edited.revoked_at is None
    assert (await b.list_summaries(b.thread, b.ns))[-1] == edited
    assert await b.find_summary(b.thread, b.ns, second.prefix_hash) == edited
    assert [r.id for r in await b.latest_summaries(b.thread, b.ns)] == [
        edited.id,
        second.id,
        first.id,
    ]

    # A second edit edits the edit; a late duplicate of the summarized prefix stays a no-op.
    again = await b.edit_summary(b.thread, "Second edit.", namespace=b.ns)
    assert (again.version, again.parent_id) == (4, edited.id)
    late = await b.add_summary(**summary_fields(b.thread, b.ns, 2, parent_id=first.id))
    assert late == again
    assert len(await b.list_summaries(b.thread, b.ns)) == 4
    assert await b.check_integrity() == []


async def test_an_edit_needs_text_and_a_summary_in_use(backend: Backend) -> None:
    b = backend
    with pytest.raises(
        ValueError, match=rf"thread '{b.thread}' in namespace '{b.ns}' has no summary to edit"
    ):
        await b.edit_summary(b.thread, "Text.", namespace=b.ns)
    await _chain(b, 1)
    with pytest.raises(ValueError, match=r"the edited summary is blank"):
        await b.edit_summary(b.thread, " \n\t", namespace=b.ns)
    with pytest.raises(ValueError, match=r"thread_id must be a non-empty str"):
        await b.edit_summary("", "Text.", namespace=b.ns)
    await b.revoke_summary(b.thread, namespace=b.ns)
    with pytest.raises(ValueError, match=r"has no summary to edit \(none stored, or every"):
        await b.edit_summary(b.thread, "Text.", namespace=b.ns)
    assert len(await b.list_summaries(b.thread, b.ns)) == 1


async def test_an_edit_respects_retention(backend: Backend) -> None:
    b = backend
    b.store = b.open(retention=2)
    rows = await _chain(b, 2)
    edited = await b.edit_summary(b.thread, "Kept.", namespace=b.ns)
    assert [r.id for r in await b.list_summaries(b.thread, b.ns)] == [rows[1].id, edited.id]
    assert await b.check_integrity() == []


async def test_add_summary_takes_an_edit_from_a_review(backend: Backend) -> None:
    b = backend
    (first,) = await _chain(b, 1)
    fields = summary_fields(b.thread, b.ns, 2, parent_id=first.id, kind="edited", model=None)
    stored = await b.add_summary(**fields)
    assert (stored.kind, stored.version) == ("edited", 2)
    assert await b.find_summary(b.thread, b.ns, "prefix-2") == stored
    assert await b.check_integrity() == []
    with pytest.raises(ValueError, match=r"kind must be 'initial', 'update' or 'edited'"):
        await b.add_summary(**summary_fields(b.thread, b.ns, 3, kind="manual"))


# -- revocation ----------------------------------------------------------------------------------


async def test_revoking_withdraws_a_version_and_every_later_one(backend: Backend) -> None:
    b = backend
    first, second, third = await _chain(b, 3)
    edited = await b.edit_summary(b.thread, "Edited third.", namespace=b.ns)

    before = datetime.now(UTC)
    assert await b.revoke_summary(b.thread, namespace=b.ns, version=2) == 3
    assert await b.latest_summaries(b.thread, b.ns) == [first]
    for row in (second, third):
        assert await b.find_summary(b.thread, b.ns, row.prefix_hash) is None
    listed = await b.list_summaries(b.thread, b.ns)
    assert [r.id for r in listed] == [first.id, second.id, third.id, edited.id]
    assert listed[0].revoked_at is None
    assert all(r.revoked_at is not None and r.revoked_at >= before for r in listed[1:])

    # The next summary updates v1 and may reuse a revoked prefix: it is a new version.
    again = await b.add_summary(**summary_fields(b.thread, b.ns, 2, parent_id=first.id))
    assert again.id != second.id and again.version == 5 and again.revoked_at is None
    assert await b.find_summary(b.thread, b.ns, "prefix-2") == again
    assert await b.check_integrity() == []

    # The default is the newest in use; revoking what is revoked already is an error.
    assert await b.revoke_summary(b.thread, namespace=b.ns) == 1
    assert await b.revoke_summary(b.thread, namespace=b.ns, version=1) == 1
    with pytest.raises(ValueError, match=r"has no summary in use to revoke"):
        await b.revoke_summary(b.thread, namespace=b.ns)
    with pytest.raises(ValueError, match=r"version 3 of thread .* revoked already; nothing"):
        await b.revoke_summary(b.thread, namespace=b.ns, version=3)


@pytest.mark.parametrize(
    ("version", "error"),
    [
        (9, r"has no version 9 \(stored: v1, v2\)"),
        (0, r"version must be an int >= 1 or None, got 0"),
        (True, r"version must be an int >= 1 or None, got True"),
        ("2", r"version must be an int >= 1 or None, got '2'"),
    ],
)
async def test_revoking_an_unknown_version_is_refused(
    backend: Backend, version: Any, error: str
) -> None:
    await _chain(backend, 2)
    with pytest.raises(ValueError, match=error):
        await backend.revoke_summary(backend.thread, namespace=backend.ns, version=version)
    assert all(
        r.revoked_at is None for r in await backend.list_summaries(backend.thread, backend.ns)
    )


async def test_revoking_a_thread_without_summaries_names_it(backend: Backend) -> None:
    b = backend
    with pytest.raises(ValueError, match=rf"thread '{b.thread}' in namespace '{b.ns}' has no"):
        await b.revoke_summary(b.thread, namespace=b.ns)


def test_the_prefix_index_still_makes_a_duplicate_insert_a_no_op(store_url: str) -> None:
    # What a writer that bypasses the thread lock relies on: ON CONFLICT over the partial
    # index, with its WHERE; an edit of the same prefix is not a conflict.
    with SummaryStore(store_url) as store:
        store.list_summaries("warm-up")
    engine = create_engine(derive_urls(store_url)[0])

    def insert(conn: Connection, row_id: str, version: int, kind: str) -> None:
        values = summary_fields("raw", "default", 1, kind=kind) | {
            "id": row_id,
            "version": version,
            "created_at": datetime.now(UTC),
            "rescued_message_ids": "[]",
        }
        conn.execute(
            dialect_insert(conn, summaries)
            .values(values)
            .on_conflict_do_nothing(
                index_elements=["thread_id", "namespace", "prefix_hash"], index_where=LIVE_SUMMARY
            )
        )

    try:
        with engine.begin() as conn:
            insert(conn, "a", 1, "initial")
            insert(conn, "b", 2, "initial")  # the same prefix: nothing written
            insert(conn, "c", 3, "edited")
        with SummaryStore(store_url) as store:
            assert [r.id for r in store.list_summaries("raw")] == ["a", "c"]
    finally:
        engine.dispose()


# -- reviews -------------------------------------------------------------------------------------


async def test_a_review_waits_beside_the_summaries_never_as_one(backend: Backend) -> None:
    b = backend
    (first,) = await _chain(b, 1)
    review = {"thread_id": b.thread, "namespace": b.ns, "prefix_hash": "prefix-2", "model": "m"}
    assert await b.find_review_draft(b.thread, b.ns, "prefix-2") is None
    await b.save_review(**review, summary="Черновик для проверки.", kind="update")
    await b.save_review(**review, summary="مسودة ثانية", kind="update")  # replaces the first
    assert (await b.find_review_draft(b.thread, b.ns, "prefix-2")).summary == "مسودة ثانية"
    assert await b.find_review_draft(b.thread, f"{b.ns}-2", "prefix-2") is None
    assert await b.list_summaries(b.thread, b.ns) == [first]
    assert await b.latest_summaries(b.thread, b.ns) == [first]
    assert await b.find_summary(b.thread, b.ns, "prefix-2") is None

    await b.drop_review(b.thread, b.ns, "prefix-2")
    await b.drop_review(b.thread, b.ns, "prefix-2")  # gone already: no error
    assert await b.find_review_draft(b.thread, b.ns, "prefix-2") is None


async def test_a_review_is_checked_and_refused_after_a_deletion(backend: Backend) -> None:
    b = backend
    review = {"thread_id": b.thread, "namespace": b.ns, "prefix_hash": "p", "model": None}
    with pytest.raises(ValueError, match=r"the summary to review is blank"):
        await b.save_review(**review, summary="  ", kind="initial")
    with pytest.raises(ValueError, match=r"kind must be 'initial', 'update' or 'edited'"):
        await b.save_review(**review, summary="Text.", kind="draft")
    with pytest.raises(ValueError, match=r"prefix_hash is empty"):
        await b.save_review(**(review | {"prefix_hash": ""}), summary="Text.", kind="initial")

    generation = (await b.thread_state(b.thread, b.ns)).generation
    await b.delete_thread(b.thread, b.ns)
    with pytest.raises(ThreadDeletedError, match=r"was deleted after it was read"):
        await b.save_review(**review, summary="Text.", kind="initial", generation=generation)
    assert await b.find_review_draft(b.thread, b.ns, "p") is None


async def test_deleting_a_thread_clears_its_pins_reviews_and_request(backend: Backend) -> None:
    b = backend
    other = f"{b.ns}-kept"
    for ns in (b.ns, other):
        await b.add_summary(**summary_fields(b.thread, ns, 1))
        await b.pin_messages(b.thread, ["m-1"], namespace=ns)
        await b.request_compaction(b.thread, namespace=ns, instruction="focus")
        await b.save_review(
            thread_id=b.thread, namespace=ns, prefix_hash="p", summary="S.", kind="initial",
            model=None,
        )  # fmt: skip

    assert await b.delete_thread(b.thread, b.ns) == 1
    assert await b.pinned_messages(b.thread, namespace=b.ns) == frozenset()
    assert await b.find_review_draft(b.thread, b.ns, "p") is None
    assert await b.pending_request(b.thread, b.ns) is None
    assert not (await b.thread_controls(b.thread, b.ns)).requested
    # The other namespace keeps everything.
    assert await b.pinned_messages(b.thread, namespace=other) == {"m-1"}
    assert (await b.find_review_draft(b.thread, other, "p")).summary == "S."
    assert (await b.thread_controls(b.thread, other)).requested

    await b.delete_thread(b.thread)  # every namespace
    assert await b.pinned_messages(b.thread, namespace=other) == frozenset()
    assert await b.find_review_draft(b.thread, other, "p") is None
    assert await b.pending_request(b.thread, other) is None


# -- the consistency check -----------------------------------------------------------------------


def test_the_check_knows_edits_and_revocations(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        first = plumbing(store).add_summary(**summary_fields("t", "default", 1))
        plumbing(store).add_summary(**summary_fields("t", "default", 2, parent_id=first.id))
        store.edit_summary("t", "Edited.")
        store.revoke_summary("t", version=2)
        store.pin_messages("t", ["m"])
        store.request_compaction("t", instruction="focus")
        assert store.check_integrity() == []

    early = datetime.now(UTC) - timedelta(days=1)
    with raw_transaction(store_url) as conn:
        conn.execute(
            summaries.update()
            .where(summaries.c.kind == "edited")
            .values(boundary_message_id="elsewhere", revoked_at=early)
        )
        conn.execute(text("UPDATE compaction_threads SET controls = -1"))
    with SummaryStore(store_url) as store:
        problems = store.check_integrity()
    assert len(problems) == 3, problems
    assert "revoked_at is before created_at" in problems[0]
    assert "an edit of v2's prefix, but with another boundary" in problems[1]
    assert "negative control version -1" in problems[2]


# -- schema 5 ------------------------------------------------------------------------------------


def test_a_version_4_store_is_upgraded_in_place_keeping_its_rows(store_url: str) -> None:
    with raw_transaction(store_url) as conn:
        command.upgrade(alembic_config(conn), "0004")
    stamp: Any = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
    stored = stamp.isoformat(timespec="microseconds") if store_url.startswith("sqlite") else stamp
    with raw_transaction(store_url) as conn:
        assert conn.execute(text("SELECT value FROM compaction_meta")).scalar() == "4"
        conn.execute(
            text(
                "INSERT INTO compaction_summaries VALUES (:id, 't', 'ns', :v, :p, :b, 10, :h, "
                ":s, 5, 100, :k, 'gpt-x', :at, '[\"r-1\"]', :pv)"
            ),
            [
                {"id": "a", "v": 1, "p": None, "b": "m-1", "h": "h1", "s": "Первая.",
                 "k": "initial", "at": stored, "pv": None},
                {"id": "b", "v": 2, "p": "a", "b": "m-2", "h": "h2", "s": "第二个。",
                 "k": "update", "at": stored, "pv": 1},
            ],
        )  # fmt: skip
        conn.execute(
            text(
                "INSERT INTO compaction_threads VALUES "
                "('t', 'ns', 2, 41, 'timed out', :at, 1.25, :at)"
            ),
            {"at": stored},
        )

    with SummaryStore(store_url) as store:  # 4 -> 5 on open
        rows = store.list_summaries("t", "ns")
        assert [(r.id, r.version, r.summary, r.kind, r.created_at) for r in rows] == [
            ("a", 1, "Первая.", "initial", stamp),
            ("b", 2, "第二个。", "update", stamp),
        ]
        assert all(r.revoked_at is None and r.rescued_message_ids == ("r-1",) for r in rows)
        state = store.thread_state("t", "ns")
        assert (state.consecutive_failures, state.calibration) == (2, 1.25)
        assert plumbing(store).thread_controls("t", "ns") == ThreadControls(0, False)
        assert plumbing(store).find_summary("t", "ns", "h2") == rows[1]

        edited = store.edit_summary("t", "Edited.", namespace="ns")
        assert plumbing(store).find_summary("t", "ns", "h2") == edited
        store.revoke_summary("t", namespace="ns", version=2)
        assert (
            plumbing(store).add_summary(**summary_fields("t", "ns", 1, prefix_hash="h2")).version
            == 4
        )
        store.pin_messages("t", ["m-1"], namespace="ns")
        assert plumbing(store).thread_controls("t", "ns") == ThreadControls(3, False)
        assert store.check_integrity() == []
    with raw_transaction(store_url) as conn:
        assert conn.execute(text("SELECT value FROM compaction_meta")).scalar() == str(
            SCHEMA_VERSION
        )


def test_schema_5_declares_the_partial_prefix_index_and_the_edited_kind(store_url: str) -> None:
    with SummaryStore(store_url) as store:
        store.list_summaries("t")
    with raw_transaction(store_url) as conn:
        if conn.dialect.name == "sqlite":
            query = "SELECT sql FROM sqlite_master WHERE name = :name"
            ddl = conn.execute(text(query), {"name": "ux_compaction_summaries_prefix"}).scalar()
            check = conn.execute(text(query), {"name": "compaction_summaries"}).scalar()
        else:
            ddl = conn.execute(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = :name"),
                {"name": "ux_compaction_summaries_prefix"},
            ).scalar()
            check = conn.execute(
                text(
                    "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                    "WHERE conname = 'ck_compaction_summaries_kind'"
                )
            ).scalar()
    assert "WHERE" in str(ddl) and "revoked_at IS NULL" in str(ddl), ddl
    assert "edited" in str(check), check


# -- exactly once across processes ---------------------------------------------------------------


@pytest.fixture(scope="module")
def forkserver() -> Iterator[ForkServerContext]:
    yield from preloaded_forkserver()


@pytest.mark.slow
def test_processes_racing_for_a_request_take_it_exactly_once(
    forkserver: ForkServerContext, store_url: str
) -> None:
    count, rounds = 4, 8
    with SummaryStore(store_url) as store:
        store.list_summaries("warm-up")  # the schema, made before the race
    barrier = forkserver.Barrier(count)
    results: Any = forkserver.Queue()
    jobs = [(store_url, "raced", rounds, i == 0, barrier, i % 2 == 1) for i in range(count)]
    processes = [
        forkserver.Process(
            target=workers.run_and_report,
            args=(results, i, steering.race_for_requests, *job),
        )
        for i, job in enumerate(jobs)
    ]
    for process in processes:
        process.start()
    got: dict[int, Any] = {}
    try:
        for _ in processes:
            index, status, value = results.get(timeout=TIMEOUT_S)
            assert status == "ok", f"worker {index}:\n{value}"
            got[index] = value
    except queue.Empty:
        pytest.fail(f"workers did not finish in {TIMEOUT_S} s; got {got}")
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
    for n in range(rounds):
        taken = [got[i][n] for i in range(count) if got[i][n] is not None]
        assert taken == [f"раунд {n}"], (n, got)
    with SummaryStore(store_url) as store:
        assert plumbing(store).thread_controls("raced", "default") == ThreadControls(rounds, False)
