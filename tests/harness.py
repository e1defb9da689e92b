"""Running the service as a real subprocess: the harness the process and fault tests share."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import psutil
import pytest

from service import embedded
from service.settings import Settings
from tests import ROOT
from tests.factories import error_body

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

GENERATED_TOKEN = re.compile(r"\*:\*\.[0-9a-f]{64}(?![0-9a-f])")
START_TIMEOUT = 30.0
STOP_TIMEOUT = 20.0
CLI_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    port: int
    stdout_path: Path
    stderr_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stdout(self) -> str:
        return self.stdout_path.read_text(encoding="utf-8")

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8")

    def log_lines(self) -> list[dict[str, Any]]:
        """Every stdout line is a JSON log record (LOG_FORMAT=json); read after exit."""
        return [json.loads(line) for line in self.stdout().splitlines()]

    def generated_token(self) -> str:
        """The one admin token serve printed on stderr (exactly one line carries it)."""
        lines = [line for line in self.stderr().splitlines() if GENERATED_TOKEN.search(line)]
        assert len(lines) == 1, self.stderr()
        (token,) = GENERATED_TOKEN.findall(lines[0])
        assert lines[0].endswith(token)
        return str(token)


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )


def stop_postgres(pgdata: Path) -> None:
    """Terminate (then kill) any postgres left serving pgdata."""
    procs = embedded.postgres_processes(pgdata)
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=5)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()


class Harness:
    """Owns every process and directory a test creates; cleanup() leaves no orphans."""

    def __init__(self) -> None:
        self.dirs: list[Path] = []
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs = self.new_dir()

    def new_dir(self) -> Path:
        path = Path(tempfile.mkdtemp(prefix="fl-", dir="/tmp")).resolve()
        self.dirs.append(path)
        return path

    def env(self, data_dir: Path, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        for name in Settings.__struct_fields__:  # DATABASE_URL among them: embedded by default
            env.pop(name.upper(), None)
            env.pop(f"{name.upper()}_FILE", None)
        env.update(HOST="127.0.0.1", LOG_FORMAT="json", DATA_DIR=str(data_dir))
        # The tests' master key (tests/conftest.py), unless a test says PII_MASTER_KEY="" (unset:
        # with the embedded database the service then makes one in DATA_DIR).
        env["PII_MASTER_KEY"] = os.environ["PII_MASTER_KEY"]
        env.update(extra)
        return env

    def start(
        self,
        data_dir: Path,
        *args: str,
        preexec: Callable[[], None] | None = None,
        command: str = "serve",
        **extra: str,
    ) -> Server:
        port = free_port()
        env = self.env(data_dir, PORT=str(port), **extra)
        number = len(self.procs) + 1
        out, err = self.logs / f"{command}-{number}.out", self.logs / f"{command}-{number}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "service", command, *args],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                preexec_fn=preexec,  # noqa: PLW1509 - only setrlimit, in tests
            )
        self.procs.append(proc)
        return Server(proc, port, out, err)

    async def serve(
        self,
        data_dir: Path,
        *args: str,
        preexec: Callable[[], None] | None = None,
        **extra: str,
    ) -> Server:
        server = self.start(data_dir, *args, preexec=preexec, **extra)
        await wait_ready(server)
        return server

    async def cli(
        self, data_dir: Path, *args: str, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(run_cli, self.env(data_dir, **extra), *args)

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        for path in self.dirs:
            stop_postgres(path / "pg")
            shutil.rmtree(path, ignore_errors=True)


@contextlib.asynccontextmanager
async def client(base_url: str | None = None) -> AsyncIterator[aiohttp.ClientSession]:
    """A session that opens a new connection for every request (to paths of `base_url`, a
    server's URL, when given: the factories' requests then work on it as on a TestClient)."""
    async with aiohttp.ClientSession(
        base_url,
        connector=aiohttp.TCPConnector(force_close=True),
        timeout=aiohttp.ClientTimeout(total=10),
    ) as session:
        yield session


async def call(
    method: str, url: str, *, token: str | None = None, body: Any = None
) -> tuple[int, Any]:
    headers = {"Authorization": token} if token is not None else {}
    async with client() as session, session.request(method, url, headers=headers, json=body) as r:
        return r.status, await r.json()


async def wait_ready(server: Server) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    async with client() as session:
        while True:
            code = server.proc.poll()
            if code is not None:
                pytest.fail(f"serve exited with {code} before it was ready:\n{server.stderr()}")
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(f"{server.url}/ready") as resp:
                    if resp.status == 200:
                        return
            if time.monotonic() > deadline:
                pytest.fail(f"/ready not 200 within {START_TIMEOUT} s:\n{server.stderr()}")
            await asyncio.sleep(0.05)


async def wait_exit(server: Server, timeout: float = STOP_TIMEOUT) -> int:
    deadline = time.monotonic() + timeout
    while (code := server.proc.poll()) is None:
        if time.monotonic() > deadline:
            pytest.fail(f"serve did not exit within {timeout} s of the signal:\n{server.stderr()}")
        await asyncio.sleep(0.05)
    return code


async def stop(server: Server, sig: signal.Signals = signal.SIGTERM) -> int:
    server.proc.send_signal(sig)
    return await wait_exit(server)


async def assert_no_postgres(data_dir: Path) -> None:
    """No postgres serves data_dir/pg (a postmaster that is just exiting gets a moment)."""
    pgdata = data_dir / "pg"
    deadline = time.monotonic() + 3
    while (left := embedded.postgres_processes(pgdata)) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert left == [], [p.info for p in left]


async def wait_refused(port: int) -> None:
    """Until a new connection to port is refused (the listener is closed)."""
    deadline = time.monotonic() + 5
    while True:
        try:
            _, probe = await asyncio.open_connection("127.0.0.1", port)
        except ConnectionRefusedError:
            return
        probe.close()
        await probe.wait_closed()
        assert time.monotonic() < deadline, f"port {port} still accepts connections"
        await asyncio.sleep(0.05)


def _server_sockets(port: int) -> list[int]:
    """The unread bytes (Recv-Q) of each established connection accepted on `port` here."""
    unread = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, state, queues = fields[1], fields[3], fields[4]
                if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                    unread.append(int(queues.split(":")[1], 16))
    return unread


async def wait_read(port: int, connections: int) -> None:
    """Until the server on `port` holds this many connections and has read what each sent (a
    fixed sleep could end before the server had read them, under load)."""
    deadline = time.monotonic() + 10
    while True:
        unread = _server_sockets(port)
        if len(unread) >= connections and not any(unread):
            return
        assert time.monotonic() < deadline, f"port {port}: {unread} unread bytes after 10 s"
        await asyncio.sleep(0.02)


def postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "pg" / "postmaster.pid").read_text().splitlines()[0])


def report(figures: str) -> None:
    """Measured figures, shown with `pytest -s` (docs quote them)."""
    print(figures, file=sys.stderr)  # noqa: T201


def assert_error_body(body: Any, name: str, message: str) -> None:
    assert error_body(body, name) == message
    uuid.UUID(body["id"])
