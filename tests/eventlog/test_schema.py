"""sql/schema.sql is what the migrations make (tools/schema.py; `make schema` writes it)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import asyncpg
import pytest

from eventlog import connections, migrations
from tools import schema

if TYPE_CHECKING:
    from tests.pg import PgServer


async def test_the_schema_file_is_what_the_migrations_make(pg18: PgServer) -> None:
    expected = schema.SCHEMA_FILE.read_text(encoding="utf-8")
    await _skip_unless_like_the_file(pg18, schema.server_major(expected))
    dsn = await pg18.new_database(migrated=False)
    try:
        made, major = await schema.migrate_and_dump(dsn)
    finally:
        await pg18.drop_database(dsn)
    diff = schema.difference(expected, schema.render(made, major))
    assert not diff, f"sql/schema.sql is not what the migrations make: run `make schema`\n{diff}"


async def test_an_index_no_migration_makes_is_a_difference(pg18: PgServer) -> None:
    """The comparison sees what the migrations did not make (on any server version: both
    sides are dumped here)."""
    dsn = await pg18.new_database(migrated=False)
    conn = await connections.connect(dsn)
    try:
        await migrations.migrate(conn)
        role = await conn.fetchval("SELECT current_user")
        major = conn.get_server_version().major
        before = await asyncio.to_thread(schema.dump_schema, dsn, role)
        await conn.execute("CREATE INDEX events_by_type ON events (type)")
        after = await asyncio.to_thread(schema.dump_schema, dsn, role)
    finally:
        await conn.close()
        await pg18.drop_database(dsn)
    assert schema.difference(schema.render(before, major), schema.render(before, major)) == ""
    diff = schema.difference(schema.render(before, major), schema.render(after, major))
    changed = [line for line in diff.splitlines()[2:] if line[:1] in "+-"]
    assert changed == [
        "+-- Name: events_by_type; Type: INDEX; Schema: public",
        "+CREATE INDEX events_by_type ON public.events USING btree (type);",
        "+",
    ]


def test_the_dump_loses_only_what_differs_between_runs() -> None:
    dump = """\
--
-- PostgreSQL database dump
--

\\restrict 7HghMPlIbmhdenX1MdIgmuytgXHw

-- Dumped from database version 18.6
-- Dumped by pg_dump version 18.6

SET statement_timeout = 0;
SELECT pg_catalog.set_config('search_path', '', false);

--
-- Name: ids; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.ids
    START WITH 1;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: f(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.f() RETURNS void
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN


SET lock_timeout = 0;
END
$$;


--
-- Name: DEFAULT PRIVILEGES FOR TABLES; Type: DEFAULT ACL; Schema: reporting; Owner: -
--

ALTER DEFAULT PRIVILEGES FOR ROLE "Mig rator" IN SCHEMA reporting GRANT SELECT ON TABLES TO r;


--
-- PostgreSQL database dump complete
--

\\unrestrict 7HghMPlIbmhdenX1MdIgmuytgXHw

"""
    assert schema.normalise(dump, "Mig rator") == (
        "-- Name: ids; Type: SEQUENCE; Schema: public\n"
        "CREATE SEQUENCE public.ids\n    START WITH 1;\n"
        "\n"
        "-- Name: f(); Type: FUNCTION; Schema: public\n"
        "CREATE FUNCTION public.f() RETURNS void\n    LANGUAGE plpgsql\n"
        "    SET plan_cache_mode TO 'force_generic_plan'\n"
        "    AS $$\nBEGIN\n\n\nSET lock_timeout = 0;\nEND\n$$;\n"
        "\n"
        "-- Name: DEFAULT PRIVILEGES FOR TABLES; Type: DEFAULT ACL; Schema: reporting\n"
        "ALTER DEFAULT PRIVILEGES IN SCHEMA reporting GRANT SELECT ON TABLES TO r;\n"
    )


async def _skip_unless_like_the_file(server: PgServer, file_major: int) -> None:
    """The file holds what a superuser's migrations make on its server's major version."""
    conn = await asyncpg.connect(server.admin_dsn)
    try:
        major = conn.get_server_version().major
        superuser = await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = user")
    finally:
        await conn.close()
    if major != file_major:
        pytest.skip(f"sql/schema.sql was made on PostgreSQL {file_major}, this is {major}")
    if not superuser:
        pytest.skip("sql/schema.sql was migrated by a superuser (sql/0013 revokes more then)")
