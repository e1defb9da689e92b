"""The reporting role (sql/0013) and its logins: they read every view of schema `reporting`,
nothing else, and write nothing; `python -m service reporting-user NAME` makes one."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import re
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit, urlunsplit

import asyncpg
import pytest

from eventlog import connections, migrations
from eventlog.events.features import FeatureCreated
from projections.replay import replay
from projections.verify import verify
from service import bootstrap, reporting
from tests import factories
from tests.factories import ADMIN_TOKEN, work
from tests.pg import Roles, new_login, with_database

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from tests.harness import Harness
    from tests.pg import Cluster, PgServer

ROLE = reporting.REPORTING_ROLE
# The views the migrations made so far. The tests enumerate the catalog, so a new view is
# covered without being named here; this only proves that the enumeration finds them.
KNOWN_VIEWS = {
    "reporting.activity_by_actor_day",
    "reporting.client_instances",
    "reporting.flag_last_seen",
    "reporting.flag_usage_hourly",
    "reporting.features",
    "reporting.features_per_project",
    "reporting.personal_access_tokens",
    "reporting.user_activity",
    "reporting.users",
}
SECRET_TABLES = {
    "readmodel.api_tokens",
    "readmodel.personal_access_tokens",
    "readmodel.sessions",
    "readmodel.user_passwords",
}
LOG_TABLES = {"public.events", "public.streams", "public.log_head"}
# Every relation of the service's schemas (`public` holds the log, sequences, bookkeeping;
# `telemetry` what SDKs report).
RELATIONS = """
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name,
       c.relkind::text AS kind, n.nspname AS schema,
       pg_relation_is_updatable(c.oid, false) AS updatable,
       (SELECT quote_ident(attname) FROM pg_attribute
        WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped
        ORDER BY attnum LIMIT 1) AS first_column
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname IN ('public', 'readmodel', 'reporting', 'telemetry')
  AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
ORDER BY 1
"""
# Columns that hold a credential's hash, wherever they are.
HASH_COLUMNS = """
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS relation,
       a.attname::text AS column_name
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname IN ('public', 'readmodel', 'reporting', 'telemetry')
  AND c.relkind IN ('r', 'p', 'v', 'm') AND a.attnum > 0 AND NOT a.attisdropped
  AND (a.attname LIKE '%hash%' OR a.attname LIKE '%password%')
"""
# Any privilege that writes, on a table, a view, one of their columns or a sequence.
HOLDS_A_WRITE = """
SELECT has_table_privilege($1, $2, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
    OR has_any_column_privilege($1, $2, 'INSERT, UPDATE, REFERENCES')
    OR ($3 = 'S' AND has_sequence_privilege($1, $2, 'USAGE, UPDATE'))
"""
# The log's one writer runs with its caller's rights.
APPEND_AS_THE_LOGIN = """
SELECT * FROM eventstore_append('x', 'y', 1, ARRAY[gen_random_uuid()], ARRAY['T'], ARRAY[1],
                                ARRAY['{}'::jsonb], '{}'::jsonb, now())
"""
# pg_relation_is_updatable's bit for each command (1 << CmdType).
UPDATABLE = {"UPDATE": 4, "INSERT": 8, "DELETE": 16}


async def seed(conn: Conn) -> None:
    """Rows for most views: the defaults and an admin token, a flag, accounts with tokens."""
    await bootstrap.seed(work(), conn, (ADMIN_TOKEN,))
    flag = FeatureCreated(
        name="checkout",
        project="default",
        feature_type="release",
        description=None,
        impression_data=False,
        created_at=datetime.now(UTC),
    )
    await factories.append(conn, [flag], stream=("feature", "checkout"), expected="no-stream")
    await factories.account(conn, role=1)
    await factories.account(conn, role=3, service=True)


async def error_of(conn: Conn, statement: str) -> type[asyncpg.PostgresError]:
    """The class of the error the statement fails with; it must fail."""
    try:
        await conn.execute(statement)
    except asyncpg.PostgresError as exc:
        return type(exc)
    raise AssertionError(f"not refused: {statement}")


async def relations(conn: Conn) -> list[asyncpg.Record]:
    return await conn.fetch(RELATIONS)


# The role


async def test_the_role_cannot_log_in_and_holds_no_attribute_or_membership(
    any_conn: Conn,
) -> None:
    role = await any_conn.fetchrow("SELECT * FROM pg_roles WHERE rolname = $1", ROLE)
    assert role is not None
    attributes = ["rolcanlogin", "rolsuper", "rolcreaterole", "rolcreatedb", "rolreplication"]
    assert {a: role[a] for a in [*attributes, "rolbypassrls"]} == dict.fromkeys(
        [*attributes, "rolbypassrls"], False
    )
    member_of = await any_conn.fetch("SELECT 1 FROM pg_auth_members WHERE member = $1", role["oid"])
    assert member_of == []


def create_role_block(name: str) -> str:
    """sql/0013's first statement, which creates the role, for a role of another name."""
    sql = next(m.sql for m in migrations.load_migrations() if m.name == "reporting_role")
    block = sql[sql.index("DO $$") : sql.index("$$;") + 3]
    assert "CREATE ROLE flagstore_reporting NOLOGIN" in block
    return block.replace(ROLE, name)


async def test_a_migrating_user_that_may_not_create_the_missing_role_is_told_what_to_do(
    conn: Conn, dsn: str, roles: Roles
) -> None:
    """Later migrations grant views to the role: without it the migration stops, saying why."""
    weak, missing = roles.name(dsn, "weak"), roles.name(dsn)
    await conn.execute(f'CREATE ROLE "{weak}" LOGIN')
    migrator = await connections.connect(as_user(dsn, weak))
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError) as refused:
            await migrator.execute(create_role_block(missing))
    finally:
        await migrator.close()
    assert refused.value.message == f"role {missing} does not exist and {weak} may not create it"
    assert f"CREATE ROLE {missing} NOLOGIN" in (refused.value.hint or "")
    assert "CloudNativePG" in (refused.value.hint or "")


async def test_a_concurrent_creation_of_the_role_is_taken_as_done(
    conn: Conn, dsn: str, roles: Roles
) -> None:
    """Databases of one cluster migrate at once (the tests do): the second creation waits for
    the first, then meets the unique index of role names, and its migration goes on."""
    name = roles.name(dsn)
    block = create_role_block(name)
    other = await connections.connect(dsn)
    try:
        async with conn.transaction():
            await conn.execute(block)  # created, not committed yet
            second = asyncio.create_task(other.execute(block))
            await asyncio.sleep(0.3)
            assert not second.done()  # it waits for the first to commit
        assert await second == "DO"
        assert await other.execute(block) == "DO"  # it exists: nothing to do
        assert await conn.fetchval("SELECT count(*) FROM pg_roles WHERE rolname = $1", name) == 1
    finally:
        await other.close()


# What a login reads


async def test_a_login_reads_every_reporting_view_as_the_service_sees_it(
    any_conn: Conn, any_dsn: str, roles: Roles
) -> None:
    await seed(any_conn)
    _, login = await new_login(any_conn, any_dsn, roles)
    try:
        views = [r["name"] for r in await relations(any_conn) if r["schema"] == "reporting"]
        assert set(views) >= KNOWN_VIEWS
        with_rows = 0
        for view in views:
            query = f"SELECT t::text FROM {view} t ORDER BY 1"
            seen = await login.fetch(query)
            assert seen == await any_conn.fetch(query), view
            with_rows += bool(seen)
        assert with_rows >= 4  # users, tokens, activity, features, projects: not vacuous
    finally:
        await login.close()


async def test_a_login_reads_nothing_but_the_reporting_views(
    any_conn: Conn, any_dsn: str, roles: Roles
) -> None:
    await seed(any_conn)
    name, login = await new_login(any_conn, any_dsn, roles)
    try:
        others = [r for r in await relations(any_conn) if r["schema"] != "reporting"]
        names = {r["name"] for r in others}
        assert names >= SECRET_TABLES | LOG_TABLES | {"readmodel.users", "public.schema_migrations"}
        assert "public.personal_keys" in names  # the wrapped data keys (docs/privacy.md)
        for relation in others:
            query = f"SELECT * FROM {relation['name']} LIMIT 1"
            assert await error_of(login, query) is asyncpg.InsufficientPrivilegeError, query
            held = await any_conn.fetchval(
                "SELECT has_table_privilege($1, $2, 'SELECT')", name, relation["name"]
            )
            assert held is False, relation["name"]
        # Every column holding a credential's hash, by name: unreadable, and in no view.
        columns = await any_conn.fetch(HASH_COLUMNS)
        assert {(c["relation"], c["column_name"]) for c in columns} >= {
            ("readmodel.user_passwords", "password_hash"),
            ("readmodel.api_tokens", "secret_hash"),
            ("readmodel.personal_access_tokens", "secret_hash"),
            ("readmodel.sessions", "session_hash"),
            ("public.events", "hash"),
        }
        for column in columns:
            assert not column["relation"].startswith("reporting."), column
            held = await any_conn.fetchval(
                "SELECT has_column_privilege($1, $2, $3, 'SELECT')",
                name,
                column["relation"],
                column["column_name"],
            )
            assert held is False, column
    finally:
        await login.close()


# What a login writes: nothing


async def test_a_login_writes_nothing(any_conn: Conn, any_dsn: str, roles: Roles) -> None:
    name, login = await new_login(any_conn, any_dsn, roles, read_only=False)
    try:
        everything = await relations(any_conn)
        assert {r["name"] for r in everything} >= KNOWN_VIEWS | SECRET_TABLES | LOG_TABLES
        for relation in everything:
            held = await any_conn.fetchval(HOLDS_A_WRITE, name, relation["name"], relation["kind"])
            assert held is False, relation["name"]
            if relation["kind"] in "rp":
                await assert_table_unwritable(login, relation["name"], relation["first_column"])
            elif relation["kind"] == "v":
                await assert_view_unwritable(login, relation)
            else:  # a sequence
                for call in ("nextval", "setval"):
                    args = f"'{relation['name']}'" + (", 1" if call == "setval" else "")
                    error = await error_of(login, f"SELECT {call}({args})")
                    assert error is asyncpg.InsufficientPrivilegeError, (call, relation["name"])
        for statement in [
            "CREATE TABLE public.reporting_was_here (x int)",
            "CREATE TABLE reporting.reporting_was_here (x int)",
            "CREATE VIEW reporting.reporting_was_here AS SELECT 1 AS x",
            "CREATE TABLE readmodel.reporting_was_here (x int)",
            "CREATE FUNCTION public.reporting_was_here() RETURNS int LANGUAGE sql AS 'SELECT 1'",
            "CREATE SCHEMA reporting_was_here",
            APPEND_AS_THE_LOGIN,
        ]:
            assert await error_of(login, statement) is asyncpg.InsufficientPrivilegeError, statement
    finally:
        await login.close()


async def assert_table_unwritable(login: Conn, table: str, column: str) -> None:
    for statement in [
        f"INSERT INTO {table} DEFAULT VALUES",
        f"UPDATE {table} SET {column} = {column} WHERE false",
        f"DELETE FROM {table} WHERE false",
        f"TRUNCATE {table}",
    ]:
        assert await error_of(login, statement) is asyncpg.InsufficientPrivilegeError, statement


async def assert_view_unwritable(login: Conn, view: asyncpg.Record) -> None:
    """A view that PostgreSQL could write through refuses for lack of privileges; one that it
    could not (GROUP BY) is refused before privileges are looked at (has_*_privilege above
    shows that the login holds none on it either)."""
    name, column = view["name"], view["first_column"]
    for command, statement in [
        ("INSERT", f"INSERT INTO {name} DEFAULT VALUES"),
        ("UPDATE", f"UPDATE {name} SET {column} = {column} WHERE false"),
        ("DELETE", f"DELETE FROM {name} WHERE false"),
    ]:
        updatable = view["updatable"] & UPDATABLE[command]
        expected = (
            asyncpg.InsufficientPrivilegeError
            if updatable
            else asyncpg.ObjectNotInPrerequisiteStateError
        )
        assert await error_of(login, statement) is expected, statement


async def test_a_login_is_read_only_by_default(any_conn: Conn, any_dsn: str, roles: Roles) -> None:
    """Belt and braces: a login may turn the default off, so this stops accidents, not
    intent (the grants are the barrier)."""
    _, login = await new_login(any_conn, any_dsn, roles)
    try:
        assert await login.fetchval("SHOW default_transaction_read_only") == "on"
        error = await error_of(login, "CREATE TABLE public.t (x int)")
        assert error in {asyncpg.ReadOnlySQLTransactionError, asyncpg.InsufficientPrivilegeError}
    finally:
        await login.close()


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT lo_create(0)",
        "SELECT lo_creat(-1)",
        "SELECT lo_from_bytea(0, convert_to(repeat('x', 1000), 'UTF8'))",
    ],
)
async def test_a_login_creates_no_large_object(
    any_conn: Conn, any_dsn: str, roles: Roles, statement: str
) -> None:
    """PostgreSQL lets any role create large objects, which no table grant stops: migration
    0013 takes those functions from PUBLIC (the suite migrates as a superuser), so a login that
    turned read-only off cannot write the database that way either."""
    _, login = await new_login(any_conn, any_dsn, roles, read_only=False)
    try:
        assert await error_of(login, statement) is asyncpg.InsufficientPrivilegeError
        assert await any_conn.fetchval("SELECT count(*) FROM pg_largeobject_metadata") == 0
    finally:
        await login.close()


async def test_a_view_the_migrating_user_adds_later_is_granted_by_default(
    any_conn: Conn, any_dsn: str, roles: Roles
) -> None:
    """The default privileges of sql/0013 (the rule is still to grant explicitly)."""
    await any_conn.execute("CREATE VIEW reporting.later AS SELECT 1 AS answer")
    _, login = await new_login(any_conn, any_dsn, roles)
    try:
        assert await login.fetchval("SELECT answer FROM reporting.later") == 1
    finally:
        await login.close()


CREATE_VIEW = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(reporting\.\w+)", re.IGNORECASE)


def ungranted_views(sql: str) -> list[str]:
    """Views of schema `reporting` the migration creates without granting them to the role."""
    return [
        view
        for view in CREATE_VIEW.findall(sql)
        if not re.search(
            rf"GRANT\s+SELECT\s+ON\s+(?:TABLE\s+)?{re.escape(view)}\s+TO\s+{ROLE}\b",
            sql,
            re.IGNORECASE,
        )
    ]


def test_every_migration_after_0013_grants_the_views_it_creates() -> None:
    """The versioning rule (docs/reporting.md). The default privileges would grant such a view
    here, where one user runs every migration, so only reading the files finds a missing one."""
    assert ungranted_views("CREATE VIEW reporting.users_v2 AS SELECT 1;") == ["reporting.users_v2"]
    granted = "CREATE OR REPLACE VIEW reporting.x AS SELECT 1;\n"
    assert ungranted_views(granted + f"GRANT SELECT ON reporting.x TO {ROLE};") == []
    files = migrations.load_migrations()
    first = next(m.version for m in files if m.name == "reporting_role")
    later = {m.name: ungranted_views(m.sql) for m in files if m.version > first}
    assert later == {name: [] for name in later}


# PUBLIC's defaults, where the migrating user may change them and where it may not


def as_user(dsn: str, user: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(netloc=f"{user}@{parts.netloc.rpartition('@')[2]}"))


async def empty_database(admin: Conn, owner: str) -> str:
    """A database of the test's own, from template0 (no schema), owned by `owner`."""
    name = f"rpt_{uuid.uuid4().hex[:12]}"
    await admin.execute(f'CREATE DATABASE "{name}" OWNER "{owner}" TEMPLATE template0')
    return name


async def migrate_as(dsn: str) -> tuple[Conn, list[str]]:
    """Migrate as the DSN's user; its connection and the notices the migrations raised."""
    conn = await connections.connect(dsn)
    notices: list[str] = []
    conn.add_log_listener(lambda _conn, message: notices.append(message.message))
    await migrations.migrate(conn)
    return conn, [n for n in notices if n.startswith(f"{ROLE}:")]


async def test_migrated_by_its_owner_a_database_gives_public_no_temp_and_the_service_keeps_working(
    pg_server: PgServer, roles: Roles
) -> None:
    """The usual deployment (CloudNativePG's application user): the service's user owns the
    database, is no superuser, and migrates it. PUBLIC loses TEMP; the service keeps what it
    needs (scratch schemas for replay and verify, temporary tables); a login has neither."""
    app = roles.name(pg_server.admin_dsn, "app")
    admin = await asyncpg.connect(pg_server.admin_dsn)
    await admin.execute(f'CREATE ROLE "{app}" LOGIN')
    dsn = with_database(pg_server.admin_dsn, await empty_database(admin, owner=app))
    try:
        conn, notices = await migrate_as(as_user(dsn, app))
        try:
            # Nothing left as PUBLIC had it but what only a superuser may take: large objects.
            assert notices == [
                (
                    f"{ROLE}: PUBLIC may still create large objects: {app} is no superuser "
                    "(docs/reporting.md)"
                )
            ]
            public_temp = "SELECT has_database_privilege('public', current_database(), 'TEMP')"
            assert await conn.fetchval(public_temp) is False
            await conn.execute("CREATE TEMP TABLE scratch (x int)")
            await seed(conn)
            assert (await verify(conn)).ok
            assert await replay(conn) > 0
        finally:
            await conn.close()
        _, login = await new_login(admin, dsn, roles, read_only=False)
        try:
            assert await login.fetchval("SELECT count(*) FROM reporting.users") == 2
            for statement in ["CREATE TEMP TABLE t (x int)", "CREATE TABLE public.t (x int)"]:
                assert await error_of(login, statement) is asyncpg.InsufficientPrivilegeError
        finally:
            await login.close()
    finally:
        await pg_server.drop_database(dsn)
        await admin.close()


async def test_what_a_migrating_user_that_owns_neither_database_nor_schema_public_leaves(
    pg_server: PgServer, roles: Roles
) -> None:
    """PostgreSQL 14 gave PUBLIC CREATE on schema public, and the schema to the bootstrap
    superuser; a migrating user that owns neither that nor the database cannot take PUBLIC's
    rights away. The migration says so and goes on; docs/reporting.md tells what remains."""
    mig = roles.name(pg_server.admin_dsn, "mig")
    admin = await asyncpg.connect(pg_server.admin_dsn)
    await admin.execute(f'CREATE ROLE "{mig}" LOGIN')
    name = await empty_database(admin, owner="postgres")
    dsn = with_database(pg_server.admin_dsn, name)
    try:
        owner = await asyncpg.connect(dsn)
        try:
            await owner.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")  # as PostgreSQL 14
            await owner.execute(f'GRANT CREATE ON DATABASE "{name}" TO "{mig}"')
        finally:
            await owner.close()
        conn, notices = await migrate_as(as_user(dsn, mig))
        try:
            assert notices == [
                f"{ROLE}: PUBLIC keeps TEMP on database {name}: {mig} does not own it",
                (
                    f"{ROLE}: PUBLIC keeps CREATE on schema public: pg_database_owner owns it, "
                    f"not {mig}"
                ),
                (
                    f"{ROLE}: PUBLIC may still create large objects: {mig} is no superuser "
                    "(docs/reporting.md)"
                ),
            ]
            await seed(conn)
            assert (await verify(conn)).ok
        finally:
            await conn.close()
        _, login = await new_login(admin, dsn, roles, read_only=False)
        try:
            await login.execute("CREATE TEMP TABLE t (x int)")  # what remains, as documented
            await login.execute("CREATE TABLE public.t (x int)")
            assert await login.fetchval("SELECT count(*) FROM reporting.users") == 2
            for statement in ["SELECT * FROM readmodel.users", "SELECT * FROM events"]:
                assert await error_of(login, statement) is asyncpg.InsufficientPrivilegeError
        finally:
            await login.close()
    finally:
        await pg_server.drop_database(dsn)
        await admin.close()


# `python -m service reporting-user NAME`

ROLE_STATE = """
SELECT a.rolcanlogin, a.rolsuper, a.rolcreaterole, a.rolcreatedb, a.rolpassword, r.rolconfig,
       ARRAY(SELECT m.roleid::regrole::text FROM pg_auth_members m WHERE m.member = a.oid)
           AS member_of
FROM pg_authid a JOIN pg_roles r ON r.oid = a.oid
WHERE a.rolname = $1
"""


def printed(stdout: str) -> dict[str, str]:
    """The command's `password: ...` and `connection: ...` lines."""
    pairs = [line.partition(": ") for line in stdout.splitlines()]
    return {key: value for key, _, value in pairs if key in {"password", "connection"}}


@pytest.mark.process
async def test_reporting_user_prints_a_password_and_a_connection_string_that_works(
    harness: Harness, any_conn: Conn, any_dsn: str, roles: Roles
) -> None:
    name = roles.name(any_dsn)
    result = await harness.cli(harness.new_dir(), "reporting-user", name, DATABASE_URL=any_dsn)
    assert result.returncode == 0, result.stderr
    shown = printed(result.stdout)
    password, connection = shown["password"], shown["connection"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", password)  # 256 random bits, URL-safe
    # Shown on its line and inside the connection string, nowhere else (no log line).
    everything = (result.stdout + result.stderr).splitlines()
    assert [line for line in everything if password in line] == [
        f"password: {password}",
        f"connection: {connection}",
    ]
    # Its standard output is what it says to the person, no log line among it.
    assert [line for line in result.stdout.splitlines() if line.startswith("{")] == []
    assert result.stdout.splitlines()[0] == (
        f"created login {name}, read-only, member of flagstore_reporting"
    )
    # The DSN in use, with the login's name and password instead of the service's.
    url, source = urlsplit(connection), urlsplit(any_dsn)
    assert (url.username, url.password) == (name, password)
    assert (url.scheme, url.hostname, url.port, url.path, url.query) == (
        source.scheme,
        source.hostname,
        source.port,
        source.path,
        source.query,
    )
    login = await asyncpg.connect(connection)
    try:
        assert await login.fetchval("SELECT current_user") == name
        assert await login.fetchval("SELECT count(*) FROM reporting.features_per_project") == 0
    finally:
        await login.close()
    role = await any_conn.fetchrow(ROLE_STATE, name)
    assert role is not None
    assert role["rolpassword"].startswith("SCRAM-SHA-256$4096:")  # a hash, never the password
    assert password not in role["rolpassword"]
    assert (role["rolcanlogin"], role["rolsuper"], role["rolcreaterole"], role["rolcreatedb"]) == (
        True,
        False,
        False,
        False,
    )
    assert role["rolconfig"] == ["default_transaction_read_only=on"]
    assert role["member_of"] == [ROLE]


@pytest.mark.process
async def test_postgresql_takes_the_printed_password_and_no_other(
    harness: Harness, cluster: Cluster
) -> None:
    """The test servers trust every local connection; this one is made to check the login's
    password (SCRAM), which proves the hash computed by the command. (A new cluster, too: no
    migration has made the role yet, and the command says so.)"""
    admin = await asyncpg.connect(cluster.admin_dsn)
    try:
        await admin.execute("CREATE DATABASE flagstore")
        dsn, data_dir = cluster.dsn("flagstore"), harness.new_dir()
        early = await harness.cli(data_dir, "reporting-user", "analyst", DATABASE_URL=dsn)
        assert early.returncode == 1
        assert f"error: role {ROLE} does not exist in this cluster: run `python -m service " in (
            early.stderr
        )
        assert (await harness.cli(data_dir, "migrate", DATABASE_URL=dsn)).returncode == 0
        result = await harness.cli(data_dir, "reporting-user", "analyst", DATABASE_URL=dsn)
        assert result.returncode == 0, result.stderr
        shown = printed(result.stdout)
        password, connection = shown["password"], shown["connection"]
        hba = cluster.data / "pg_hba.conf"
        hba.write_text("host all analyst 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        await admin.execute("SELECT pg_reload_conf()")
        wrong = connection.replace(password, reporting.new_password())
        for _ in range(50):  # the postmaster reloads the file a moment later
            try:
                await (await asyncpg.connect(wrong)).close()
            except asyncpg.InvalidPasswordError:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("a wrong password was still taken")
        login = await asyncpg.connect(connection)
        assert await login.fetchval("SELECT current_user") == "analyst"
        await login.close()
    finally:
        await admin.close()


@pytest.mark.process
@pytest.mark.parametrize("word", ["current_user", "user", "all", "select"])
async def test_reporting_user_refuses_a_word_of_sql(
    harness: Harness, any_conn: Conn, any_dsn: str, word: str
) -> None:
    """A role named `user` or `current_user` could not be dropped or altered by name."""
    result = await harness.cli(harness.new_dir(), "reporting-user", word, DATABASE_URL=any_dsn)
    assert result.returncode == 2
    assert f"'{word}' is a word of SQL" in result.stderr
    assert await any_conn.fetchval("SELECT count(*) FROM pg_roles WHERE rolname = $1", word) == 0


@pytest.mark.process
async def test_reporting_user_refuses_a_name_that_is_no_role_name(harness: Harness) -> None:
    result = await harness.cli(harness.new_dir(), "reporting-user", "Analyst")
    assert result.returncode == 2
    assert "argument name: 'Analyst' is not a role name" in result.stderr
    assert "password" not in result.stdout


@pytest.mark.parametrize(
    "name", ["", "Analyst", "1st", "a-b", "a b", "x;drop", "é", "a" * 64, "pg_x", "public"]
)
def test_role_names_are_lower_case_identifiers(name: str) -> None:
    with pytest.raises(ValueError, match=r"is not a role name|is reserved by PostgreSQL"):
        reporting.check_role_name(name)


@pytest.mark.parametrize("name", ["a", "_a", "analyst_1", "a" * 63, "pgx"])
def test_these_role_names_are_taken(name: str) -> None:
    assert reporting.check_role_name(name) == name


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        (
            "postgresql://app:s3cret@db.example:5432/flagstore?sslmode=verify-full",
            "postgresql://analyst:pw@db.example:5432/flagstore?sslmode=verify-full",
        ),
        (
            "postgres://app@/flags?host=/run/pg&port=5433&user=app&password=s3cret",
            "postgres://analyst:pw@/flags?host=/run/pg&port=5433",
        ),
        (
            "postgresql://app:s3cret@h1:5432,[::1]:5433/flagstore?target_session_attrs=any",
            "postgresql://analyst:pw@h1:5432,[::1]:5433/flagstore?target_session_attrs=any",
        ),
        (
            "postgresql:///flagstore?passfile=/pgpass&sslcert=/c&sslkey=/k&sslpassword=s3cret",
            "postgresql://analyst:pw@/flagstore",
        ),
    ],
)
def test_the_connection_string_is_the_dsn_with_the_logins_credentials_only(
    dsn: str, expected: str
) -> None:
    assert reporting.connection_string(dsn, "analyst", "pw") == expected


def test_the_connection_string_quotes_what_a_url_must_quote() -> None:
    url = reporting.connection_string("postgresql://app@db/flagstore", "analyst", "p@ss:w/rd%")
    assert url == "postgresql://analyst:p%40ss%3Aw%2Frd%25@db/flagstore"
    assert unquote(urlsplit(url).password or "") == "p@ss:w/rd%"


def test_the_password_hash_is_rfc_7677s() -> None:
    """RFC 7677's example exchange (password "pencil") checks out against the verifier made
    with its salt: the server's signature, and the client's proof (the server's own check)."""
    verifier = reporting.scram_sha_256("pencil", base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="))
    parts = re.fullmatch(r"SCRAM-SHA-256\$4096:W22ZaJ0SNY7soEsUEjb6gQ==\$([^:]+):(.+)", verifier)
    assert parts is not None
    stored_key, server_key = base64.b64decode(parts[1]), base64.b64decode(parts[2])
    client_nonce, salt = "rOprNGfwEbeRWgbNEkqO", "W22ZaJ0SNY7soEsUEjb6gQ=="
    nonce = client_nonce + "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth = f"n=user,r={client_nonce},r={nonce},s={salt},i=4096,c=biws,r={nonce}"
    signature = hmac.digest(server_key, auth.encode(), "sha256")
    assert base64.b64encode(signature).decode() == "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_signature = hmac.digest(stored_key, auth.encode(), "sha256")
    client_key = bytes(p ^ s for p, s in zip(proof, client_signature, strict=True))
    assert hashlib.sha256(client_key).digest() == stored_key


@pytest.mark.process
async def test_reporting_user_changes_nothing_of_a_role_that_exists(
    harness: Harness, conn: Conn, dsn: str, roles: Roles
) -> None:
    name = roles.name(dsn)
    await reporting.create_login(conn, name, reporting.new_password())
    for existing in (name, ROLE):
        before = await conn.fetchrow(ROLE_STATE, existing)
        result = await harness.cli(harness.new_dir(), "reporting-user", existing, DATABASE_URL=dsn)
        assert result.returncode == 1
        assert f"error: role {existing} already exists; nothing was changed" in result.stderr
        assert printed(result.stdout) == {}
        assert await conn.fetchrow(ROLE_STATE, existing) == before


@pytest.mark.process
async def test_reporting_user_without_the_right_to_create_roles_says_what_to_do(
    harness: Harness, conn: Conn, dsn: str, roles: Roles
) -> None:
    """The service's own user usually may not create roles (CloudNativePG's application user
    may not); from PostgreSQL 16, CREATEROLE without ADMIN OPTION on the role is not enough."""
    weak, creator, name = roles.name(dsn, "weak"), roles.name(dsn, "creator"), roles.name(dsn)
    await conn.execute(f'CREATE ROLE "{weak}" LOGIN')
    await conn.execute(f'CREATE ROLE "{creator}" LOGIN CREATEROLE')
    for user in (weak, creator):
        result = await harness.cli(
            harness.new_dir(), "reporting-user", name, DATABASE_URL=as_user(dsn, user)
        )
        assert result.returncode == 1
        assert result.stderr.startswith(f"error: {user} may not create the login {name}: ")
        for advice in ("CREATEROLE", "ADMIN OPTION", f"inRoles: [{ROLE}]", "spec.managed.roles"):
            assert advice in result.stderr
        assert printed(result.stdout) == {}
        assert await conn.fetchval("SELECT count(*) FROM pg_roles WHERE rolname = $1", name) == 0
