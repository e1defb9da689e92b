"""Projections: inline in the write transaction, async with checkpoints, replay, verify, export."""

from __future__ import annotations

import asyncio
import io
import json
from typing import TYPE_CHECKING

import pytest

from eventlog import connections
from eventlog.events.api_tokens import ApiTokenDeleted
from projections import activity
from projections.base import Projection
from projections.follower import catch_up_once, run_async_projections
from projections.replay import replay
from projections.verify import verify
from service import cli
from tests.factories import api_token_created, append, noted

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent
    from eventlog.connections import Conn
    from projections.writes import Write

pytestmark = pytest.mark.usefixtures("any_dsn")

TOKEN_ROWS = "SELECT id, token_name, type FROM api_tokens ORDER BY id"


async def test_inline_projection_writes_in_the_same_transaction(
    any_conn: Conn,
) -> None:
    await append(any_conn, [api_token_created(1)], stream=("api-token", "1"))
    tx = any_conn.transaction()
    await tx.start()
    await append(any_conn, [api_token_created(2)], stream=("api-token", "2"), expected="no-stream")
    assert len(await any_conn.fetch(TOKEN_ROWS)) == 2  # read-your-writes inside the transaction
    await tx.rollback()
    assert [tuple(r) for r in await any_conn.fetch(TOKEN_ROWS)] == [(1, "token-1", "client")]
    await append(
        any_conn, [ApiTokenDeleted(token_id=1, token_name="token-1")], stream=("api-token", "1")
    )
    assert await any_conn.fetch(TOKEN_ROWS) == []


async def test_async_projection_catches_up_and_commits_its_checkpoint(
    any_dsn: str, any_conn: Conn
) -> None:
    for i in range(5):
        await append(any_conn, [noted(i), noted(i)])
    pool = await connections.create_pool(any_dsn, 2)
    assert pool is not None
    try:
        assert await catch_up_once(pool, activity.PROJECTION, batch=4) == 4
        assert await catch_up_once(pool, activity.PROJECTION, batch=4) == 4
        assert await catch_up_once(pool, activity.PROJECTION, batch=4) == 2
        assert await catch_up_once(pool, activity.PROJECTION, batch=4) == 0
    finally:
        await pool.close()
    row = await any_conn.fetchrow("SELECT actor_id, events FROM activity_daily")
    assert row is not None
    assert tuple(row) == ("test", 10)
    checkpoint = "SELECT position FROM projection_checkpoints WHERE name = 'activity_daily'"
    assert await any_conn.fetchval(checkpoint) == 10


async def test_a_projection_of_some_types_follows_past_the_others(
    any_dsn: str, any_conn: Conn
) -> None:
    """A follower that reads only some types moves its checkpoint to the head, past the events
    of other types after the last it read: its lag reaches 0, and nothing is read again."""
    seen: list[int] = []

    def writes(recorded: RecordedEvent) -> list[Write]:
        assert isinstance(recorded.event, ApiTokenDeleted)
        seen.append(recorded.event.token_id)
        return []

    deleted_only = Projection(
        name="test_deleted_tokens",
        mode="async",
        tables=(),
        writes=writes,
        handles=frozenset({ApiTokenDeleted}),
    )
    await any_conn.execute(
        "INSERT INTO projection_checkpoints (name) VALUES ($1)", "test_deleted_tokens"
    )
    await append(
        any_conn, [noted(1), ApiTokenDeleted(token_id=1, token_name="t"), noted(2), noted(3)]
    )
    checkpoint = "SELECT position FROM projection_checkpoints WHERE name = 'test_deleted_tokens'"
    pool = await connections.create_pool(any_dsn, 2)
    assert pool is not None
    try:
        assert await catch_up_once(pool, deleted_only) == 1
        assert await any_conn.fetchval(checkpoint) == 4  # the head, past noted(2) and noted(3)
        assert await catch_up_once(pool, deleted_only) == 0
        await append(any_conn, [noted(4)])
        assert await catch_up_once(pool, deleted_only) == 0
        assert await any_conn.fetchval(checkpoint) == 5
    finally:
        await pool.close()
    assert seen == [1]


async def test_a_locked_checkpoint_belongs_to_another_replica(any_dsn: str, any_conn: Conn) -> None:
    await append(any_conn, [noted(1)])
    pool = await connections.create_pool(any_dsn, 2)
    assert pool is not None
    try:
        async with any_conn.transaction():
            await any_conn.execute(
                "SELECT 1 FROM projection_checkpoints WHERE name = 'activity_daily' FOR UPDATE"
            )
            assert await catch_up_once(pool, activity.PROJECTION) == 0  # skipped, not blocked
        assert await catch_up_once(pool, activity.PROJECTION) == 1
    finally:
        await pool.close()


async def test_the_runner_wakes_on_notify(any_dsn: str, any_conn: Conn) -> None:
    pool = await connections.create_pool(any_dsn, 3)
    assert pool is not None
    stop = asyncio.Event()
    task = asyncio.create_task(run_async_projections(pool, any_dsn, stop))
    try:
        await asyncio.sleep(0.2)
        await append(any_conn, [noted(1), noted(2), noted(3)])
        async with asyncio.timeout(4):  # under the 5 s poll: NOTIFY woke it (0.5 s coalescing)
            while await any_conn.fetchval("SELECT sum(events) FROM activity_daily") != 3:
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)
        await pool.close()


async def test_replay_rebuilds_read_models_from_the_log(any_conn: Conn) -> None:
    await append(any_conn, [api_token_created(1)], stream=("api-token", "1"))
    await append(any_conn, [api_token_created(2)], stream=("api-token", "2"))
    before = [tuple(r) for r in await any_conn.fetch("SELECT * FROM api_tokens ORDER BY id")]
    await any_conn.execute("DELETE FROM api_tokens WHERE id = 1")
    await any_conn.execute("UPDATE api_tokens SET token_name = 'forged' WHERE id = 2")
    assert await replay(any_conn) == 2
    after = [tuple(r) for r in await any_conn.fetch("SELECT * FROM api_tokens ORDER BY id")]
    assert after == before
    checkpoint = "SELECT position FROM projection_checkpoints WHERE name = 'activity_daily'"
    assert await any_conn.fetchval(checkpoint) == 2
    assert (await verify(any_conn)).ok


async def test_verify_passes_on_a_healthy_log(any_conn: Conn) -> None:
    await append(any_conn, [api_token_created(1)], stream=("api-token", "1"))
    await append(any_conn, [noted(1), noted(2)])
    report = await verify(any_conn)
    assert report.problems == []
    assert (report.events, report.streams) == (3, 2)
    assert report.read_models == {
        "api_tokens": "matches rebuild",
        "addons": "matches rebuild",
        "users": "matches rebuild",
        "user_passwords": "matches rebuild",
        "personal_access_tokens": "matches rebuild",
        "sessions": "matches rebuild",
        "password_reset_tokens": "matches rebuild",
        "environments": "matches rebuild",
        "projects": "matches rebuild",
        "project_environments": "matches rebuild",
        "segments": "matches rebuild",
        "features": "matches rebuild",
        "feature_environments": "matches rebuild",
        "feature_strategies": "matches rebuild",
        "feature_tags": "matches rebuild",
        "feature_dependencies": "matches rebuild",
        "tag_types": "matches rebuild",
        "tags": "matches rebuild",
        "feature_types": "matches rebuild",
        "strategy_definitions": "matches rebuild",
        "strategy_deprecations": "matches rebuild",
        "context_fields": "matches rebuild",
        "favorite_features": "matches rebuild",
        "favorite_projects": "matches rebuild",
        "feature_creators": "matches rebuild",
        "feature_collaborators": "matches rebuild",
        "user_splashes": "matches rebuild",
        "user_feedback": "matches rebuild",
        "feature_links": "matches rebuild",
        "feature_lifecycle": "matches rebuild",
        "feature_first_enabled": "matches rebuild",
        "maintenance_mode": "matches rebuild",
        "frontend_settings": "matches rebuild",
        "applications": "matches rebuild",
        "invite_links": "matches rebuild",
        "invite_link_users": "matches rebuild",
        "activity_daily": "matches rebuild",
        "project_activity_daily": "matches rebuild",
        "feature_lead_times": "matches rebuild",
    }
    assert report.lines()[-1] == "verify: OK"
    # verify leaves no trace of its scratch schema
    assert await any_conn.fetchval("SELECT to_regnamespace('verify_scratch')") is None


async def test_verify_finds_a_read_model_that_drifted(any_conn: Conn) -> None:
    await append(any_conn, [api_token_created(1)], stream=("api-token", "1"))
    await any_conn.execute("UPDATE api_tokens SET token_name = 'drifted'")
    report = await verify(any_conn)
    assert report.problems == ["read model api_tokens: 2 rows differ from a rebuild"]
    assert report.lines()[-1] == "verify: FAILED (1 problems)"


async def _tamper(conn: Conn, statement: str) -> None:
    """What an attacker with superuser rights could do: bypass the append-only trigger."""
    await conn.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
    await conn.execute(statement)
    await conn.execute("ALTER TABLE events ENABLE TRIGGER events_append_only")


async def test_verify_finds_an_edited_event(any_conn: Conn) -> None:
    await append(any_conn, [noted(1), noted(2), noted(3)])
    await _tamper(
        any_conn,
        """UPDATE events SET data = '{"type": "SegmentDeleted", "segment_id": 9, "name": ""}'
                               WHERE position = 2""",
    )
    assert "event 2: hash does not match its content" in (await verify(any_conn)).problems


async def test_verify_finds_an_event_whose_search_columns_were_changed(any_conn: Conn) -> None:
    """The columns the log is searched by are filled by the append (0016), not generated: an
    edit of them alone leaves the hash chain intact, and verify still finds it."""
    await append(any_conn, [noted(1), noted(2)])
    assert (await verify(any_conn)).ok
    await _tamper(any_conn, "UPDATE events SET kind = 'feature-created' WHERE position = 2")
    problems = (await verify(any_conn)).problems
    assert problems == ["event 2: kind, project or actor_user_id is not what the event gives"]


async def test_verify_finds_a_deleted_event(any_conn: Conn) -> None:
    await append(any_conn, [noted(1), noted(2), noted(3)])
    await _tamper(any_conn, "DELETE FROM events WHERE position = 2")
    problems = (await verify(any_conn)).problems
    assert "positions are not 1..N: 2 events span 1..3" in problems
    assert "event 3: prev_hash does not match event before it" in problems
    assert any(p.startswith("stream test/") for p in problems)


async def test_verify_finds_an_event_that_does_not_decode(any_conn: Conn) -> None:
    await append(any_conn, [noted(1)])
    await _tamper(any_conn, "UPDATE events SET type = 'NoSuchEvent'")
    problems = (await verify(any_conn)).problems
    assert "event 1 (NoSuchEvent) does not decode: NoSuchEvent" in problems


async def test_export_writes_ndjson_in_position_order(any_conn: Conn) -> None:
    await append(any_conn, [noted(1, "a"), noted(2, "b")], stream=("test", "s"))
    out = io.StringIO()
    assert await cli.export(any_conn, out) == 2
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["position"] for line in lines] == [1, 2]
    assert lines[1]["data"] == {"type": "SegmentDeleted", "segment_id": 2, "name": "b"}
    assert lines[1]["prev_hash"] == lines[0]["hash"]
    assert lines[0]["prev_hash"] == "00" * 32
    assert lines[0]["metadata"]["actor_id"] == "test"
    assert set(lines[0]) == {
        "position",
        "stream_type",
        "stream_key",
        "stream_version",
        "event_id",
        "type",
        "schema_version",
        "data",
        "metadata",
        "recorded_at",
        "prev_hash",
        "hash",
    }
    out = io.StringIO()
    assert await cli.export(any_conn, out, after=1) == 1


async def test_replay_while_the_runner_follows_the_log(any_dsn: str, any_conn: Conn) -> None:
    for i in range(50):
        await append(any_conn, [noted(i), noted(i)])
    pool = await connections.create_pool(any_dsn, 3)
    stop = asyncio.Event()
    runner = asyncio.create_task(run_async_projections(pool, any_dsn, stop))
    try:
        async with asyncio.timeout(20):
            for _ in range(3):
                await append(any_conn, [noted(0)])
                assert await replay(any_conn) >= 100
    finally:
        stop.set()
        await asyncio.wait_for(runner, 5)
        await pool.close()
    assert await any_conn.fetchval("SELECT sum(events) FROM activity_daily") == 103
    assert (await verify(any_conn)).ok


async def test_replay_and_a_writer_do_not_deadlock(any_dsn: str, any_conn: Conn) -> None:
    """A runner holds the checkpoint rows; replay and an inline write both wait, then finish."""
    await append(any_conn, [api_token_created(1)], stream=("api-token", "1"))
    holder, replayer, writer = [await connections.connect(any_dsn) for _ in range(3)]
    try:
        tx = holder.transaction()
        await tx.start()
        await holder.execute("SELECT * FROM projection_checkpoints FOR UPDATE")
        replaying = asyncio.create_task(replay(replayer))
        await asyncio.sleep(0.3)
        writing = asyncio.create_task(
            append(writer, [api_token_created(2)], stream=("api-token", "2"))
        )
        await asyncio.sleep(0.3)
        await tx.rollback()
        async with asyncio.timeout(10):
            await asyncio.gather(replaying, writing)
    finally:
        for connection in (holder, replayer, writer):
            await connection.close()
    rows = await any_conn.fetch("SELECT id FROM api_tokens ORDER BY id")
    assert [r["id"] for r in rows] == [1, 2]
    assert await any_conn.fetchval("SELECT to_regnamespace('replay_scratch')") is None
    assert (await verify(any_conn)).ok
