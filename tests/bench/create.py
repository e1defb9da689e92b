"""Create-flag throughput: ours and the reference server, same load tool, same machine.

Run with `make bench` (or `.venv/bin/python -m tests.bench.create`). Starts our service as its
own process (`python -m service serve`, embedded PostgreSQL with default durability, JSON logs
at info as in production) and drives it with wrk from Debian (`apt-get install wrk`) at
concurrency 1, 16 and 64; every request creates a flag with a fresh name. With
BENCH_REFERENCE=1 it also starts the reference server (../shared/reference/setup.sh --fresh)
and measures it the same way. BENCH_SECONDS sets the seconds per row (default 10).
Prints a markdown table and writes JSON to tests/bench/out/create.json.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from eventlog.privacy import master
from eventlog.privacy.keys import Masters
from tests.harness import free_port

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "bench" / "out" / "create.json"
# The reference's scripts (setup.sh, stop.sh): the workplace's shared/reference beside the
# checkout, or where UNLEASH_REFERENCE says.
REFERENCE = Path(os.environ.get("UNLEASH_REFERENCE", str(ROOT.parent / "shared" / "reference")))
TOKEN = "*:*.bench-admin-token-0123456789abcdef"
REFERENCE_TOKEN = "*:*.unleash-insecure-admin-api-token"
CONCURRENCY = (1, 16, 64)
LUA = """
local counter = 0
prefix = ""
function setup(thread)
  thread:set("prefix", "t" .. tostring(math.random(1, 1000000000)))
end
function request()
  counter = counter + 1
  local body = '{"name":"' .. RUN .. prefix .. "-" .. counter .. '","type":"release"}'
  return wrk.format("POST", PATH, HEADERS, body)
end
"""


@dataclass
class Row:
    server: str
    concurrency: int
    requests_per_s: float
    ok_per_s: float
    p50_ms: float
    p99_ms: float
    non_2xx: int
    errors: int
    peak_rss_mb: float | None


def wait_ready(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not become ready")


def parse_ms(value: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", value)
    assert match, value
    number, unit = float(match[1]), match[2]
    return {"us": number / 1000, "ms": number, "s": number * 1000}[unit]


class RssSampler(threading.Thread):
    def __init__(self, pid: int | None) -> None:
        super().__init__(daemon=True)
        self.process = psutil.Process(pid) if pid else None
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while self.process and not self.stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            self.stop.wait(0.2)


def run_wrk(  # noqa: PLR0917 - one measured row, every knob explicit
    server: str,
    base: str,
    project: str,
    token: str,
    concurrency: int,
    seconds: int,
    pid: int | None,
    path: str | None = None,
) -> Row:
    """wrk POSTs `{"name": <fresh>, "type": "release"}` to path (default: create a flag)."""
    headers = {"Authorization": token, "Content-Type": "application/json"}
    run = f"c{concurrency}{int(time.time())}"
    target = path or f"/api/admin/projects/{project}/features"
    script = (
        LUA.replace("RUN", json.dumps(run))
        .replace("PATH", json.dumps(target))
        .replace("HEADERS", "{" + ", ".join(f'["{k}"] = "{v}"' for k, v in headers.items()) + "}")
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    try:
        return wrk_row(server, concurrency, seconds, pid, ["-s", handle.name, base])
    finally:
        Path(handle.name).unlink()


def wrk_row(server: str, concurrency: int, seconds: int, pid: int | None, args: list[str]) -> Row:
    """Run wrk with these extra arguments (script or headers, then the URL) and parse its
    report, sampling the server's RSS meanwhile."""
    sampler = RssSampler(pid)
    sampler.start()
    threads = 1 if concurrency == 1 else 2
    out = subprocess.run(
        [
            "wrk",
            "-t",
            str(threads),
            "-c",
            str(concurrency),
            "-d",
            f"{seconds}s",
            "--latency",
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    sampler.stop.set()
    sampler.join()
    latency = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", out, re.MULTILINE))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    assert rps, out
    assert total, out
    failed = int(non_2xx[1]) if non_2xx else 0
    return Row(
        server=server,
        concurrency=concurrency,
        requests_per_s=float(rps[1]),
        ok_per_s=float(rps[1]) * (1 - failed / max(int(total[1]), 1)),
        # No distribution when no request finished within wrk's 2 s timeout.
        p50_ms=parse_ms(latency["50"]) if "50" in latency else float("inf"),
        p99_ms=parse_ms(latency["99"]) if "99" in latency else float("inf"),
        non_2xx=failed,
        errors=sum(int(x) for x in errors.groups()) if errors else 0,
        peak_rss_mb=round(sampler.peak / 2**20, 1) if pid else None,
    )


def dsn_of(env: dict[str, str]) -> str:
    """The connection string of the database a service started with `env` uses."""
    return subprocess.run(
        [sys.executable, "-m", "service", "dsn"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


class VerifyFailedError(RuntimeError):
    """`python -m service verify` failed on the database a benchmark filled."""


@contextlib.contextmanager
def serving_ours(
    env_out: dict[str, str] | None = None,
    *,
    check_verify: bool = False,
    settings: Mapping[str, str] | None = None,
) -> Iterator[tuple[str, int]]:
    """Our service as its own process on a fresh embedded PostgreSQL: yields (base URL, pid).
    `env_out` receives its environment, for CLI commands against the same database;
    `settings` are more environment variables for it (INTEGRATION_ALLOWED_NETWORKS, say).

    On the way out it stops the service and runs `verify` on the database it filled; with
    `check_verify`, a failed verify raises VerifyFailedError (after the clean-up).
    """
    data_dir = Path(tempfile.mkdtemp(prefix="bench-", dir="/tmp"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {
        "PORT": str(port),
        "DATA_DIR": str(data_dir),
        "LOG_FORMAT": "json",
        "INIT_ADMIN_API_TOKENS": TOKEN,
    }
    env |= settings or {}
    if env_out is not None:
        env_out.update(env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{base}/ready")
        # What this process appends to its database (a generated log) is sealed with the
        # master key the service made in its DATA_DIR, as the service's own events are.
        if "PII_MASTER_KEY" not in env:
            master.install(Masters(master.embedded_key(data_dir.resolve())))
        yield base, proc.pid
    finally:
        proc.terminate()
        proc.wait(30)
        verify = subprocess.run(
            [sys.executable, "-m", "service", "verify"],
            cwd=ROOT,
            env=env,
            check=False,
            stdout=sys.stderr,
        )
        shutil.rmtree(data_dir, ignore_errors=True)
    if check_verify and verify.returncode != 0:
        raise VerifyFailedError(f"verify failed on ours (exit {verify.returncode})")


def bench_ours(seconds: int) -> list[Row]:
    with serving_ours() as (base, pid):
        return [run_wrk("ours", base, "default", TOKEN, c, seconds, pid) for c in CONCURRENCY]


@contextlib.contextmanager
def serving_reference() -> Iterator[tuple[str, int]]:
    """The reference server on a fresh database: yields (base URL, pid); stopped after."""
    # Unleash refuses flags past UNLEASH_FEATURE_FLAGS_LIMIT (5,000 by default) with a 400;
    # the benchmarks create more than that, so lift it, or the last rows measure the limit.
    env = os.environ | {"UNLEASH_FEATURE_FLAGS_LIMIT": "10000000"}
    setup = subprocess.run(
        ["bash", str(REFERENCE / "setup.sh"), "--fresh"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    base = re.search(r"BASE_URL=(\S+)", setup)
    assert base, setup
    ref_dir = Path(os.environ.get("UNLEASH_REF_DIR", "/tmp/unleash-ref"))
    try:
        yield base[1], int((ref_dir / "unleash.pid").read_text())
    finally:
        subprocess.run(["bash", str(REFERENCE / "stop.sh")], check=False, capture_output=True)


def bench_reference(seconds: int) -> list[Row]:
    with serving_reference() as (base, pid):
        return [
            run_wrk("reference", base, "default", REFERENCE_TOKEN, c, seconds, pid)
            for c in CONCURRENCY
        ]


def main() -> int:
    if shutil.which("wrk") is None:
        print("wrk is needed: apt-get install wrk", file=sys.stderr)
        return 2
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    if os.environ.get("BENCH_REFERENCE") == "1":  # an idle reference still takes CPU: stop it
        subprocess.run(["bash", str(REFERENCE / "stop.sh")], check=False, capture_output=True)
    rows = bench_ours(seconds)
    if os.environ.get("BENCH_REFERENCE") == "1":
        rows += bench_reference(seconds)
    print(
        "| server | concurrency | responses/s | creates/s (2xx) | p50 ms | p99 ms | non-2xx "
        "| socket errors | peak RSS MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r.server} | {r.concurrency} | {r.requests_per_s:,.0f} | {r.ok_per_s:,.0f} "
            f"| {r.p50_ms:.1f} "
            f"| {r.p99_ms:.1f} | {r.non_2xx} | {r.errors} | {r.peak_rss_mb or '-'} |"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
