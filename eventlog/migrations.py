"""The forward-only migrations runner: `sql/NNNN_description.sql`, under an advisory lock."""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from eventlog.connections import Conn

log = structlog.get_logger()


def _sql_dir() -> Path:
    """`sql/` beside the packages in a source tree (editable install); an installed wheel puts
    the files under `<prefix>/share/flagstore/sql` (pyproject.toml: data-files)."""
    source = Path(__file__).resolve().parent.parent / "sql"
    return source if source.is_dir() else Path(sys.prefix) / "share" / "flagstore" / "sql"


SQL_DIR = _sql_dir()
MIGRATION_LOCK = 0x666C6167  # pg_advisory_lock key shared by every replica and the migrate Job
_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# Beside the migrations: the schema they make, for reading (tools/schema.py); never applied.
SCHEMA_FILE = "schema.sql"


class MigrationError(Exception):
    """The database and the migration files disagree; start-up stops."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations(directory: Path = SQL_DIR) -> list[Migration]:
    migrations = []
    for path in sorted(directory.glob("*.sql")):
        if path.name == SCHEMA_FILE:
            continue
        match = _MIGRATION_FILE.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: migration files are named NNNN_description.sql")
        migrations.append(Migration(int(match[1]), match[2], path.read_text(encoding="utf-8")))
    if not migrations:
        raise MigrationError(f"no migration files in {directory}")
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(migrations) + 1)):
        raise MigrationError(f"migration versions must be 1..N without gaps, found {versions}")
    return migrations


CREATE_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer NOT NULL PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


async def migrate(conn: Conn, migrations: list[Migration] | None = None) -> list[str]:
    """Apply pending migrations under an advisory lock; return the names applied."""
    migrations = load_migrations() if migrations is None else migrations
    # Migrations name schemas explicitly; anything unqualified lands in public, never in
    # whichever read-model schema happens to come first on the caller's search_path.
    previous = await conn.fetchval("SHOW search_path")
    await conn.execute("SELECT set_config('search_path', 'public, pg_temp', false)")
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
    try:
        await conn.execute(CREATE_MIGRATIONS_TABLE)
        applied = {
            r["version"]: r["checksum"]
            for r in await conn.fetch("SELECT version, checksum FROM schema_migrations")
        }
        done = []
        for migration in migrations:
            if migration.version in applied:
                if applied[migration.version] != migration.checksum:
                    raise MigrationError(
                        f"migration {migration.version:04d}_{migration.name}.sql was changed "
                        "after it was applied; migrations are forward-only: restore the file "
                        "and add a new one"
                    )
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    migration.version,
                    migration.name,
                    migration.checksum,
                )
            done.append(f"{migration.version:04d}_{migration.name}")
            log.info("migration_applied", migration=done[-1])
        return done
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
        await conn.execute("SELECT set_config('search_path', $1, false)", previous)


async def require_schema(conn: Conn) -> None:
    """`serve --no-migrate`: the migrations are someone else's (a Job); without them, stop with
    a message that says so rather than the first query's missing relation."""
    version, expected = await schema_version(conn), len(load_migrations())
    if version < expected:
        raise MigrationError(
            f"the database schema is at migration {version}, this release needs {expected}: "
            "run `python -m service migrate` first (on Kubernetes, the migration Job)"
        )


async def schema_version(conn: Conn) -> int:
    """The highest applied migration, 0 when none (or no table yet)."""
    exists = await conn.fetchval("SELECT to_regclass('public.schema_migrations') IS NOT NULL")
    if not exists:
        return 0
    return int(
        await conn.fetchval("SELECT coalesce(max(version), 0) FROM public.schema_migrations")
    )
