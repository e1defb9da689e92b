"""The event store on PostgreSQL 18 (embedded) and 15: concurrency, density, hashes, append-only."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import uuid
from typing import TYPE_CHECKING

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eventlog
from eventlog import Reading, WrongExpectedVersion, appends, connections
from eventlog.codec import UNREAD_EVENT, decode_metadata, encode_stored
from eventlog.events.users import UserCreated
from projections import activity
from projections.rebuild import reading_of
from tests.factories import TEST_ACTOR, account, append, noted, work

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from service.work import Appended, Committed

pytestmark = pytest.mark.usefixtures("any_dsn")


async def test_append_numbers_positions_and_stream_versions(any_conn: Conn) -> None:
    first = await append(any_conn, [noted(1), noted(2)], stream=("test", "a"), expected="no-stream")
    second = await append(any_conn, [noted(3)], stream=("test", "b"), expected="no-stream")
    third = await append(any_conn, [noted(4)], stream=("test", "a"), expected=2)

    assert [(r.position, r.stream_key, r.stream_version) for r in first + second + third] == [
        (1, "a", 1),
        (2, "a", 2),
        (3, "b", 1),
        (4, "a", 3),
    ]
    stored = await eventlog.read_stream(any_conn, ("test", "a"))
    assert [r.event for r in stored] == [noted(1), noted(2), noted(4)]
    assert stored[0].metadata == TEST_ACTOR
    assert await eventlog.stream_version(any_conn, ("test", "a")) == 3


async def test_metadata_is_stored_with_actor_and_request_id(any_conn: Conn) -> None:
    meta = TEST_ACTOR.__class__(
        actor_id="api-token:7", actor_name="ci", actor_kind="api-token", request_id="req-1"
    )
    await append(any_conn, [noted()], metadata=meta)
    raw = await any_conn.fetchval("SELECT metadata::text FROM events")
    assert decode_metadata(raw) == meta


async def test_no_stream_conflicts_when_the_stream_exists(any_conn: Conn) -> None:
    await append(any_conn, stream=("test", "x"), expected="no-stream")
    with pytest.raises(WrongExpectedVersion):
        await append(any_conn, stream=("test", "x"), expected="no-stream")
    assert await any_conn.fetchval("SELECT count(*) FROM events") == 1


async def test_exact_version_conflicts_when_the_stream_moved(any_conn: Conn) -> None:
    await append(any_conn, [noted(1), noted(2)], stream=("test", "x"), expected="no-stream")
    with pytest.raises(WrongExpectedVersion):
        await append(any_conn, stream=("test", "x"), expected=1)
    with pytest.raises(WrongExpectedVersion):
        await append(any_conn, stream=("test", "missing"), expected=1)
    assert await eventlog.stream_version(any_conn, ("test", "x")) == 2


async def test_twenty_concurrent_appends_with_one_expected_version(any_dsn: str) -> None:
    pool = await connections.create_pool(any_dsn, 20)
    assert pool is not None
    async with pool.acquire() as conn:
        await append(conn, stream=("test", "race"), expected="no-stream")

    async def attempt(i: int) -> bool:
        async with pool.acquire() as conn:
            try:
                await append(conn, [noted(i)], stream=("test", "race"), expected=1)
            except WrongExpectedVersion:
                return False
            return True

    try:
        results = await asyncio.gather(*(attempt(i) for i in range(20)))
        async with pool.acquire() as conn:
            assert results.count(True) == 1
            assert await conn.fetchval("SELECT count(*) FROM events") == 2
            assert await eventlog.stream_version(conn, ("test", "race")) == 2
    finally:
        await pool.close()


async def test_reader_following_the_log_misses_nothing(any_dsn: str) -> None:
    """32 writers append while a reader follows position > checkpoint: it sees 1..N in order."""
    writers, per_writer = 32, 15
    pool = await connections.create_pool(any_dsn, 34)
    assert pool is not None
    done = asyncio.Event()
    seen: list[int] = []

    async def writer(w: int) -> None:
        async with pool.acquire() as conn:
            for i in range(per_writer):
                await append(conn, [noted(i), noted(i)], stream=("w", f"{w}"), expected="any")

    async def reader() -> None:
        async with pool.acquire() as conn:
            checkpoint = 0
            while True:
                finished = done.is_set()
                rows = await conn.fetch(
                    "SELECT position FROM events WHERE position > $1 ORDER BY position", checkpoint
                )
                for row in rows:
                    seen.append(row["position"])
                    checkpoint = row["position"]
                if finished and not rows:
                    return
                await asyncio.sleep(0)

    read = asyncio.create_task(reader())
    try:
        await asyncio.gather(*(writer(w) for w in range(writers)))
        done.set()
        await read
    finally:
        # A writer that failed, or a cancelled test (Ctrl-C), leaves the reader looping: the
        # pool's close would wait for its connection forever.
        read.cancel()
        await asyncio.gather(read, return_exceptions=True)
        await pool.close()
    total = writers * per_writer * 2
    assert seen == list(range(1, total + 1))


async def test_a_rollback_leaves_no_hole(any_conn: Conn) -> None:
    await append(any_conn, [noted(1)])
    tx = any_conn.transaction()
    await tx.start()
    await appends.append(any_conn, ("test", "doomed"), "no-stream", [noted(2)], TEST_ACTOR)
    await tx.rollback()
    await append(any_conn, [noted(3)])
    positions = await any_conn.fetch("SELECT position FROM events ORDER BY position")
    assert [r["position"] for r in positions] == [1, 2]
    assert await eventlog.stream_version(any_conn, ("test", "doomed")) is None


async def test_event_id_makes_an_append_idempotent(any_conn: Conn) -> None:
    ids = [uuid.uuid4(), uuid.uuid4()]
    async with any_conn.transaction():
        first = await appends.append(
            any_conn, ("test", "i"), "no-stream", [noted(1), noted(2)], TEST_ACTOR, event_ids=ids
        )
    async with any_conn.transaction():
        again = await appends.append(
            any_conn, ("test", "i"), "no-stream", [noted(1), noted(2)], TEST_ACTOR, event_ids=ids
        )
    assert [r.position for r in again] == [r.position for r in first] == [1, 2]
    assert await any_conn.fetchval("SELECT count(*) FROM events") == 2
    with pytest.raises(eventlog.PartialDuplicate):
        async with any_conn.transaction():
            await appends.append(
                any_conn,
                ("test", "i"),
                2,
                [noted(1), noted(3)],
                TEST_ACTOR,
                event_ids=[ids[0], uuid.uuid4()],
            )


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE events SET type = 'Forged'",
        "DELETE FROM events",
        "TRUNCATE events",
    ],
)
async def test_the_log_rejects_update_delete_truncate(any_conn: Conn, statement: str) -> None:
    await append(any_conn, [noted(1)])
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
        await any_conn.execute(statement)
    assert await any_conn.fetchval("SELECT count(*) FROM events") == 1


async def test_hashes_chain_from_a_zero_genesis(any_conn: Conn) -> None:
    await append(any_conn, [noted(1), noted(2, "ü")])
    await append(any_conn, [noted(3)])
    rows = await any_conn.fetch(
        """SELECT prev_hash, hash, event_canonical(position, stream_type, stream_key,
               stream_version, event_id, type, schema_version, data, metadata, recorded_at) AS c
           FROM events ORDER BY position"""
    )
    previous = bytes(32)
    for row in rows:
        assert bytes(row["prev_hash"]) == previous
        assert bytes(row["hash"]) == hashlib.sha256(previous + row["c"].encode()).digest()
        previous = bytes(row["hash"])
    head = await any_conn.fetchrow("SELECT position, hash FROM log_head")
    assert head is not None
    assert (head["position"], bytes(head["hash"])) == (3, previous)


async def test_read_all_pages_through_the_whole_log(any_conn: Conn) -> None:
    for i in range(7):
        await append(any_conn, [noted(i)])
    batches = [b async for b in eventlog.read_all(any_conn, after=2, batch=2)]
    assert [[r.position for r in b] for b in batches] == [[3, 4], [5, 6], [7]]
    assert batches[0][0].event == noted(2)


async def test_read_next_reads_a_batch_as_the_reading_says(any_conn: Conn) -> None:
    """An async projection's step (projections/follower.py): the first `batch` events past a
    position, with only what its reading asks for decoded; a sealed actor name is opened. It
    reads up to the last event of a full batch, else up to the head."""
    ann = TEST_ACTOR.__class__(actor_id="user:7", actor_name="Ann", actor_kind="user")
    await append(any_conn, [noted(1), noted(2)], metadata=ann)
    person = await account(any_conn, username="bea")  # her name and e-mail sealed in the data
    await append(any_conn, [noted(3)])
    whole = [r async for b in eventlog.read_all(any_conn) for r in b]
    assert len(whole) == 5
    assert await eventlog.read_next(any_conn, 0, Reading(), batch=5) == (whole, 5)
    assert await eventlog.read_next(any_conn, 1, Reading(), batch=2) == (whole[1:3], 3)
    assert await eventlog.read_next(any_conn, 5, Reading()) == ([], 5)
    # What the activity projection reads: every event's metadata, no event but erasures.
    reading = reading_of((activity.PROJECTION,))
    assert (reading.metadata, reading.event_types) == (True, ("PersonalDataErased",))
    read, upto = await eventlog.read_next(any_conn, 0, reading, batch=10)
    assert ([r.position for r in read], upto) == ([1, 2, 3, 4, 5], 5)
    assert [r.metadata.actor_name for r in read] == ["Ann", "Ann", "test", "test", "test"]
    assert {r.event for r in read} == {UNREAD_EVENT}
    assert [(r.stream_key, r.stream_version) for r in read] == [
        (r.stream_key, r.stream_version) for r in whole
    ]
    # Only some types: the user's creation alone, decoded, her name opened; read up to the
    # head, past the events of other types after it.
    (created,), upto = await eventlog.read_next(any_conn, 0, Reading(types=("UserCreated",)))
    assert isinstance(created.event, UserCreated)
    assert (created.position, created.event.user_id, created.event.name) == (3, person.id, "bea")
    assert upto == 5
    assert await eventlog.read_next(any_conn, 3, Reading(types=("UserCreated",))) == ([], 5)
    full = await eventlog.read_next(any_conn, 0, Reading(types=("UserCreated",)), batch=1)
    assert (len(full.records), full.upto) == (1, 3)  # a full batch: up to its last event


async def waits_for_a_lock(observer: asyncpg.Connection, pid: int) -> None:
    """Until the backend `pid` waits for a lock (`observer` may be in a transaction: its
    snapshot of pg_stat_activity is cleared before each read)."""
    for _ in range(400):
        await observer.execute("SELECT pg_stat_clear_snapshot()")
        waiting = await observer.fetchval(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", pid
        )
        if waiting == "Lock":
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"backend {pid} never waited for a lock in 10 s")


async def test_a_concurrent_duplicate_append_is_a_conflict_then_a_no_op(any_dsn: str) -> None:
    ids = [uuid.uuid4()]
    first, second = await connections.connect(any_dsn), await connections.connect(any_dsn)
    try:
        tx = first.transaction()
        await tx.start()
        await appends.append(first, ("test", "d"), "any", [noted(1)], TEST_ACTOR, event_ids=ids)

        async def again() -> list[int | None]:
            async with second.transaction():
                records = await appends.append(
                    second, ("test", "d"), "any", [noted(1)], TEST_ACTOR, event_ids=ids
                )
            return [r.position for r in records]

        racing = asyncio.create_task(again())
        await waits_for_a_lock(first, second.get_server_pid())
        await tx.commit()
        with pytest.raises(eventlog.PartialDuplicate):
            await racing
        assert await again() == [1]  # the retry finds the stored event
        assert await first.fetchval("SELECT count(*) FROM events") == 1
    finally:
        await first.close()
        await second.close()


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# No NUL (PostgreSQL text cannot hold it) and no lone surrogates (no UTF-8 for them: what the
# service sends comes from decoded UTF-8).
@given(text=st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"])))
async def test_a_literal_holds_exactly_its_text(any_conn: Conn, text: str) -> None:
    """What the global section sends as literals (the arguments of eventstore_append, in one
    message with the COMMIT) reads back as the very text: quotes, backslashes and all. (An
    escape string: its meaning does not hang on standard_conforming_strings.)"""
    assert appends.literal(text).startswith("E'")
    assert await any_conn.fetchval(f"SELECT {appends.literal(text)}") == text


def test_a_literal_refuses_nul() -> None:
    with pytest.raises(ValueError, match="NUL"):
        appends.literal("a\x00b")


async def test_a_transaction_commits_its_appends_with_the_commit_and_reports_positions(
    any_conn: Conn,
) -> None:
    """A unit of work leaves the global sections for its COMMIT: inside, the events are not
    in the log yet (the read models are written); after, they are, and the positions reported
    are theirs. A failed unit appends nothing and runs no after-commit hook."""
    reported: list[Appended] = []

    def report(committed: Committed) -> None:
        reported.extend(committed.appends)

    units = work(report, positions_of={"test"})
    async with units.begin(any_conn) as uow:
        await uow.append(("test", "a"), [noted(1), noted(2)], TEST_ACTOR, new=True)
        await uow.append(("test", "b"), [noted(3)], TEST_ACTOR, new=True)
        assert await any_conn.fetchval("SELECT count(*) FROM events") == 0
    positions = [r["position"] for r in await any_conn.fetch("SELECT position FROM events")]
    assert positions == [1, 2, 3]
    kind = noted(1).type_name()
    assert [(a.types, a.position, a.stream_type) for a in reported] == [
        ((kind, kind), 2, "test"),
        ((kind,), 3, "test"),
    ]

    async def fails() -> None:
        async with units.begin(any_conn) as uow:
            await uow.append(("test", "c"), [noted(4)], TEST_ACTOR, new=True)
            raise RuntimeError

    with pytest.raises(RuntimeError):
        await fails()
    assert await any_conn.fetchval("SELECT count(*) FROM events") == 3
    assert not any_conn.is_in_transaction()
    assert len(reported) == 2


async def test_a_unit_of_work_appends_only_inside_its_block_and_once(any_conn: Conn) -> None:
    """Outside `async with` an append would write the stream and the read models but leave its
    events for a COMMIT that never comes (verify would find a stream without events), and a
    unit entered again would send the first one's events twice: both are refused, and nothing
    is written."""
    units = work()
    unit = units.begin(any_conn)
    async with any_conn.transaction():
        with pytest.raises(RuntimeError, match="inside `async with`"):
            await unit.append(("test", "orphan"), [noted(1)], TEST_ACTOR, new=True)
        with pytest.raises(RuntimeError, match="inside `async with`"):
            await unit.append_new([appends.NewStream(("test", "orphans"), [noted(2)], TEST_ACTOR)])
    async with unit as uow:
        await uow.append(("test", "once"), [noted(3)], TEST_ACTOR, new=True)
    with pytest.raises(RuntimeError, match="used once"):
        async with unit:
            pass
    with pytest.raises(RuntimeError, match="inside `async with`"):
        await unit.append(("test", "after"), [noted(4)], TEST_ACTOR)
    assert not any_conn.is_in_transaction()
    streams = await any_conn.fetch("SELECT stream_key, version FROM streams ORDER BY stream_key")
    assert [tuple(r) for r in streams] == [("once", 1)]
    assert await any_conn.fetchval("SELECT count(*) FROM events") == 1


# One stream of a transaction's appends: its type, its first version, its events' notes.
_streams = st.lists(
    st.tuples(
        st.sampled_from(["test", "feature", "user-batch"]),
        st.integers(min_value=1, max_value=3),
        st.lists(
            st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"])),
            min_size=1,
            max_size=4,
        ),
        st.booleans(),
    ),
    min_size=1,
    max_size=6,
)
_ROW = """
SELECT position, stream_type, stream_key, stream_version, event_id, type, schema_version,
       data, metadata, recorded_at, prev_hash, hash, kind, project, actor_user_id,
       event_canonical(position, stream_type, stream_key, stream_version, event_id, type,
                       schema_version, data, metadata, recorded_at) AS canonical
FROM events WHERE position > $1 ORDER BY position
"""


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(streams=_streams)
async def test_one_call_writes_what_the_calls_one_after_another_wrote(
    any_conn: Conn, streams: list[tuple[str, int, list[str], bool]]
) -> None:
    """sql/0019: a transaction's global sections in one call (eventstore_append_streams, as
    `commit` sends it) write the rows that eventstore_append, called once a stream, wrote: the
    same positions, streams, versions, ids, data, metadata and derived columns, one hash chain
    on from the head, each stream's time taken in its turn and never going back; the head and
    its hash moved to the last event."""
    user = TEST_ACTOR.__class__(
        actor_id="user:7", actor_name="Ann", actor_kind="user", request_id="req-7"
    )
    pending = [
        appends.Pending(
            (stream_type, uuid.uuid4().hex),
            first,
            [uuid.uuid4() for _ in notes],
            [noted().type_name()] * len(notes),
            [noted().schema_version] * len(notes),
            [encode_stored(noted(i, note), {}) for i, note in enumerate(notes)],
            encode_stored(user if by_user else TEST_ACTOR, {}),
        )
        for stream_type, first, notes, by_user in streams
    ]
    async with any_conn.transaction():
        head = await any_conn.fetchrow(  # a new log's time: -infinity
            "SELECT position, hash, greatest(recorded_at, 'epoch') AS recorded_at FROM log_head"
        )
        assert head is not None
        one_by_one = any_conn.transaction()
        await one_by_one.start()
        for p in pending:
            await any_conn.fetch(
                appends.APPEND,
                *p.stream,
                p.first_version,
                list(p.event_ids),
                list(p.types),
                list(p.schema_versions),
                list(p.data),
                p.metadata,
                None,
            )
        before = await any_conn.fetch(_ROW, head["position"])
        await one_by_one.rollback()
        await any_conn.execute(appends.append_streams_call(pending))  # what commit sends
        after = await any_conn.fetch(_ROW, head["position"])
        moved = await any_conn.fetchrow("SELECT position, hash, recorded_at FROM log_head")

    timeless = ("recorded_at", "prev_hash", "hash", "canonical")
    assert len(after) == sum(len(p.event_ids) for p in pending)
    assert [{k: v for k, v in r.items() if k not in timeless} for r in after] == [
        {k: v for k, v in r.items() if k not in timeless} for r in before
    ]
    previous, time = bytes(head["hash"]), head["recorded_at"]
    for row in after:
        assert bytes(row["prev_hash"]) == previous
        assert bytes(row["hash"]) == hashlib.sha256(previous + row["canonical"].encode()).digest()
        assert row["recorded_at"] >= time
        previous, time = bytes(row["hash"]), row["recorded_at"]
    # One time a stream, taken in its turn: never before the stream's before, and (the clock
    # moves on by microseconds while the streams between are hashed) not one for all.
    times = [{r["recorded_at"] for r in after if r["stream_key"] == p.stream[1]} for p in pending]
    assert all(len(t) == 1 for t in times)
    firsts = [min(t) for t in times]
    assert all(a <= b for a, b in itertools.pairwise(firsts))
    if len(after) >= 8 and len(pending) >= 3:
        assert firsts[0] < firsts[-1]
    assert moved is not None
    assert (moved["position"], bytes(moved["hash"]), moved["recorded_at"]) == (
        after[-1]["position"],
        previous,
        time,
    )


async def test_one_call_never_takes_a_time_before_the_heads(any_conn: Conn) -> None:
    """A head whose time is ahead of the clock (a replica whose clock ran fast): the events of
    every stream take the head's time rather than go back."""
    pending = [
        appends.Pending(
            ("test", key),
            1,
            [uuid.uuid4()],
            [noted().type_name()],
            [1],
            [encode_stored(noted(), {})],
            encode_stored(TEST_ACTOR, {}),
        )
        for key in ("a", "b", "c")
    ]
    async with any_conn.transaction():
        ahead = await any_conn.fetchval(
            "UPDATE log_head SET recorded_at = clock_timestamp() + interval '1 hour' "
            "RETURNING recorded_at"
        )
        await any_conn.execute(appends.append_streams_call(pending))
        times = [r["recorded_at"] for r in await any_conn.fetch(_ROW, 0)]
        head = await any_conn.fetchval("SELECT recorded_at FROM log_head")
    assert times == [ahead] * 3
    assert head == ahead


async def test_one_call_refuses_arrays_that_do_not_match_the_counts(any_conn: Conn) -> None:
    call = (
        "SELECT eventstore_append_streams(ARRAY['test'], ARRAY['k'], ARRAY[1], ARRAY[{}], "
        "ARRAY['{{}}']::jsonb[], ARRAY[gen_random_uuid()], ARRAY['T'], ARRAY[1], "
        "ARRAY['{{}}']::jsonb[])"
    )
    async with any_conn.transaction():
        for count in (2, 0):
            with pytest.raises(asyncpg.RaiseError, match="do not match"):
                async with any_conn.transaction():
                    await any_conn.execute(call.format(count))
    assert await any_conn.fetchval("SELECT count(*) FROM events") == 0
    assert (
        await any_conn.fetchval(
            "SELECT eventstore_append_streams('{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')"
        )
        == 0
    )
