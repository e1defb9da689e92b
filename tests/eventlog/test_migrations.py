"""Forward-only migrations under an advisory lock, on PostgreSQL 18 and 15."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from eventlog import appends, checks, connections, migrations
from eventlog.events.base import Metadata
from eventlog.events.features import FeatureArchived, FeatureCreated, FeatureStaleSet
from projections import registry, writes
from projections.verify import verify

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from eventlog.codec import DomainEvent, RecordedEvent
    from eventlog.connections import Conn
    from tests.pg import PgServer


@pytest.fixture
async def empty_dsn(pg_server: PgServer) -> AsyncIterator[str]:
    """A database with no schema at all (created from template0), dropped afterwards."""
    name = f"empty_{uuid.uuid4().hex}"  # (an object's id() is reused once it is freed)
    conn = await asyncpg.connect(pg_server.admin_dsn)
    try:
        await conn.execute(f"CREATE DATABASE {name} TEMPLATE template0")
    finally:
        await conn.close()
    yield pg_server.admin_dsn.replace("/postgres?", f"/{name}?")
    conn = await asyncpg.connect(pg_server.admin_dsn)
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        await conn.close()


async def test_files_are_numbered_without_gaps() -> None:
    files = migrations.load_migrations()
    assert [m.version for m in files] == list(range(1, len(files) + 1))
    assert all(Path(migrations.SQL_DIR, f"{m.version:04d}_{m.name}.sql").exists() for m in files)


async def test_two_concurrent_runs_apply_each_migration_once(empty_dsn: str) -> None:
    first, second = await connections.connect(empty_dsn), await connections.connect(empty_dsn)
    try:
        applied = await asyncio.gather(migrations.migrate(first), migrations.migrate(second))
        expected = [f"{m.version:04d}_{m.name}" for m in migrations.load_migrations()]
        assert sorted(applied, key=len) == [[], expected]
        rows = await first.fetch("SELECT version FROM schema_migrations ORDER BY version")
        assert [r["version"] for r in rows] == list(range(1, len(expected) + 1))
        assert await migrations.migrate(first) == []
        assert await migrations.schema_version(first) == len(expected)
    finally:
        await first.close()
        await second.close()


async def test_a_changed_applied_file_stops_the_start(any_conn: Conn) -> None:
    files = migrations.load_migrations()
    edited = migrations.Migration(files[0].version, files[0].name, files[0].sql + "\n-- x")
    with pytest.raises(migrations.MigrationError, match=r"0001_event_store\.sql was changed"):
        await migrations.migrate(any_conn, [edited, *files[1:]])
    # The lock was released: a correct run still goes through.
    assert await migrations.migrate(any_conn) == []


async def test_a_failing_migration_applies_nothing_of_itself(any_conn: Conn) -> None:
    broken = migrations.Migration(99, "broken", "CREATE TABLE half_done (x int); SELECT 1/0;")
    with pytest.raises(asyncpg.DivisionByZeroError):
        await migrations.migrate(any_conn, [*migrations.load_migrations(), broken])
    assert await any_conn.fetchval("SELECT to_regclass('half_done')") is None
    assert await any_conn.fetchval("SELECT max(version) FROM schema_migrations") == len(
        migrations.load_migrations()
    )


def test_badly_named_or_gapped_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "0001_ok.sql").write_text("SELECT 1;")
    (tmp_path / "0003_gap.sql").write_text("SELECT 1;")
    with pytest.raises(migrations.MigrationError, match="without gaps"):
        migrations.load_migrations(tmp_path)
    (tmp_path / "2_bad name.sql").write_text("SELECT 1;")
    with pytest.raises(migrations.MigrationError, match="NNNN_description"):
        migrations.load_migrations(tmp_path)


def test_the_schema_file_beside_the_migrations_is_no_migration(tmp_path: Path) -> None:
    (tmp_path / "0001_ok.sql").write_text("SELECT 1;")
    (tmp_path / "schema.sql").write_text("CREATE TABLE made_by_the_migrations (x int);")
    assert [m.name for m in migrations.load_migrations(tmp_path)] == ["ok"]


def test_a_directory_without_migrations_is_refused_not_taken_as_an_empty_schema(
    tmp_path: Path,
) -> None:
    with pytest.raises(migrations.MigrationError, match="no migration files"):
        migrations.load_migrations(tmp_path)


async def test_a_log_written_before_0012_gets_its_search_columns_and_keeps_verifying(
    empty_dsn: str,
) -> None:
    """An installation of the previous release: its events get kind, project and author
    columns; the head takes their latest time, and the previous release's call of the append
    function (with its own time, now ignored) still works."""
    files = migrations.load_migrations()
    conn = await connections.connect(empty_dsn)
    try:
        await migrations.migrate(conn, files[:11])
        # The previous release's statement, prepared (and cached) before the migration.
        old_append = (
            "SELECT out_position, out_hash FROM eventstore_append("
            + ", ".join(f"${n}" for n in range(1, 10))
            + ")"
        )
        metadata = '{"actor_id": "user:7", "actor_name": "Ada", "actor_kind": "user"}'
        stale = '{"type": "FeatureStaleSet", "name": "f", "project": "p", "stale": true}'
        later = datetime(2030, 1, 1, tzinfo=UTC)
        async with conn.transaction():
            await conn.fetch(
                old_append,
                "feature",
                "f",
                1,
                [uuid.uuid4()],
                ["FeatureStaleSet"],
                [1],
                [stale],
                metadata,
                later,
            )
        await migrations.migrate(conn)
        row = await conn.fetchrow("SELECT kind, project, actor_user_id, recorded_at FROM events")
        assert row is not None
        assert (row["kind"], row["project"], row["actor_user_id"]) == ("feature-stale-on", "p", 7)
        assert await conn.fetchval("SELECT recorded_at FROM log_head") == later
        async with conn.transaction():  # the previous release's call, after the migration
            out = await conn.fetchrow(
                old_append,
                "feature",
                "f",
                2,
                [uuid.uuid4()],
                ["FeatureStaleSet"],
                [1],
                [stale.replace("true", "false")],
                metadata,
                datetime(2000, 1, 1, tzinfo=UTC),
            )
        assert out is not None
        rows = await conn.fetch("SELECT kind, recorded_at FROM events ORDER BY position")
        assert [r["kind"] for r in rows] == ["feature-stale-on", "feature-stale-off"]
        assert rows[1]["recorded_at"] == later  # given in the global section, never behind
        async with conn.transaction():  # the chain covers the time the head gave
            links = [link async for link in checks.chain(conn)]
        previous = bytes(32)
        for link in links:
            assert link.prev_hash == previous
            assert hashlib.sha256(previous + link.canonical.encode()).digest() == link.hash
            previous = link.hash
    finally:
        await conn.close()


async def test_dropping_the_old_search_indexes_lets_readers_through(empty_dsn: str) -> None:
    """sql/0021 drops two indexes of readmodel.users, which needs the table's ACCESS EXCLUSIVE
    lock. Behind a long reader (a report, `verify`) a plain DROP INDEX would wait in the lock
    queue, and every new reader of users behind it (searches would answer 503 for as long as
    the reader runs); here each try waits 100 ms at most, so new readers get through, and the
    drops happen once the long reader is done."""
    upgrading = await connections.connect(empty_dsn)
    long_reader = await connections.connect(empty_dsn)
    reader = await connections.connect(empty_dsn)
    old_indexes = "users_search_people_trgm", "users_search_mail_trgm"
    try:
        files = migrations.load_migrations()
        assert files[20].name == "drop_the_old_search_indexes"
        await migrations.migrate(upgrading, files[:20])  # the schema before 0021
        assert await _index_names(reader, old_indexes) == set(old_indexes)
        await long_reader.execute("BEGIN")
        await long_reader.fetchval("SELECT count(*) FROM readmodel.users")
        migrating = asyncio.create_task(migrations.migrate(upgrading, files[:21]))  # up to 0021
        await reader.execute("SET lock_timeout = '2s'")  # 20 tries' worth of one wait
        for _ in range(15):  # 1.5 s of new readers while the drop keeps trying
            assert await reader.fetchval("SELECT count(*) FROM readmodel.users") == 0
            await asyncio.sleep(0.1)
        assert not migrating.done()  # the drops wait for the long reader
        await long_reader.execute("COMMIT")
        assert await asyncio.wait_for(migrating, 30) == ["0021_drop_the_old_search_indexes"]
        assert await _index_names(reader, old_indexes) == set()
    finally:
        for conn in (upgrading, long_reader, reader):
            await conn.close()


async def _index_names(conn: Conn, names: tuple[str, ...]) -> set[str]:
    rows = await conn.fetch(
        "SELECT indexname FROM pg_indexes WHERE schemaname = 'readmodel' AND indexname = ANY($1)",
        list(names),
    )
    return {r["indexname"] for r in rows}


async def test_a_log_written_before_0025_gets_its_flags_collaborators(empty_dsn: str) -> None:
    """sql/0025 fills readmodel.feature_collaborators from the flags' events already in the log
    exactly as the projection would have (verify rebuilds it and compares): authors as
    Unleash's ids, a token's first name, the creator, and for a flag made again under its name
    only the authors since."""

    async def before_0025(conn: Conn, records: Sequence[RecordedEvent]) -> None:
        """The inline projections as they were before 0025 (no collaborators table, nor the
        links' and lifecycle's of 0033, which fills them from the log the same way)."""
        await writes.execute(
            conn,
            [
                w
                for record in records
                for projection in registry.reading(type(record.event), registry.INLINE)
                if projection.name not in {"feature_collaborators", "flag_extras"}
                for w in projection.writes(record)
            ],
        )

    def by(kind: str, actor_id: str, name: str = "n") -> Metadata:
        return Metadata(actor_id=actor_id, actor_name=name, actor_kind=kind)

    at = datetime(2026, 1, 1, tzinfo=UTC)

    def created(name: str) -> FeatureCreated:
        return FeatureCreated(
            name=name,
            project="p",
            feature_type="release",
            description=None,
            impression_data=False,
            created_at=at,
        )

    def stale(value: bool) -> FeatureStaleSet:
        return FeatureStaleSet(name="f", project="p", stale=value)

    history: list[tuple[str, DomainEvent, Metadata]] = [
        ("f", created("f"), by("api-token", "api-token:1", "ci")),
        ("f", stale(True), by("user", "user:7", "Ann")),
        ("f", stale(False), by("api-token", "api-token:2", "ops")),
        ("f", stale(True), by("system", "system", "system")),
        ("g", created("g"), by("service-account", "service-account:9")),
        ("g", FeatureArchived(name="g", project="p", archived_at=at), by("user", "user:7")),
        ("g", created("g"), by("api-token", "api-token:2", "ops")),
    ]
    files = migrations.load_migrations()
    assert files[24].name == "flag_page"
    conn = await connections.connect(empty_dsn)
    try:
        await migrations.migrate(conn, files[:24])
        for name, event, metadata in history:
            async with conn.transaction():
                await appends.append(
                    conn, ("feature", name), "any", [event], metadata, inline=before_0025
                )
        applied = await migrations.migrate(conn)  # 0025 and those after it
        assert applied[0] == "0025_flag_page"
        rows = await conn.fetch(
            "SELECT feature_name, user_id, actor_name, created, last_version"
            " FROM readmodel.feature_collaborators ORDER BY feature_name, last_version"
        )
        assert [tuple(r) for r in rows] == [
            ("f", 7, None, False, 2),
            ("f", -42, "ci", True, 3),
            ("f", -1337, "system", False, 4),
            ("g", -42, "ops", True, 3),
        ]
        assert (await verify(conn)).ok
    finally:
        await conn.close()
