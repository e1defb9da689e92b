"""The two interpreters of projection writes (SQL, memory) agree; a projection's `handles`
names exactly the types it reads; replay converges the live tables and rewrites nothing when
they were right."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eventlog
from eventlog import codec
from eventlog.codec import UNREAD_EVENT, RecordedEvent
from eventlog.connections import set_search_path
from eventlog.events.api_tokens import ApiTokensSeen, ApiTokenUse
from eventlog.events.base import Metadata
from eventlog.events.features import (
    DependencyAdded,
    FeatureArchived,
    FeatureCreated,
    FeatureDeleted,
    FeatureEnvironmentEnabled,
    FeatureTagged,
    StrategyAdded,
    StrategyData,
)
from eventlog.events.privacy import PersonalDataErased
from eventlog.events.users import (
    PersonalAccessTokenCreated,
    PersonalAccessTokenDeleted,
    PersonalAccessTokensSeen,
    TokenUse,
    UserCreated,
    UserDeleted,
    UserRecord,
    UsersDeleted,
    UserSignedIn,
    UserSignedOut,
)
from projections import replay as replay_module
from projections import writes
from projections.activity import ACTIVITY_DAILY
from projections.memory import MemoryTables
from projections.rebuild import (
    add_keys,
    create_scratch,
    names,
    rebuild,
    rebuild_group,
    table_specs,
    tables,
)
from projections.registry import ALL, GROUPS, reading
from projections.replay import replay
from projections.verify import verify
from tests.bench.biglog import generate
from tests.eventlog.test_stored_events import SAMPLED
from tests.factories import api_token_created, recorded
from tests.strategies import for_type

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventlog.codec import DomainEvent
    from eventlog.connections import Conn
    from eventlog.events.base import Event
    from projections.base import Projection

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _recorded(events: Sequence[DomainEvent]) -> list[RecordedEvent]:
    return [recorded(e, i, at=T0 + timedelta(hours=i)) for i, e in enumerate(events, start=1)]


async def _rows(conn: Conn, schema: str) -> dict[str, list[tuple[Any, ...]]]:
    return {
        table: sorted(
            (tuple(r) for r in await conn.fetch(f"TABLE {schema}.{table}")),
            key=repr,
        )
        for table in tables()
    }


async def _through_both(
    conn: Conn, records: Sequence[RecordedEvent], batch: int = 1
) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, list[tuple[Any, ...]]]]:
    """The same records through the SQL interpreter (`batch` events' writes a call: one at a
    time as the write path, more as the follower) and through memory plus COPY (as a rebuild
    does)."""
    async with conn.transaction():
        for schema in ("by_sql", "by_memory"):
            await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            await create_scratch(conn, schema, indexes=False)
            await add_keys(conn, schema)
        await conn.execute("SET LOCAL search_path = by_sql, public")
        for start in range(0, len(records), batch):
            await writes.execute(
                conn,
                [
                    w
                    for record in records[start : start + batch]
                    for p in reading(type(record.event))
                    for w in p.writes(record)
                ],
            )
        memory = MemoryTables(table_specs())
        for record in records:
            for projection in reading(type(record.event)):
                memory.apply(projection.writes(record))
        await conn.execute("SET LOCAL search_path = by_memory, public")
        await memory.copy_into(conn)
        return await _rows(conn, "by_sql"), await _rows(conn, "by_memory")


def test_handles_names_exactly_the_types_each_projection_reads() -> None:
    for (name, version), data in SAMPLED.items():
        record = _recorded([codec.decode(name, version, data)])[0]
        for projection in ALL:
            reads = bool(projection.writes(record))
            declared = projection.handles is None or type(record.event) in projection.handles
            assert reads == declared, (projection.name, name, version)


async def test_every_sample_gives_the_same_rows_through_both(conn: Conn) -> None:
    events = [codec.decode(name, v, data) for (name, v), data in sorted(SAMPLED.items())]
    by_sql, by_memory = await _through_both(conn, _recorded(events))
    assert by_sql == by_memory
    assert sum(map(len, by_sql.values())) > 20


async def test_edge_cases_give_the_same_rows_through_both(conn: Conn) -> None:
    """NULL loses in greatest(); deletes by a non-key column after single deletes; a key
    inserted again after its delete; writes to rows that do not exist."""

    def pat(token_id: int, secret_hash: str) -> PersonalAccessTokenCreated:
        return PersonalAccessTokenCreated(
            token_id=token_id,
            user_id=7,
            description="t",
            secret_hash=secret_hash,
            secret_hint="h",
            created_at=T0,
            expires_at=T0,
        )

    events: list[DomainEvent] = [
        UserCreated(user_id=7, name="a", username="a", email="a@x", root_role=3, created_at=T0),
        pat(1, "s1"),
        pat(2, "s2"),
        PersonalAccessTokensSeen(seen=[TokenUse(token_id=1, seen_at=T0 + timedelta(days=2))]),
        PersonalAccessTokensSeen(seen=[TokenUse(token_id=1, seen_at=T0 + timedelta(days=1))]),
        PersonalAccessTokensSeen(seen=[TokenUse(token_id=3, seen_at=T0)]),  # no such token
        PersonalAccessTokenDeleted(token_id=2, user_id=8),  # wrong owner: nothing
        UserSignedIn(user_id=7, seen_at=T0, session_hash="x1", session_expires_at=T0),
        UserSignedIn(user_id=7, seen_at=T0, session_hash="x2", session_expires_at=T0),
        UserSignedOut(user_id=7, session_hash="x1"),
        UserSignedIn(user_id=9, seen_at=T0, session_hash="x3", session_expires_at=T0),
        UserDeleted(user_id=7, name=None, username=None, email=None),
        pat(1, "s3"),
        UserSignedIn(user_id=7, seen_at=T0, session_hash="x4", session_expires_at=T0),
        api_token_created(1, seen_at=T0),
        api_token_created(2),
        ApiTokensSeen(seen=[ApiTokenUse(token_id=1, seen_at=T0 + timedelta(days=2))]),
        ApiTokensSeen(seen=[ApiTokenUse(token_id=1, seen_at=T0 + timedelta(days=1))]),
        ApiTokensSeen(seen=[ApiTokenUse(token_id=3, seen_at=T0)]),  # no such token
    ]
    by_sql, by_memory = await _through_both(conn, _recorded(events))
    assert by_sql == by_memory
    assert [r[0] for r in by_sql["personal_access_tokens"]] == [1]
    seen = await conn.fetch("SELECT id, seen_at FROM by_sql.api_tokens ORDER BY id")
    assert [tuple(r) for r in seen] == [(1, T0 + timedelta(days=2)), (2, None)]
    assert sorted(r[0] for r in by_sql["sessions"]) == ["x3", "x4"]


async def test_a_deleted_flag_leaves_no_row_and_its_successor_starts_afresh(conn: Conn) -> None:
    """A flag with a row in every table, deleted (one batch with its earlier writes, as a
    follower runs them, and one at a time), then a flag created with its name: only the new
    flag's rows, and the other flag's rows untouched."""
    strategy = StrategyData(
        id="00000000-0000-0000-0000-000000000001",
        name="default",
        title=None,
        disabled=False,
        sort_order=0,
        constraints=[],
        parameters={},
        variants=[],
        segments=[],
    )
    events: list[DomainEvent] = [
        FeatureCreated(
            name=name,
            project="p",
            feature_type="release",
            description=None,
            impression_data=False,
            created_at=T0,
        )
        for name in ("gone", "stays")
    ]
    for n, name in enumerate(("gone", "stays")):
        events += [
            StrategyAdded(
                name=name,
                project="p",
                environment="dev",
                strategy=msgspec.structs.replace(strategy, id=strategy.id[:-1] + str(n)),
                added_at=T0,
            ),
            FeatureEnvironmentEnabled(name=name, project="p", environment="dev"),
            FeatureTagged(name=name, tag_type="simple", value="t", tagged_at=T0, project="p"),
        ]
    events += [
        DependencyAdded(name="gone", project="p", parent="stays", enabled=True, variants=[]),
        FeatureArchived(name="gone", project="p", archived_at=T0),
        FeatureDeleted(
            name="gone",
            project="p",
            feature_type="release",
            description=None,
            stale=False,
            impression_data=False,
            created_at=T0,
            archived_at=T0,
            deleted_at=T0,
        ),
        FeatureCreated(
            name="gone",
            project="q",
            feature_type="experiment",
            description="again",
            impression_data=True,
            created_at=T0 + timedelta(days=1),
        ),
    ]
    for batch in (1, len(events)):
        by_sql, by_memory = await _through_both(conn, _recorded(events), batch=batch)
        assert by_sql == by_memory
        assert [(r[0], r[1], r[2]) for r in by_sql["features"]] == [
            ("gone", "q", "experiment"),
            ("stays", "p", "release"),
        ]
        for table, column in (
            ("feature_strategies", 1),
            ("feature_environments", 0),
            ("feature_tags", 0),
        ):
            assert [r[column] for r in by_sql[table]] == ["stays"], table
        assert by_sql["feature_dependencies"] == []


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(min_value=0, max_value=2**32))
async def test_generated_logs_give_the_same_rows_through_both(dsn: str, seed: int) -> None:
    from eventlog import connections  # noqa: PLC0415 - a connection per example

    conn = await connections.connect(dsn)
    tx = conn.transaction()  # rolled back: each example starts from an empty log
    await tx.start()
    try:
        await generate(conn, 1_500, seed=seed)
        records = [r async for batch in eventlog.read_all(conn) for r in batch]
        by_sql, by_memory = await _through_both(conn, records)
        assert by_sql == by_memory
        assert len(by_sql["features"]) > 10
        # In batches, as the follower applies them: writes regrouped and counts merged
        # (writes.execute) give the same rows.
        by_sql, by_memory = await _through_both(conn, records, batch=500)
        assert by_sql == by_memory
    finally:
        await tx.rollback()
        await conn.close()


async def test_replay_rewrites_nothing_when_the_read_models_are_right(conn: Conn) -> None:
    await generate(conn, 2_000, seed=3)
    assert await replay(conn) > 0  # the generator appends without inline projections
    before = {t: await conn.fetch(f"SELECT ctid, xmin FROM readmodel.{t}") for t in tables()}
    await replay(conn)
    after = {t: await conn.fetch(f"SELECT ctid, xmin FROM readmodel.{t}") for t in tables()}
    assert after == before
    assert (await verify(conn)).ok


async def test_replay_mends_rows_changed_removed_or_added_by_hand(conn: Conn) -> None:
    await generate(conn, 2_000, seed=4)
    await replay(conn)
    right = await _rows(conn, "readmodel")
    await conn.execute("UPDATE readmodel.features SET stale = NOT stale WHERE name LIKE 'flag-1%'")
    await conn.execute("DELETE FROM readmodel.feature_strategies WHERE random() < 0.3")
    await conn.execute(
        "INSERT INTO readmodel.segments (id, name, constraints, created_at) "
        "VALUES (9999, 'forged', '[]', now())"
    )
    assert not (await verify(conn)).ok
    await replay(conn)
    assert await _rows(conn, "readmodel") == right
    assert (await verify(conn)).ok


UNIQUE_BEYOND_KEY = """
SELECT count(*) FROM pg_index i
WHERE i.indrelid = ('readmodel.' || $1)::regclass AND i.indisunique AND NOT i.indisprimary
"""


async def test_a_table_said_keyed_only_has_no_unique_index_but_its_key(conn: Conn) -> None:
    """writes.execute runs writes to rows apart in another order only on such tables: a
    unique index on other columns could refuse one order and not the other."""
    keyed_only = [t for t in table_specs() if t.keyed_only]
    assert keyed_only
    for table in keyed_only:
        assert await conn.fetchval(UNIQUE_BEYOND_KEY, table.name) == 0, table.name


def test_a_batch_of_deletions_counts_its_actor_once_and_renames_in_one_run() -> None:
    """What an async batch of one-user deletions writes to activity_daily (per deletion: two
    counts of the admin's row, and the renaming of the erased person's rows) goes as two
    statements: one count of the admin's row with every position, one executemany."""
    row = {"day": T0.date(), "actor_kind": "api-token", "actor_id": "api-token:1"}
    batch: list[writes.Write] = []
    for person in range(1, 51):
        for position in (2 * person, 2 * person + 1):
            values = row | {"actor_name": "admin", "last_position": position}
            batch.append(writes.Count(ACTIVITY_DAILY, values, "events", "last_position"))
        where = {"actor_kind": "user", "actor_id": f"user:{person}"}
        batch.append(writes.Update(ACTIVITY_DAILY, where, {"actor_name": "[erased]"}))
    runs = writes._runs(batch)  # the grouping itself is what is tested
    assert [(type(r.writes[0]), len(r.writes)) for r in runs] == [
        (writes.Count, 100),
        (writes.Update, 50),
    ]
    sql, rows = writes._counted(runs[0].writes)
    assert len(rows) == 1
    assert rows[0][-1] == list(range(2, 102))
    assert "cardinality" in sql


async def test_a_batch_of_deleted_accounts_is_one_statement(conn: Conn) -> None:
    """Inactive users deleted together (one UsersDeleted each, and one of three): their rows,
    passwords, tokens and sessions go in one statement (deletes by one column as `= ANY`,
    the tables' statements joined), with the rows the writes one at a time leave."""
    people = range(1, 9)
    made: list[DomainEvent] = []
    for i in people:
        made.append(
            UserCreated(
                user_id=i, name=f"n{i}", username=f"u{i}", email=None, root_role=3, created_at=T0
            )
        )
        made.append(
            PersonalAccessTokenCreated(
                token_id=i,
                user_id=i,
                description="t",
                secret_hash=f"h{i}",
                secret_hint="x",
                created_at=T0,
                expires_at=T0 + timedelta(days=1),
            )
        )
        made.append(
            UserSignedIn(
                user_id=i, seen_at=T0, session_hash=f"s{i}", session_expires_at=T0 + timedelta(1)
            )
        )

    def gone(ids: list[int]) -> UsersDeleted:
        users = [
            UserRecord(
                user_id=i,
                name=f"n{i}",
                username=f"u{i}",
                email=None,
                root_role=3,
                created_at=T0,
                seen_at=None,
            )
            for i in ids
        ]
        return UsersDeleted(users=users, inactive_days=180, deleted_at=T0)

    deletions = [gone([1]), gone([2]), gone([3, 4, 5]), gone([7])]
    records = _recorded([*made, *deletions])
    deleting = [
        w for r in records[len(made) :] for p in reading(type(r.event)) for w in p.writes(r)
    ]
    assert len(writes.statements(deleting)) == 1
    by_sql, by_memory = await _through_both(conn, records, batch=len(records))
    assert by_sql == by_memory
    assert sorted(r[0] for r in by_sql["users"]) == [6, 8]
    assert sorted(r[0] for r in by_sql["personal_access_tokens"]) == [6, 8]
    one_at_a_time, _ = await _through_both(conn, records, batch=1)
    assert one_at_a_time == by_sql


ACTORS = st.sampled_from(
    [("api-token", "api-token:1"), ("user", "user:1"), ("user", "user:2"), ("system", "erasure")]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(
            ACTORS,
            st.integers(min_value=0, max_value=2),  # day
            st.one_of(st.none(), st.integers(min_value=1, max_value=3)),  # a person erased
            st.booleans(),  # the same event again (a replayed position: its guard not above)
        ),
        max_size=40,
    ),
    batch=st.sampled_from([1, 3, 40]),
)
async def test_activity_counts_regrouped_and_merged_give_the_rows_one_at_a_time_does(
    conn: Conn,
    steps: list[tuple[tuple[str, str], int, int | None, bool]],
    batch: int,
) -> None:
    """Counts of one row with rising guards go as one statement, and counts move past the
    renaming of an erased person's rows when they count other rows; repeated positions (not
    above the guard), other days and an erased person who acted themselves keep the order."""
    records: list[RecordedEvent] = []
    position = 0
    for (kind, actor_id), day, erased, again in steps:
        position += 0 if again and position else 1
        metadata = Metadata(actor_id=actor_id, actor_name=f"n{actor_id}", actor_kind=kind)
        event: DomainEvent = (
            PersonalDataErased(person_id=erased, reason="deleted", had_key=True)
            if erased is not None
            else UserSignedOut(user_id=1, session_hash="s")
        )
        records.append(recorded(event, position, at=T0 + timedelta(days=day), metadata=metadata))
    by_sql, by_memory = await _through_both(conn, records, batch=batch)
    assert by_sql["activity_daily"] == by_memory["activity_daily"]


PRIMARY_KEY = """
SELECT array_agg(a.attname::text ORDER BY k.ord)
FROM pg_constraint c
CROSS JOIN unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
WHERE c.conrelid = ('readmodel.' || $1)::regclass AND c.contype = 'p'
"""


async def test_every_table_key_is_the_tables_primary_key(conn: Conn) -> None:
    """The memory interpreter keys rows by Table.key; PostgreSQL by the primary key."""
    for table in table_specs():
        assert tuple(await conn.fetchval(PRIMARY_KEY, table.name)) == table.key, table.name


@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(min_value=0, max_value=2**32))
async def test_the_groups_of_a_parallel_replay_rebuild_what_one_process_does(
    dsn: str, seed: int
) -> None:
    """Every group (the flags' split by stream among them, each reading only its types and
    skipping what no projection of it reads) into one schema: the same rows as a whole
    rebuild into another."""
    from eventlog import connections  # noqa: PLC0415 - a connection per example

    conn = await connections.connect(dsn)
    tx = conn.transaction()
    await tx.start()
    try:
        await generate(conn, 3_000, seed=seed)
        head = await eventlog.head(conn)
        for schema in ("whole", "grouped"):
            await create_scratch(conn, schema, indexes=False)
        await conn.execute(set_search_path("whole"))
        await rebuild(conn, dict.fromkeys(names(), head))
        await conn.execute(set_search_path("grouped"))
        counts = [await rebuild_group(conn, group, head) for group in GROUPS]
        assert await _rows(conn, "whole") == await _rows(conn, "grouped")
        assert len((await _rows(conn, "whole"))["features"]) > 20
        assert counts[-1] == head  # the activity counts read every event
    finally:
        await tx.rollback()
        await conn.close()


def test_the_groups_hold_every_projection_once_and_every_shard() -> None:
    seen: dict[str, set[int]] = {}
    for group in GROUPS:
        for projection in group.projections:
            assert group.shards == 1 or projection.by_stream, projection.name
            assert group.shard not in seen.setdefault(projection.name, set())
            seen[projection.name].add(group.shard)
    shards = {p.name: max(g.shards for g in GROUPS if p in g.projections) for p in ALL}
    assert seen == {p.name: set(range(shards[p.name])) for p in ALL}


PROJECTION_TYPES = [
    (projection, cls)
    for projection in ALL
    for cls in codec.EVENT_TYPES.values()
    if projection.handles is None or cls in projection.handles
]
ANY_EVENT = st.sampled_from(list(codec.EVENT_TYPES.values())).flatmap(for_type)


@pytest.mark.parametrize(
    ("projection", "cls"),
    PROJECTION_TYPES,
    ids=[f"{p.name}-{c.type_name()}" for p, c in PROJECTION_TYPES],
)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_projections_read_no_more_than_they_say(
    projection: Projection, cls: type[Event], data: st.DataObject
) -> None:
    """A projection that does not read the metadata writes the same whatever it says, and one
    that does not read the event, whatever it is: a rebuild may leave them undecoded."""
    record = _recorded([data.draw(for_type(cls))])[0]
    if not projection.reads_metadata:
        changed = msgspec.structs.replace(record, metadata=data.draw(for_type(Metadata)))
        assert projection.writes(changed) == projection.writes(record)
    if not projection.reads_event:
        changed = msgspec.structs.replace(record, event=data.draw(ANY_EVENT))
        assert projection.writes(changed) == projection.writes(record)
    if isinstance(projection.reads_event, frozenset) and cls not in projection.reads_event:
        changed = msgspec.structs.replace(record, event=UNREAD_EVENT)
        assert projection.writes(changed) == projection.writes(record)


async def test_a_large_log_is_replayed_by_worker_processes(
    dsn: str, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process per group (projections/worker.py), as `replay` runs them from PARALLEL_FROM
    events on: the read models they make verify, and a second replay rewrites nothing."""
    monkeypatch.setattr(replay_module, "PARALLEL_FROM", 1)
    await generate(conn, 2_000, seed=5)
    assert await replay(conn, dsn) >= 2_000
    assert (await verify(conn)).ok
    before = {t: await conn.fetch(f"SELECT ctid, xmin FROM readmodel.{t}") for t in tables()}
    await replay(conn, dsn)
    after = {t: await conn.fetch(f"SELECT ctid, xmin FROM readmodel.{t}") for t in tables()}
    assert after == before


async def test_a_failed_worker_stops_the_replay_and_changes_nothing(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay_module, "PARALLEL_FROM", 1)
    await generate(conn, 500, seed=6)
    await replay(conn)
    right = await _rows(conn, "readmodel")
    with pytest.raises(replay_module.WorkerFailed, match="rebuild worker failed"):
        await replay(conn, "postgresql://nobody@127.0.0.1:1/nothing")
    assert await _rows(conn, "readmodel") == right
    assert await conn.fetchval("SELECT to_regnamespace($1)", replay_module.REPLAY_SCHEMA) is None
