"""What SDKs poll: GET /api/client/features with 2,000 flags, ours beside the reference.

Run with `make bench` (or `.venv/bin/python -m tests.bench.client_features`; wrk from Debian).
Both servers run at once, each on its own fresh database: ours (`python -m service serve` on
the embedded PostgreSQL, JSON request logs at info, as in production) and, with
BENCH_REFERENCE=1, the reference (../shared/reference/setup.sh --fresh, in a directory and on
ports of its own, so that it does not disturb a reference someone else is using). Each gets
BENCH_FLAGS flags (default 2,000) through its admin API, each with a flexibleRollout strategy
with a constraint and enabled in development, and a client token for development.

Then wrk at concurrency 16 asks for the flags as an SDK does (`Authorization`,
`Unleash-Client-Spec: 5.2.0`), with and without `Accept-Encoding: gzip, deflate` (what
Unleash's Node and Python SDKs send), for full bodies (no If-None-Match) and for 304s
(If-None-Match with the ETag the same request got). Cells are interleaved (each round runs
every cell on both servers, the side that goes first alternating) so that noise hits both;
BENCH_ROUNDS rounds (default 2) of BENCH_SECONDS seconds a cell (default 10). A cell fails the
run unless every answer was a 304 (counted by a wrk Lua script), resp. a whole body (no answer
>= 400, and as many bytes read as whole answers make), and a request after it gets the same
answer as one before it. Prints a markdown table (the median of the rounds) and writes JSON to
tests/bench/out/client_features.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp

from tests.bench.create import (
    REFERENCE_TOKEN,
    ROOT,
    TOKEN,
    RssSampler,
    parse_ms,
    serving_ours,
    serving_reference,
)

OUT = ROOT / "tests" / "bench" / "out" / "client_features.json"
PATH = "/api/client/features"
CONCURRENCY = 16
SPEC = "5.2.0"
# What the official SDKs send: Node's unleash-client 6.12 (make-fetch-happen, minipass-fetch)
# "gzip,deflate", Python's UnleashClient 6.9 (requests) "gzip, deflate".
SDK_ENCODINGS = "gzip, deflate"
# The reference of this benchmark lives apart from the one at the default place and ports.
REFERENCE_PLACE = {
    "UNLEASH_REF_DIR": "/tmp/unleash-ref-client-bench",
    "UNLEASH_PORT": "4262",
    "PG_PORT": "5463",
}
# Every cell's script: what wrk read, and its count of answers >= 400 (no hook for that).
REPORT = """
threads = {}
statuses = {}
function setup(thread)
  table.insert(threads, thread)
end
function done(summary, latency, requests)
  local total = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do
      total[status] = (total[status] or 0) + n
    end
  end
  io.write("STATUSES")
  for status, n in pairs(total) do
    io.write(" ", status, "=", n)
  end
  io.write(string.format("\\nREQUESTS %d BYTES %d ERRORS %d\\n", summary.requests,
                         summary.bytes, summary.errors.status))
end
"""
# 304 cells also count every answer's status. Not full-body cells: with a response() hook wrk
# copies each body into Lua, which costs big bodies much of their rate; there the
# check is no answer >= 400 and, from the bytes read, a whole body in every answer.
COUNT_STATUSES = """
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
"""
HEADROOM = 2048  # bytes of status line and headers around a body


@dataclass
class Cell:
    server: str
    answer: str  # "full" or "304"
    gzip: bool
    round: int
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    statuses: dict[str, int]
    bytes_per_answer: float
    body_bytes: int
    peak_rss_mb: float | None


@dataclass
class Server:
    name: str
    base: str
    pid: int
    secret: str  # a client token for development


def strategy(name: str) -> dict[str, Any]:
    return {
        "name": "flexibleRollout",
        "constraints": [{"contextName": "appName", "operator": "IN", "values": ["web", "ios"]}],
        "parameters": {"rollout": "50", "stickiness": "default", "groupId": name},
    }


async def seed(base: str, admin: str, flags: int, concurrency: int = 8) -> None:
    """`flags` flags, each with a flexibleRollout strategy with a constraint, enabled in
    development; `concurrency` flags are made at once, each in its three requests."""
    project = f"{base}/api/admin/projects/default/features"
    headers = {"Authorization": admin, "Content-Type": "application/json"}
    names = iter(f"bench-flag-{i:05d}" for i in range(flags))

    async def post(session: aiohttp.ClientSession, url: str, body: Any = None) -> None:
        async with session.post(url, json=body, headers=headers) as resp:
            if resp.status not in {200, 201}:
                raise RuntimeError(f"POST {url}: {resp.status} {await resp.text()}")

    async def worker(session: aiohttp.ClientSession) -> None:
        for name in names:
            await post(session, project, {"name": name, "type": "release"})
            environment = f"{project}/{name}/environments/development"
            await post(session, f"{environment}/strategies", strategy(name))
            await post(session, f"{environment}/on")

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))


def client_token(base: str, admin: str) -> str:
    body = {"tokenName": "bench-sdk", "type": "client", "environment": "development"}
    request = urllib.request.Request(
        base + "/api/admin/api-tokens",
        data=json.dumps(body | {"projects": ["*"]}).encode(),
        headers={"Authorization": admin, "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        return str(json.loads(resp.read())["secret"])


def sdk_headers(server: Server, *, gzip: bool) -> dict[str, str]:
    headers = {"Authorization": server.secret, "Unleash-Client-Spec": SPEC}
    if gzip:
        headers["Accept-Encoding"] = SDK_ENCODINGS
    return headers


def probe(server: Server, headers: dict[str, str]) -> tuple[int, str, bytes]:
    """(status, ETag, body as sent: gzipped when asked for)."""
    request = urllib.request.Request(server.base + PATH, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, resp.headers.get("ETag", ""), resp.read()
    except urllib.error.HTTPError as exc:  # a 304 comes as one
        return exc.code, exc.headers.get("ETag", ""), exc.read()


def check_flags(server: Server, flags: int) -> None:
    """The server shows the flags it was given, each enabled with its constrained rollout."""
    request = urllib.request.Request(server.base + PATH, headers=sdk_headers(server, gzip=False))
    with urllib.request.urlopen(request, timeout=30) as resp:
        features = json.loads(resp.read())["features"]
    made = [f for f in features if f["name"].startswith("bench-flag-")]
    assert len(made) == flags, (server.name, len(made))
    for feature in made:
        assert feature["enabled"], feature
        [rollout] = feature["strategies"]
        assert rollout["name"] == "flexibleRollout", feature
        assert rollout["constraints"][0]["contextName"] == "appName", feature


def measure(server: Server, answer: str, *, gzip: bool, seconds: int, round_: int) -> Cell:
    headers = sdk_headers(server, gzip=gzip)
    status, etag, body = probe(server, headers)
    assert status == 200, (server.name, status)
    assert etag, f"{server.name} sends no ETag"
    if answer == "304":
        headers["If-None-Match"] = etag
        status, _, _ = probe(server, headers)
        assert status == 304, (server.name, status)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(REPORT + (COUNT_STATUSES if answer == "304" else ""))
    sampler = RssSampler(server.pid)
    sampler.start()
    try:
        args = ["wrk", "-t", "2", "-c", str(CONCURRENCY), "-d", f"{seconds}s", "--latency"]
        for name, value in headers.items():
            args += ["-H", f"{name}: {value}"]
        out = subprocess.run(
            [*args, "-s", script.name, server.base + PATH],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        sampler.stop.set()
        sampler.join()
        Path(script.name).unlink()
    statuses = dict(re.findall(r" (\d+)=(\d+)", _line(out, "STATUSES")))
    totals = re.fullmatch(r"REQUESTS (\d+) BYTES (\d+) ERRORS (\d+)", _line(out, "REQUESTS"))
    latency = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", out, re.MULTILINE))
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert totals, out
    assert rps, out
    assert latency, out
    per_answer = int(totals[2]) / max(int(totals[1]), 1)
    if answer == "304":
        wrong = set(statuses) != {"304"} or per_answer > HEADROOM
    else:
        wrong = not len(body) <= per_answer <= len(body) * 1.01 + HEADROOM
    # and after the cell, the same answer as before it: nothing changed meanwhile (the
    # reference's 304s carry no ETag)
    after = probe(server, headers)[:2]
    expected = (304, after[1]) if answer == "304" else (200, etag)
    if wrong or int(totals[3]) or "Socket errors" in out or after != expected:
        sys.exit(f"{server.name} {answer} gzip={gzip}: not all {answer} (after: {after})\n{out}")
    return Cell(
        server=server.name,
        answer=answer,
        gzip=gzip,
        round=round_,
        requests_per_s=float(rps[1]),
        p50_ms=parse_ms(latency["50"]),
        p99_ms=parse_ms(latency["99"]),
        statuses={k: int(v) for k, v in statuses.items()},
        bytes_per_answer=per_answer,
        body_bytes=len(body),
        peak_rss_mb=round(sampler.peak / 2**20, 1),
    )


def _line(out: str, prefix: str) -> str:
    found = re.search(rf"^{prefix}.*$", out, re.MULTILINE)
    assert found, out
    return found[0]


def table(cells: list[Cell]) -> str:
    """The median of the rounds, per server and cell."""
    groups: dict[tuple[str, bool, str], list[Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.answer, cell.gzip, cell.server), []).append(cell)
    lines = [
        (
            "| answer | Accept-Encoding | server | requests/s | p50 ms | p99 ms "
            "| body bytes | peak RSS MB | rounds (requests/s) |"
        ),
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for (answer, gzip, server), group in sorted(
        groups.items(), key=lambda item: (item[0][0] != "304", not item[0][1], item[0][2])
    ):
        lines.append(
            f"| {answer} | {SDK_ENCODINGS if gzip else '-'} | {server} "
            f"| {statistics.median(c.requests_per_s for c in group):,.0f} "
            f"| {statistics.median(c.p50_ms for c in group):.2f} "
            f"| {statistics.median(c.p99_ms for c in group):.2f} "
            f"| {(group[0].body_bytes if answer == 'full' else 0):,} "
            f"| {max(c.peak_rss_mb or 0 for c in group)} "
            f"| {' / '.join(f'{c.requests_per_s:,.0f}' for c in group)} |"
        )
    return "\n".join(lines)


def main() -> int:
    if shutil.which("wrk") is None:
        print("wrk is needed: apt-get install wrk", file=sys.stderr)
        return 2
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "2"))
    flags = int(os.environ.get("BENCH_FLAGS", "2000"))
    reference = os.environ.get("BENCH_REFERENCE") == "1"
    for key, value in REFERENCE_PLACE.items():
        os.environ.setdefault(key, value)
    servers: list[Server] = []
    with ExitStack() as stack:
        base, pid = stack.enter_context(serving_ours())
        asyncio.run(seed(base, TOKEN, flags))
        servers.append(Server("ours", base, pid, client_token(base, TOKEN)))
        if reference:
            base, pid = stack.enter_context(serving_reference())
            asyncio.run(seed(base, REFERENCE_TOKEN, flags))
            servers.append(Server("reference", base, pid, client_token(base, REFERENCE_TOKEN)))
        for server in servers:
            check_flags(server, flags)
        cells = []
        kinds = (("304", True), ("full", True), ("304", False), ("full", False))
        for round_ in range(rounds):
            for i, (answer, gzip) in enumerate(kinds):
                order = servers if (round_ * len(kinds) + i) % 2 == 0 else servers[::-1]
                for server in order:
                    cell = measure(server, answer, gzip=gzip, seconds=seconds, round_=round_)
                    print(
                        f"round {round_} {server.name} {answer} gzip={gzip}: "
                        f"{cell.requests_per_s:,.0f}/s p99 {cell.p99_ms:.1f} ms",
                        file=sys.stderr,
                    )
                    cells.append(cell)
    print(table(cells))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps([asdict(c) for c in cells], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
