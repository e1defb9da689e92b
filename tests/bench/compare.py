"""Ours beside the reference, one command for every operation: `make bench-compare`.

Run with `make bench-compare` (or `.venv/bin/python -m tests.bench.compare` with the `bench`
extra installed; wrk from Debian). Starts the reference (Unleash 6.10.1 from
../shared/reference/setup.sh --fresh, in a directory and on ports of its own: UNLEASH_REF_DIR
/tmp/unleash-ref-compare, UNLEASH_PORT 4272, PG_PORT 5473 unless set, its flag limit lifted)
and our service (`python -m service serve` on a fresh embedded PostgreSQL, default durability,
JSON logs), both at once, and loads the same data set into both: 10,000 users `user00000` ..
`user09999` (username and name; e-mail `user00000@example.com`), 2,000 flags in project
default, a flag `src` to clone (2 environments x 2 strategies), and 50 tokens to list (ours: a
service account's, GET /api/admin/service-account/:id/token with the admin token; the
reference, whose open-source edition has no service accounts: the admin user's own tokens,
GET /api/admin/user/tokens authenticated by one of them, 10 made through its API, which
refuses more, and 40 added in its database). Ours gets its users from `import-users`, the
reference's go straight into its PostgreSQL (one INSERT; a Viewer role each, as its API gives).

Then wrk measures every operation at concurrency 1, 16 and 64 (`-t 1` at 1, `-t 2` above),
cells interleaved: for each operation and concurrency ours then the reference, the order
reversed every other round. While one side's cell runs, the other's server and PostgreSQL are
paused (SIGSTOP, continued after with SIGCONT and a second to settle): each is measured with
the machine to itself, and neither's background work lands in the other's cells.
Operations: health, create a flag and clone `src` (fresh names), the token listing, user search
with no match (`q=user12`), one (`q=user00042`) and many (`q=user000`: 100 users on both, ours'
whole first page), the flag table of a project of SEARCH_FLAGS (10,000) flags as Unleash's UI
opens it (`search-features`: a page of 25, newest first, favourites first, as a person with 5
favourites: the admin user's own token on the reference, an Admin person's on ours), the users
page's list (`users-list`: GET /api/admin/user-admin, every one of the 10,000 users, as the UI
calls it), and deleting one inactive user per request (POST /api/admin/user-
admin/inactive/delete `{"ids": [id]}`). Before each delete cell a pool of inactive users is made
on that server (ours: imported as created 500 and last seen 400 days ago; the reference:
inserted as created 400 days ago, never seen), big enough for POOL_PER_SECOND requests a second;
the wrk script gives every request its own id. After the cell the users deleted are counted
against the 200s, and the rest of the pool is deleted.

Every cell's wrk script counts every answer's status; a cell fails when any answer had
another status than the operation's (200; create and clone: 201 from the reference, 200 from
ours, as docs/behavior.md, create a flag and clone a flag, says), on socket errors or timeouts
(wrk `--timeout 30s`), when a delete pool ran out, or when the users deleted are not the 200s
(plus at most the requests still unanswered when wrk stopped). Peak RSS of each server process
(Python, resp. Node) and the CPU its PostgreSQL used are sampled per cell. After the cells ours
is stopped and `python -m service verify` must pass.

The machine is probed too (tests/bench/machine.py): a fixed CPU loop before and after the run,
and all along one 8 KiB write and fdatasync every 0.1 s in /tmp, where both PostgreSQL servers
keep their data. The header gives the loop's times and the flushes' median, slowest and number
over 20 ms; the table gives, for each cell, the slowest flush during any part of its wrk run
(not the delete pool's making or clearing around it); the JSON has each cell's wrk run in
seconds since `clock_zero`, when the benchmark loaded. A commit waits for such a flush, so a
disk that stalls shows in the p99 of the writing cells (create, clone, delete) on both sides.
A probe that failed says so in the header; the column shows "-" where no flush was sampled.

BENCH_SECONDS per cell (default 10), BENCH_ROUNDS rounds (default 1; the table gives the
median), BENCH_ONLY=health,search-none runs only those operations, BENCH_OURS_ONLY=1 only ours
(a quick loop while working on one operation; either leaves the docs alone).
Prints the table; writes JSON to tests/bench/out/compare-<timestamp>.json and, for a run of
every operation, the table and docs/bench-compare.png into docs/benchmarks.md between the
bench-compare markers. Exit 1 when a cell or verify failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import asyncpg
import psutil

from tests.bench import machine
from tests.bench.clone import call, make_source
from tests.bench.create import (
    REFERENCE,
    REFERENCE_TOKEN,
    ROOT,
    TOKEN,
    RssSampler,
    VerifyFailedError,
    parse_ms,
    serving_ours,
    serving_reference,
)
from tests.bench.tokens import EXPIRES, own_tokens, sign_in
from tests.bench.users import import_file

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from types import FrameType

OUT_DIR = ROOT / "tests" / "bench" / "out"
# The zero of the cells' wrk times (Cell.wrk_from_s): when this module was loaded, a second
# or two before the run's `started` (the JSON gives both, `clock_zero` for this one).
STARTED = time.monotonic()
STARTED_AT = datetime.now(UTC)
DOC = ROOT / "docs" / "benchmarks.md"
PLOT = ROOT / "docs" / "bench-compare.png"
START_MARK = "<!-- bench-compare:start -->"
END_MARK = "<!-- bench-compare:end -->"
SECTION = "## Side by side with the reference: `make bench-compare`"
# The reference of this benchmark lives apart from anyone else's (default place and ports).
REFERENCE_PLACE = {
    "UNLEASH_REF_DIR": "/tmp/unleash-ref-compare",
    "UNLEASH_PORT": "4272",
    "PG_PORT": "5473",
}
CONCURRENCY = (1, 16, 64)
SIDES = ("reference", "ours")  # the table's order
USERS = 10_000
FLAGS = 2_000
TOKENS = 50
REFERENCE_PAT_LIMIT = 10  # its API refuses an eleventh personal access token
# Delete requests a second a pool must last for (a cell of BENCH_SECONDS), with room to
# spare over the rate each side deletes at (docs/benchmarks.md).
POOL_PER_SECOND = {"ours": 3_000, "reference": 800}
POOL_SLACK = 1_000
SENTINEL_ID = 2_000_000_000  # no one's: sent only by a script whose pool ran out
CHUNK = 10_000  # ids per bulk delete when a pool is cleared
RESUMED_SETTLE = 1.0  # seconds after a paused side is continued before its next cell
# Each unwinds the run like Ctrl-C (both servers stop, a paused one is continued first).
INTERRUPTS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
SEARCHES = {  # operation: (q, users found)
    "search-none": ("user12", 0),
    "search-one": ("user00042", 1),
    "search-many": ("user000", 100),  # user00000 .. user00099: ours' first page exactly
}
WRK_TIMEOUT = "30s"
# The flag table's cell: a project of its own with this many flags (made through each side's
# API, several at a time; the reference's project goes into its database, as its open-source
# edition creates none), a few of them the caller's favourites.
SEARCH_PROJECT = "bench-search"
SEARCH_FLAGS = int(os.environ.get("BENCH_SEARCH_FLAGS", "10000"))
SEARCH_FAVORITES = 5
SEARCH_PAGE = 25
SEARCH_PATH = (
    f"/api/admin/search/features?project=IS:{SEARCH_PROJECT}&offset=0&limit={SEARCH_PAGE}"
    "&favoritesFirst=true&sortBy=createdAt&sortOrder=desc"
)
SEARCH_PERSON = ("bench-person", "Bench-Pers0n!2026")  # ours: an Admin person
# The playground's cell: a project of its own with this many flags, each with a rollout
# constrained to some users and on in development, asked about for one context.
PLAYGROUND_PROJECT = "bench-playground"
PLAYGROUND_FLAGS = 100
PLAYGROUND_BODY = {
    "projects": [PLAYGROUND_PROJECT],
    "environment": "development",
    "context": {"appName": "bench", "userId": "user-7", "properties": {"region": "eu"}},
}

# Every cell's script: counts every answer's status per thread (response()), and in done()
# adds them up with what request() handed out, and writes them after wrk's own report.
COMMON_LUA = """
local threads = {}
statuses = {}
handed = 0
ran_out = 0
first = 0
function setup(thread)
  table.insert(threads, thread)
  thread:set("first", #threads)
end
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
function done(summary, latency, requests)
  local total, handed_all, ran_out_all = {}, 0, 0
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do
      total[status] = (total[status] or 0) + n
    end
    handed_all = handed_all + thread:get("handed")
    ran_out_all = ran_out_all + thread:get("ran_out")
  end
  io.write("STATUSES")
  for status, n in pairs(total) do
    io.write(" ", status, "=", n)
  end
  io.write("\\nHANDED")
  for i, thread in ipairs(threads) do
    io.write(" ", i, "=", thread:get("handed"))
  end
  local e = summary.errors
  io.write(string.format("\\nSUMMARY requests=%d connect=%d read=%d write=%d timeout=%d",
                         summary.requests, e.connect, e.read, e.write, e.timeout))
  io.write(string.format(" status=%d handed=%d ran_out=%d\\n", e.status, handed_all, ran_out_all))
end
"""
# A fresh name per request: the run's prefix, the thread's number, a counter.
NAMES_LUA = """
function request()
  handed = handed + 1
  local name = RUN .. "-" .. first .. "-" .. handed
  return wrk.format("POST", PATH, HEADERS, BODY_START .. name .. BODY_END)
end
"""
# Thread k of n sends the pool's ids k, k + n, k + 2n, ...; past the end, the sentinel.
DELETE_LUA = """
local ids = {}
for id in string.gmatch(POOL, "%d+") do
  ids[#ids + 1] = id
end
function request()
  local id = ids[first + STEP * handed]
  handed = handed + 1
  if id == nil then
    ran_out = ran_out + 1
    id = SENTINEL
  end
  return wrk.format("POST", PATH, HEADERS, '{"ids":[' .. id .. ']}')
end
"""


# One fixed body a request.
POST_LUA = """
function request()
  handed = handed + 1
  return wrk.format("POST", PATH, HEADERS, BODY)
end
"""


@dataclass(frozen=True)
class Operation:
    name: str
    reference_status: int  # what every answer must be, from the reference
    kind: str  # "get", "names" (POST a fresh name), "post" (a fixed body) or "delete"
    path: str  # for "tokens": filled in per server

    def status(self, server: str) -> int:
        """Ours answers 200 to a create and a clone (docs/behavior.md, create a flag and clone
        a flag); the reference 201."""
        return 200 if server == "ours" else self.reference_status


CREATE = Operation("create", 201, "names", "/api/admin/projects/default/features")
OPERATIONS = (
    Operation("health", 200, "get", "/health"),
    CREATE,
    Operation("clone", 201, "names", "/api/admin/projects/default/features/src/clone"),
    Operation("tokens", 200, "get", ""),
    *(
        Operation(name, 200, "get", f"/api/admin/user-admin/search?q={q}")
        for name, (q, _) in SEARCHES.items()
    ),
    Operation("search-features", 200, "get", SEARCH_PATH),
    # The users page: every person, as Unleash's web UI lists them (GET, no parameters).
    Operation("users-list", 200, "get", "/api/admin/user-admin"),
    Operation("delete", 200, "delete", "/api/admin/user-admin/inactive/delete"),
    Operation("playground", 200, "post", "/api/admin/playground"),
)


@dataclass
class Side:
    name: str  # "ours" or "reference"
    base: str
    pid: int
    admin: str  # an admin API token
    tokens_path: str
    tokens_auth: str
    postmaster_pid_file: Path
    env: dict[str, str] = field(default_factory=dict)  # ours: for CLI commands
    dsn: str = ""  # the reference's database
    person_auth: str = ""  # a person's token (the flag table's cell: favourites are theirs)


@dataclass
class Cell:
    operation: str
    concurrency: int
    server: str
    round: int
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    statuses: dict[str, int]
    answered: int
    socket_errors: dict[str, int]
    handed: int  # names or ids request() handed out (one more than sent on thread 1)
    handed_per_thread: list[int]
    ran_out: int
    peak_rss_mb: float
    server_cpu_pct: float
    postgres_cpu_pct: float
    # wrk's run, in seconds since STARTED (the JSON's clock_zero), and the slowest disk flush
    # during any part of it (machine.py; None when none was sampled)
    wrk_from_s: float = 0.0
    wrk_to_s: float = 0.0
    slowest_flush_ms: float | None = None
    pool: int | None = None
    deleted: int | None = None
    unanswered: int | None = None  # delete cells: handed out but no answer when wrk stopped
    wrk_output: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def wrk_window(self) -> tuple[float, float]:
        """wrk's run in time.monotonic(), as machine.FlushProbe.between takes it."""
        return STARTED + self.wrk_from_s, STARTED + self.wrk_to_s


class CpuMeter:
    """CPU seconds of a process and its children between start() and stop(), as a percentage
    of one core. Children that exit in between are missed (ours and the reference both keep
    their PostgreSQL connections in pools)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before: dict[int, float] = {}
        self.started = 0.0

    def _sample(self) -> dict[int, float]:
        try:
            root = psutil.Process(self.pid)
            processes = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return {}
        out: dict[int, float] = {}
        for process in processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                times = process.cpu_times()
                out[process.pid] = times.user + times.system
        return out

    def start(self) -> None:
        self.before = self._sample()
        self.started = time.monotonic()

    def stop(self) -> float:
        after = self._sample()
        used = sum(cpu - self.before.get(pid, 0.0) for pid, cpu in after.items())
        return round(100 * used / max(time.monotonic() - self.started, 1e-9), 1)


def postmaster(pid_file: Path) -> int:
    return int(pid_file.read_text().split()[0])


@contextlib.contextmanager
def paused(sides: Sequence[Side]) -> Iterator[None]:
    """These sides' servers and PostgreSQL clusters stopped (SIGSTOP, every process of each)
    while another side's cell runs, and continued after (SIGCONT), whatever happens. Both stay
    up and keep their state, but neither's background work (timers, autovacuum, checkpoints)
    runs in the other's cell: idle beside ours, the reference takes a share of ours' search
    throughput and raises its p99 (docs/benchmarks.md)."""
    processes: dict[int, psutil.Process] = {}
    for side in sides:
        for pid in (side.pid, postmaster(side.postmaster_pid_file)):
            with contextlib.suppress(psutil.NoSuchProcess):
                root = psutil.Process(pid)
                for process in (root, *root.children(recursive=True)):
                    processes[process.pid] = process
    stopped: list[psutil.Process] = []
    try:
        for process in processes.values():
            stopped.append(process)  # before: an interrupt in between still continues it
            with contextlib.suppress(psutil.NoSuchProcess):
                process.suspend()
        yield
    finally:
        # No interrupt may leave one stopped: SIGINT, SIGTERM and SIGHUP wait until all run.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTS)
        try:
            for process in reversed(stopped):
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.resume()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if stopped:
            time.sleep(RESUMED_SETTLE)  # its timers that fell due meanwhile run now, not in a cell


# ---------------------------------------------------------------------------------------------
# The data set


def users_file(directory: Path) -> Path:
    path = directory / "users.jsonl"
    with path.open("w") as out:
        for i in range(USERS):
            name = f"user{i:05d}"
            line = {"username": name, "name": name, "email": f"{name}@example.com", "rootRole": 3}
            out.write(json.dumps(line) + "\n")
    return path


REFERENCE_USERS = """
WITH made AS (
  INSERT INTO users (name, username, email, email_hash)
  SELECT 'user' || lpad(i::text, 5, '0'), 'user' || lpad(i::text, 5, '0'),
         'user' || lpad(i::text, 5, '0') || '@example.com',
         md5('user' || lpad(i::text, 5, '0') || '@example.com')
  FROM generate_series(0, $1 - 1) AS i
  RETURNING id
)
INSERT INTO role_user (role_id, user_id, project)
SELECT (SELECT id FROM roles WHERE name = 'Viewer'), id, 'default' FROM made
"""
REFERENCE_PATS = """
INSERT INTO personal_access_tokens (secret, description, user_id, expires_at)
SELECT 'user:' || md5(random()::text) || md5(random()::text), 'bench ' || i, $1,
       now() + interval '30 days'
FROM generate_series(1, $2) AS i
"""
REFERENCE_POOL = """
WITH made AS (
  INSERT INTO users (name, username, email, email_hash, created_at, seen_at)
  SELECT $1 || i, $1 || i, $1 || i || '@pool.example.net', md5($1 || i || '@pool.example.net'),
         now() - interval '400 days', NULL
  FROM generate_series(1, $2) AS i
  RETURNING id
)
INSERT INTO role_user (role_id, user_id, project)
SELECT (SELECT id FROM roles WHERE name = 'Viewer'), id, 'default' FROM made
"""


async def sql(dsn: str, statement: str, *args: object) -> str:
    conn = await asyncpg.connect(dsn)
    try:
        return str(await conn.execute(statement, *args))
    finally:
        await conn.close()


async def sql_value(dsn: str, query: str, *args: object) -> Any:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(query, *args)
    finally:
        await conn.close()


async def create_flags(
    base: str,
    admin: str,
    status: int,
    concurrency: int = 8,
    *,
    project: str = "default",
    count: int = FLAGS,
    prefix: str = "flag",
) -> None:
    """`count` flags, `concurrency` at a time; each answer must have this status."""
    url = f"{base}/api/admin/projects/{project}/features"
    headers = {"Authorization": admin, "Content-Type": "application/json"}
    names = iter(f"{prefix}-{i:05d}" for i in range(count))

    async def worker(session: aiohttp.ClientSession) -> None:
        for name in names:
            async with session.post(url, json={"name": name}, headers=headers) as resp:
                if resp.status != status:
                    raise RuntimeError(f"create {name}: {resp.status} {await resp.text()}")

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))


def seed_ours(base: str, env: dict[str, str]) -> tuple[str, str]:
    """Users, flags, the flag to clone and a service account's tokens: (listing path, auth)."""
    work = Path(tempfile.mkdtemp(prefix="bench-compare-", dir="/tmp"))
    try:
        log(f"ours: {USERS:,} users imported in {import_file(env, users_file(work)):.1f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    started = time.perf_counter()
    asyncio.run(create_flags(base, TOKEN, CREATE.status("ours")))
    log(f"ours: {FLAGS:,} flags in {time.perf_counter() - started:.1f} s")
    make_source(base, TOKEN, "src", envs=["development", "production"], strategies=2, constraints=1)
    body = {"username": "bench-sa", "rootRole": 1}
    account = call(base, TOKEN, "POST", "/api/admin/service-account", body)
    path = f"/api/admin/service-account/{account['id']}/token"
    for i in range(TOKENS):
        call(base, TOKEN, "POST", path, {"description": f"t{i}", "expiresAt": EXPIRES})
    return path, TOKEN


def seed_reference(base: str, dsn: str) -> tuple[str, str]:
    """The same data set; the token listing is the admin user's own (authenticated by one)."""
    started = time.perf_counter()
    asyncio.run(sql(dsn, REFERENCE_USERS, USERS))
    log(f"reference: {USERS:,} users inserted in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    asyncio.run(create_flags(base, REFERENCE_TOKEN, CREATE.status("reference")))
    log(f"reference: {FLAGS:,} flags in {time.perf_counter() - started:.1f} s")
    make_source(
        base,
        REFERENCE_TOKEN,
        "src",
        envs=["development", "production"],
        strategies=2,
        constraints=1,
    )
    pat = reference_tokens(base)[0]
    admin_id = asyncio.run(sql_value(dsn, "SELECT id FROM users WHERE username = 'admin'"))
    asyncio.run(sql(dsn, REFERENCE_PATS, admin_id, TOKENS - REFERENCE_PAT_LIMIT))
    return "/api/admin/user/tokens", pat


def reference_tokens(base: str, attempts: int = 5) -> list[str]:
    """The admin's own tokens on the reference, through a password sign-in. Now and then
    (in some runs, never by hand) the reference answers 401 to the first token right after a
    sign-in that succeeded: the sign-in and the tokens are then tried again."""
    for attempt in range(1, attempts + 1):
        try:
            return own_tokens(base, sign_in(base, "admin", "unleash4all"), REFERENCE_PAT_LIMIT)
        except urllib.error.HTTPError as exc:
            if exc.code != HTTPStatus.UNAUTHORIZED or attempt == attempts:
                raise
            log(f"reference: 401 on its first token after signing in (try {attempt}); again")
            time.sleep(2)
    raise AssertionError  # pragma: no cover - the loop returns or raises


REFERENCE_SEARCH_PROJECT = """
WITH made AS (
  INSERT INTO projects (id, name, description) VALUES ($1, 'Bench search', 'bench-compare')
  RETURNING id
)
INSERT INTO project_environments (project_id, environment_name)
SELECT made.id, e.name FROM made, environments e WHERE e.name IN ('development', 'production')
"""


def seed_search(side: Side) -> None:
    """The flag table's project and its flags on one side, and the caller's favourites."""
    started = time.perf_counter()
    if side.name == "ours":
        project = {"id": SEARCH_PROJECT, "name": "Bench search"}
        call(side.base, side.admin, "POST", "/api/admin/projects", project)
        username, password = SEARCH_PERSON
        person = {"username": username, "password": password, "rootRole": 1}
        call(side.base, side.admin, "POST", "/api/admin/user-admin", person)
        side.person_auth = own_tokens(side.base, sign_in(side.base, username, password), 1)[0]
    else:
        asyncio.run(sql(side.dsn, REFERENCE_SEARCH_PROJECT, SEARCH_PROJECT))
        side.person_auth = side.tokens_auth  # the admin user's own token
    asyncio.run(
        create_flags(
            side.base,
            side.admin,
            CREATE.status(side.name),
            16,
            project=SEARCH_PROJECT,
            count=SEARCH_FLAGS,
            prefix="search",
        )
    )
    for i in range(0, SEARCH_FLAGS, max(1, SEARCH_FLAGS // SEARCH_FAVORITES))[:SEARCH_FAVORITES]:
        path = f"/api/admin/projects/{SEARCH_PROJECT}/features/search-{i:05d}/favorites"
        call(side.base, side.person_auth, "POST", path)
    log(
        f"{side.name}: {SEARCH_FLAGS:,} flags in {SEARCH_PROJECT} in "
        f"{time.perf_counter() - started:.1f} s"
    )


def seed_playground(side: Side) -> None:
    """The playground's project and its flags on one side: each a flexible rollout (50%)
    with a constraint on userId (a field both sides know), with two variants, on in
    development."""
    started = time.perf_counter()
    if side.name == "ours":
        project = {"id": PLAYGROUND_PROJECT, "name": "Bench playground"}
        call(side.base, side.admin, "POST", "/api/admin/projects", project)
        path = f"/api/admin/projects/{PLAYGROUND_PROJECT}/environments"
        with contextlib.suppress(urllib.error.HTTPError):  # 409: the project has it already
            call(side.base, side.admin, "POST", path, {"environment": "development"})
    else:
        asyncio.run(sql(side.dsn, REFERENCE_SEARCH_PROJECT, PLAYGROUND_PROJECT))
    asyncio.run(
        create_flags(
            side.base,
            side.admin,
            CREATE.status(side.name),
            8,
            project=PLAYGROUND_PROJECT,
            count=PLAYGROUND_FLAGS,
            prefix="pg",
        )
    )
    variants = [
        {"name": v, "weight": 500, "weightType": "variable", "stickiness": "default"}
        for v in ("a", "b")
    ]
    rollout = {
        "name": "flexibleRollout",
        "parameters": {"rollout": "50", "stickiness": "default", "groupId": "g"},
        "constraints": [{"contextName": "userId", "operator": "NOT_IN", "values": ["blocked"]}],
        "variants": variants,
    }
    for i in range(PLAYGROUND_FLAGS):
        env = f"/api/admin/projects/{PLAYGROUND_PROJECT}/features/pg-{i:05d}/environments"
        call(side.base, side.admin, "POST", f"{env}/development/strategies", rollout)
        call(side.base, side.admin, "POST", f"{env}/development/on")
    found = call(side.base, side.admin, "POST", "/api/admin/playground", PLAYGROUND_BODY)
    if len(found["features"]) != PLAYGROUND_FLAGS:
        raise RuntimeError(f"{side.name}: the playground has {len(found['features'])} flags")
    log(
        f"{side.name}: {PLAYGROUND_FLAGS} flags in {PLAYGROUND_PROJECT} in "
        f"{time.perf_counter() - started:.1f} s"
    )


def check_search(side: Side) -> None:
    found = call(side.base, side.person_auth, "GET", SEARCH_PATH)
    favorites = [f["name"] for f in found["features"] if f.get("favorite")]
    if (found["total"], len(found["features"]), len(favorites)) != (
        SEARCH_FLAGS,
        min(SEARCH_PAGE, SEARCH_FLAGS),
        min(SEARCH_FAVORITES, SEARCH_PAGE, SEARCH_FLAGS),
    ):
        raise RuntimeError(
            f"{side.name}: the flag table has {found['total']} flags, a page of "
            f"{len(found['features'])}, {len(favorites)} favourites"
        )


def check_data_set(side: Side) -> None:
    """What both servers must answer, before the cells and after them."""
    for q, expected in SEARCHES.values():
        found = call(side.base, side.admin, "GET", f"/api/admin/user-admin/search?q={q}")
        users = found if isinstance(found, list) else found["users"]
        if len(users) != expected:
            raise RuntimeError(f"{side.name}: q={q} found {len(users)} users, not {expected}")
    listed = call(side.base, side.tokens_auth, "GET", side.tokens_path)
    tokens = listed["pats"] if isinstance(listed, dict) else listed
    if len(tokens) != TOKENS:
        raise RuntimeError(f"{side.name}: the token listing has {len(tokens)}, not {TOKENS}")
    if inactive_ids(side):
        raise RuntimeError(f"{side.name}: inactive users outside a delete cell")
    source = call(side.base, side.admin, "GET", "/api/admin/projects/default/features/src")
    strategies = sum(len(e["strategies"]) for e in source["environments"])
    if strategies != 2 * 2:  # 2 environments x 2 strategies
        raise RuntimeError(f"{side.name}: the flag to clone has {strategies} strategies")


# ---------------------------------------------------------------------------------------------
# Delete pools


def inactive_ids(side: Side) -> list[int]:
    listed = call(side.base, side.admin, "GET", "/api/admin/user-admin/inactive")
    return sorted(int(u["id"]) for u in listed["inactiveUsers"])


def make_pool(side: Side, tag: str, size: int) -> list[int]:
    """`size` inactive users named `tag`<n>; returns their ids (every inactive user's)."""
    if side.name == "ours":
        now = datetime.now(UTC)
        created = (now - timedelta(days=500)).strftime("%Y-%m-%dT%H:%M:%SZ")
        seen = (now - timedelta(days=400)).strftime("%Y-%m-%dT%H:%M:%SZ")
        work = Path(tempfile.mkdtemp(prefix="bench-compare-", dir="/tmp"))
        try:
            path = work / "pool.jsonl"
            with path.open("w") as out:
                for i in range(1, size + 1):
                    line = {
                        "username": f"{tag}{i}",
                        "name": f"{tag}{i}",
                        "email": f"{tag}{i}@pool.example.net",
                        "rootRole": 3,
                        "createdAt": created,
                        "seenAt": seen,
                    }
                    out.write(json.dumps(line) + "\n")
            import_file(side.env, path)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    else:
        asyncio.run(sql(side.dsn, REFERENCE_POOL, tag, size))
    ids = inactive_ids(side)
    if len(ids) != size:
        raise RuntimeError(f"{side.name}: {len(ids)} inactive users, not the pool's {size}")
    return ids


def clear_pool(side: Side, tag: str) -> None:
    """Delete what is left of the pool; no inactive user remains."""
    if side.name == "ours":
        left = inactive_ids(side)
        for start in range(0, len(left), CHUNK):
            body = {"ids": left[start : start + CHUNK]}
            call(side.base, side.admin, "POST", "/api/admin/user-admin/inactive/delete", body)
    else:  # the reference only marks its deleted users: remove them all
        asyncio.run(sql(side.dsn, "DELETE FROM users WHERE name LIKE $1", tag + "%"))
    if inactive_ids(side):
        raise RuntimeError(f"{side.name}: inactive users left after clearing the pool")


# ---------------------------------------------------------------------------------------------
# Cells


def lua_headers(headers: dict[str, str]) -> str:
    return "{" + ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()) + "}"


def script_for(side: Side, op: Operation, threads: int, pool: list[int]) -> str:
    headers = {"Authorization": side.admin, "Content-Type": "application/json"}
    if op.kind == "names":
        body = {"name": "NAME", "type": "release"} if op.name == "create" else {"name": "NAME"}
        start, end = json.dumps(body).split("NAME")
        return COMMON_LUA + NAMES_LUA.replace("RUN", json.dumps(f"b{time.time_ns():x}")).replace(
            "PATH", json.dumps(op.path)
        ).replace("HEADERS", lua_headers(headers)).replace("BODY_START", json.dumps(start)).replace(
            "BODY_END", json.dumps(end)
        )
    if op.kind == "post":
        return COMMON_LUA + POST_LUA.replace("PATH", json.dumps(op.path)).replace(
            "HEADERS", lua_headers(headers)
        ).replace("BODY", json.dumps(json.dumps(PLAYGROUND_BODY)))
    if op.kind == "delete":
        return COMMON_LUA + (
            DELETE_LUA.replace("POOL", json.dumps(",".join(map(str, pool))))
            .replace("STEP", str(threads))
            .replace("SENTINEL", str(SENTINEL_ID))
            .replace("PATH", json.dumps(op.path))
            .replace("HEADERS", lua_headers(headers))
        )
    return COMMON_LUA


def run_cell(side: Side, op: Operation, concurrency: int, seconds: int, round_: int) -> Cell:
    threads = 1 if concurrency == 1 else 2
    pool: list[int] = []
    tag = f"pool-{round_}-{concurrency}-"
    if op.kind == "delete":
        size = POOL_PER_SECOND[side.name] * seconds + POOL_SLACK
        pool = make_pool(side, tag, size)
    path = op.path
    auth = side.admin
    if op.name == "tokens":
        path, auth = side.tokens_path, side.tokens_auth
    if op.name == "search-features":
        auth = side.person_auth
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(script_for(side, op, threads, pool))
    args = ["wrk", "-t", str(threads), "-c", str(concurrency), "-d", f"{seconds}s"]
    args += ["--latency", "--timeout", WRK_TIMEOUT, "-s", script.name]
    if op.kind == "get":
        args += ["-H", f"Authorization: {auth}"]
    rss = RssSampler(side.pid)
    server_cpu = CpuMeter(side.pid)
    postgres_cpu = CpuMeter(postmaster(side.postmaster_pid_file))
    rss.start()
    server_cpu.start()
    postgres_cpu.start()
    wrk_from = time.monotonic() - STARTED
    try:
        out = subprocess.run(
            [*args, side.base + path], check=True, capture_output=True, text=True
        ).stdout
    finally:
        rss.stop.set()
        rss.join()
        Path(script.name).unlink()
    wrk_to = time.monotonic() - STARTED
    cell = parse_cell(out, side, op, concurrency, round_)
    cell.wrk_from_s, cell.wrk_to_s = round(wrk_from, 3), round(wrk_to, 3)
    cell.peak_rss_mb = round(rss.peak / 2**20, 1)
    cell.server_cpu_pct = server_cpu.stop()
    cell.postgres_cpu_pct = postgres_cpu.stop()
    if op.kind == "delete":
        check_deleted(cell, side, pool, op.status(side.name))
        clear_pool(side, tag)
    return cell


def parse_cell(out: str, side: Side, op: Operation, concurrency: int, round_: int) -> Cell:
    statuses_line = re.search(r"^STATUSES.*$", out, re.MULTILINE)
    summary_line = re.search(r"^SUMMARY (.*)$", out, re.MULTILINE)
    handed_line = re.search(r"^HANDED(.*)$", out, re.MULTILINE)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not (statuses_line and summary_line and handed_line and rps):
        raise RuntimeError(f"{side.name} {op.name} c{concurrency}: no report from wrk\n{out}")
    statuses = {k: int(v) for k, v in re.findall(r" (\d+)=(\d+)", statuses_line[0])}
    summary = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", summary_line[1])}
    latency = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", out, re.MULTILINE))
    errors = {k: summary[k] for k in ("connect", "read", "write", "timeout")}
    cell = Cell(
        operation=op.name,
        concurrency=concurrency,
        server=side.name,
        round=round_,
        requests_per_s=float(rps[1]),
        p50_ms=parse_ms(latency["50"]) if "50" in latency else float("inf"),
        p99_ms=parse_ms(latency["99"]) if "99" in latency else float("inf"),
        statuses=statuses,
        answered=summary["requests"],
        socket_errors=errors,
        handed=summary["handed"],
        handed_per_thread=[int(n) for _, n in re.findall(r" (\d+)=(\d+)", handed_line[1])],
        ran_out=summary["ran_out"],
        peak_rss_mb=0.0,
        server_cpu_pct=0.0,
        postgres_cpu_pct=0.0,
    )
    cell.wrk_output = out
    wanted = str(op.status(side.name))
    if set(latency) != {"50", "99"}:
        cell.problems.append("no latency distribution from wrk")
    if not cell.answered:
        cell.problems.append("no answer")
    others = {k: v for k, v in statuses.items() if k != wanted}
    if others:
        cell.problems.append(f"statuses other than {wanted}: {others}")
    if sum(statuses.values()) != cell.answered:
        cell.problems.append(f"{sum(statuses.values())} statuses counted, {cell.answered} answers")
    if any(errors.values()):
        cell.problems.append(f"socket errors {errors}")
    if cell.ran_out:
        cell.problems.append(f"the pool ran out: {cell.ran_out} requests without an id")
    return cell


def check_deleted(cell: Cell, side: Side, pool: list[int], status: int) -> None:
    """Each answer `status` deleted one pool user, and no user but those sent was deleted.

    wrk stops without waiting for the requests still under way (at most one a connection), and
    the server may finish them: so the users deleted are the ids handed out less those of the
    requests left unanswered, some of which may have been deleted too. Thread k of n was
    handed the pool's ids k, k + n, ...; wrk asks thread 1 for a request once before it
    starts, which it never sends (counted as handed and unanswered)."""
    left = set(inactive_ids(side))
    threads = len(cell.handed_per_thread)
    sent = {
        pool[k + threads * j]
        for k, count in enumerate(cell.handed_per_thread)
        for j in range(count)
        if k + threads * j < len(pool)
    }
    deleted = set(pool) - left
    cell.pool = len(pool)
    cell.deleted = len(deleted)
    cell.unanswered = cell.handed - cell.answered
    ok = cell.statuses.get(str(status), 0)
    if not left <= set(pool):
        cell.problems.append("inactive users outside the pool appeared")
    if not deleted <= sent:
        cell.problems.append(f"{len(deleted - sent)} users deleted whose ids were not sent")
    if not ok <= cell.deleted <= ok + cell.unanswered:
        cell.problems.append(
            f"deleted {cell.deleted} users for {ok} answers {status} "
            f"({cell.unanswered} requests unanswered at the stop)"
        )


# ---------------------------------------------------------------------------------------------
# Report


@dataclass
class Row:
    operation: str
    concurrency: int
    cells: dict[str, list[Cell]]

    def median(self, server: str, key: str) -> float:
        return float(statistics.median(getattr(c, key) for c in self.cells[server]))

    def peak(self, server: str) -> float:
        return max(c.peak_rss_mb for c in self.cells[server])

    def slowest_flush(self, server: str) -> str:
        known = [c.slowest_flush_ms for c in self.cells[server] if c.slowest_flush_ms is not None]
        return f"{max(known):,.0f}" if known else "-"

    @property
    def ok(self) -> bool:
        return all(c.ok for cells in self.cells.values() for c in cells)

    def counts(self, server: str) -> str:
        total: dict[str, int] = {}
        for cell in self.cells[server]:
            for status, n in cell.statuses.items():
                total[status] = total.get(status, 0) + n
        text = ", ".join(f"{n:,} x {s}" for s, n in sorted(total.items())) or "none"
        deleted = [c.deleted for c in self.cells[server] if c.deleted is not None]
        return text + (f", {sum(deleted):,} deleted" if deleted else "")


def rows_of(cells: list[Cell]) -> list[Row]:
    rows: dict[tuple[str, int], Row] = {}
    for cell in cells:
        row = rows.setdefault(
            (cell.operation, cell.concurrency), Row(cell.operation, cell.concurrency, {})
        )
        row.cells.setdefault(cell.server, []).append(cell)
    return list(rows.values())


def table(rows: list[Row]) -> str:
    lines = [
        (
            "| operation | c | reference req/s (p99 ms) | ours req/s (p99 ms) | ours / reference "
            "| peak RSS MB ref / ours | PostgreSQL CPU % ref / ours | slowest disk flush ms "
            "ref / ours | status check: answers ref / ours |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        sides = [s for s in SIDES if s in row.cells]
        rate = {s: row.median(s, "requests_per_s") for s in sides}
        p99 = {s: row.median(s, "p99_ms") for s in sides}
        cells = [f"{rate[s]:,.0f} ({p99[s]:,.1f})" if s in rate else "-" for s in SIDES]
        ratio = f"{rate['ours'] / rate['reference']:.2f}" if len(rate) == len(SIDES) else "-"
        rss = " / ".join(f"{row.peak(s):.0f}" if s in rate else "-" for s in SIDES)
        cpu = " / ".join(
            f"{row.median(s, 'postgres_cpu_pct'):.0f}" if s in rate else "-" for s in SIDES
        )
        flush = " / ".join(row.slowest_flush(s) if s in rate else "-" for s in SIDES)
        check = "ok" if row.ok else "**FAIL**"
        counts = " / ".join(row.counts(s) if s in rate else "-" for s in SIDES)
        lines.append(
            f"| {row.operation} | {row.concurrency} | {cells[0]} | {cells[1]} | {ratio} "
            f"| {rss} | {cpu} | {flush} | {check}: {counts} |"
        )
    return "\n".join(lines)


def problems_text(cells: list[Cell]) -> list[str]:
    return [
        f"{c.server} {c.operation} c{c.concurrency} round {c.round}: {p}"
        for c in cells
        for p in c.problems
    ]


def plot(rows: list[Row]) -> None:
    import matplotlib as mpl  # noqa: PLC0415 - only the benchmark needs it

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    operations = list(dict.fromkeys(r.operation for r in rows))
    by_key = {(r.operation, r.concurrency): r for r in rows}
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5))
    width = 0.38
    positions = range(len(operations))
    for i, (side, colour) in enumerate((("reference", "tab:grey"), ("ours", "tab:blue"))):
        values = [
            by_key[(o, 16)].median(side, "requests_per_s") if (o, 16) in by_key else 0
            for o in operations
        ]
        left.bar(
            [p + (i - 0.5) * width for p in positions], values, width, label=side, color=colour
        )
    left.set_yscale("log")
    left.set_xticks(list(positions), operations, rotation=30, ha="right")
    left.set_ylabel("requests/s (log)")
    left.set_title("concurrency 16")
    left.legend()
    left.grid(visible=True, which="both", axis="y", alpha=0.3)
    width = 0.27
    ratios: list[float] = []
    for i, concurrency in enumerate(CONCURRENCY):
        values = [
            by_key[(o, concurrency)].median("ours", "requests_per_s")
            / by_key[(o, concurrency)].median("reference", "requests_per_s")
            if (o, concurrency) in by_key
            else 0
            for o in operations
        ]
        offsets = [p + (i - 1) * width for p in positions]
        right.bar(offsets, values, width, label=f"c={concurrency}")
        ratios += [v for v in values if v > 0]
    right.axhline(1, color="black", linewidth=1)
    right.set_yscale("log")
    low, high = min([*ratios, 1.0]), max([*ratios, 1.0])
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if low / 2 <= t <= high * 2]
    right.set_yticks(ticks, [f"{t:g}" for t in ticks])
    right.minorticks_off()
    right.set_xticks(list(positions), operations, rotation=30, ha="right")
    right.set_ylabel("ours / reference, requests/s (log)")
    right.set_title("ratio per concurrency")
    right.legend()
    right.grid(visible=True, which="both", axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=100)
    plt.close(fig)


def commit() -> str:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head + (" with uncommitted changes" if dirty else "") if head else "unknown"


def write_doc(block: str) -> None:
    text = DOC.read_text()
    new = f"{START_MARK}\n{block}\n{END_MARK}"
    if START_MARK in text and END_MARK in text:
        before, rest = text.split(START_MARK, 1)
        after = rest.split(END_MARK, 1)[1]
        text = before + new + after
    else:
        text = text.rstrip("\n") + f"\n\n{SECTION}\n\n{new}\n"
    DOC.write_text(text)


# ---------------------------------------------------------------------------------------------
# The run


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def stop_reference() -> None:
    subprocess.run(["bash", str(REFERENCE / "stop.sh")], check=False, capture_output=True)


def measure(
    sides: list[Side],
    operations: list[Operation],
    seconds: int,
    rounds: int,
    probe: machine.FlushProbe,
) -> list[Cell]:
    cells = []
    for round_ in range(rounds):
        order = sides if round_ % 2 == 0 else sides[::-1]
        for op in operations:
            for concurrency in CONCURRENCY:
                for side in order:
                    with paused([s for s in sides if s is not side]):
                        cell = run_cell(side, op, concurrency, seconds, round_)
                    cells.append(cell)
                    flushes = probe.between(*cell.wrk_window)
                    log(
                        f"round {round_} {op.name} c{concurrency} {side.name}: "
                        f"{cell.requests_per_s:,.0f}/s p99 {cell.p99_ms:.1f} ms "
                        f"{cell.statuses} {'ok' if cell.ok else 'FAIL ' + '; '.join(cell.problems)}"
                        f" (slowest disk flush so far {flushes.max_ms:,.0f} ms)"
                    )
    return cells


def serve_and_measure(
    operations: list[Operation],
    seconds: int,
    rounds: int,
    probe: machine.FlushProbe,
    *,
    reference_too: bool = True,
) -> tuple[list[Cell], bool]:
    """Both servers up (ours alone without `reference_too`), the data set in both, the cells;
    both stopped whatever happens. Returns the cells and whether `verify` passed on ours."""
    for key, value in REFERENCE_PLACE.items():
        os.environ.setdefault(key, value)
    ref_dir = Path(os.environ["UNLEASH_REF_DIR"])
    dsn = f"postgres://unleash:unleash@127.0.0.1:{os.environ['PG_PORT']}/unleash"
    started = time.monotonic()
    cells: list[Cell] = []
    try:
        with contextlib.ExitStack() as stack:
            if reference_too:
                stack.callback(stop_reference)  # also when setup.sh fails half-way
            env: dict[str, str] = {}
            base, pid = stack.enter_context(serving_ours(env, check_verify=True))
            log(f"ours: {base}, pid {pid}")
            tokens_path, tokens_auth = seed_ours(base, env)
            ours = Side(
                "ours",
                base,
                pid,
                TOKEN,
                tokens_path,
                tokens_auth,
                postmaster_pid_file=Path(env["DATA_DIR"]) / "pg" / "postmaster.pid",
                env=env,
            )
            sides = [ours]
            if reference_too:
                base, pid = stack.enter_context(serving_reference())
                log(f"reference: {base}, pid {pid}")
                tokens_path, tokens_auth = seed_reference(base, dsn)
                reference = Side(
                    "reference",
                    base,
                    pid,
                    REFERENCE_TOKEN,
                    tokens_path,
                    tokens_auth,
                    postmaster_pid_file=ref_dir / "pg" / "data" / "postmaster.pid",
                    dsn=dsn,
                )
                sides.append(reference)
            searching = any(o.name == "search-features" for o in operations)
            playing = any(o.name == "playground" for o in operations)
            for side in sides:
                if searching:
                    seed_search(side)
                    check_search(side)
                if playing:
                    seed_playground(side)
                check_data_set(side)
            log(
                f"data set loaded on {' and '.join(s.name for s in sides)} after "
                f"{time.monotonic() - started:.0f} s"
            )
            cells = measure(sides, operations, seconds, rounds, probe)
            for side in sides:
                check_data_set(side)
                if searching:
                    check_search(side)
    except VerifyFailedError as exc:
        log(str(exc))
        return cells, False
    return cells, True


def report(  # noqa: PLR0917 - the run's facts, each explicit
    cells: list[Cell],
    operations: list[Operation],
    seconds: int,
    rounds: int,
    stamp: datetime,
    elapsed: float,
    *,
    load: float,
    revision: str,
    cpu_loop: tuple[float, float],
    flushes: machine.Flushes | str,
    verify_ok: bool,
    full: bool,
) -> list[str]:
    """Print the table, write the JSON and, for a run of every operation, the doc and the
    plot; returns the problems."""
    rows = rows_of(cells)
    problems = problems_text(cells) + ([] if verify_ok else ["verify failed on ours"])
    header = (
        f"Run of {stamp:%Y-%m-%d %H:%M} UTC, commit {revision}, {seconds} s per cell, "
        f"{rounds} round{'s' if rounds > 1 else ''}"
        f"{' (medians; peak RSS the highest)' if rounds > 1 else ''}, "
        f"{elapsed / 60:.1f} minutes in all, the 1-minute load average {load:.2f} before it; "
        f"`verify` on ours {'OK' if verify_ok else '**FAILED**'}; "
        f"{'every status check passed' if not problems else '**some checks failed**'}. "
        f"The machine (tests/bench/machine.py): a fixed CPU loop took {cpu_loop[0]:.2f} s "
        f"before and {cpu_loop[1]:.2f} s after; during the run, "
        + (
            flushes.text()
            if isinstance(flushes, machine.Flushes)
            else f"the disk probe failed ({flushes}): no flush figures"
        )
        + "."
    )
    text = table(rows)
    print(header)
    print()
    print(text)
    for problem in problems:
        print(f"FAIL: {problem}")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"compare-{stamp:%Y%m%dT%H%M%SZ}.json"
    result = {
        "started": stamp.isoformat(),
        "clock_zero": STARTED_AT.isoformat(),  # what the cells' wrk_from_s / wrk_to_s count from
        "commit": revision,
        "seconds": seconds,
        "rounds": rounds,
        "elapsed_s": round(elapsed, 1),
        "load_before": load,
        "cpu_loop_s": list(cpu_loop),
        "flushes": asdict(flushes) if isinstance(flushes, machine.Flushes) else flushes,
        "operations": [o.name for o in operations],
        "searches": SEARCHES,
        "verify_ok": verify_ok,
        "problems": problems,
        "cells": [asdict(c) | {"ok": c.ok} for c in cells],
    }
    out.write_text(json.dumps(result, indent=2))
    log(f"JSON: {out}")
    if full and cells:
        plot(rows)
        failures = "".join(f"- FAIL: {p}\n" for p in problems)
        write_doc(
            f"{header}\n\n{text}\n\n"
            + (failures + "\n" if failures else "")
            + "![requests/s at concurrency 16, and ours / reference](bench-compare.png)"
        )
        log(f"wrote {DOC.relative_to(ROOT)} and {PLOT.relative_to(ROOT)}")
    return problems


def main() -> int:
    if shutil.which("wrk") is None:
        print("wrk is needed: apt-get install wrk", file=sys.stderr)
        return 2
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "1"))
    only = [o for o in os.environ.get("BENCH_ONLY", "").split(",") if o]
    unknown = set(only) - {o.name for o in OPERATIONS}
    if unknown:
        names = ", ".join(o.name for o in OPERATIONS)
        print(f"BENCH_ONLY: unknown {sorted(unknown)}; known: {names}", file=sys.stderr)
        return 2
    operations = [o for o in OPERATIONS if not only or o.name in only]
    reference_too = os.environ.get("BENCH_OURS_ONLY", "") in {"", "0"}
    if reference_too and not (REFERENCE / "setup.sh").is_file():
        print(
            f"no reference server scripts in {REFERENCE} (setup.sh): set UNLEASH_REFERENCE to "
            "their folder, or BENCH_OURS_ONLY=1",
            file=sys.stderr,
        )
        return 2
    for interrupt in (signal.SIGTERM, signal.SIGHUP):  # unwind like Ctrl-C: both servers stop
        signal.signal(interrupt, _terminate)
    load = os.getloadavg()[0]  # other work on the machine shows in every cell
    revision = commit()  # the code measured: as it is when the run starts
    cpu_before = machine.cpu_loop_seconds()
    # /tmp: where both servers' PostgreSQL keep their data (serving_ours, UNLEASH_REF_DIR)
    probe = machine.FlushProbe(Path(tempfile.gettempdir()))
    started = time.monotonic()
    stamp = datetime.now(UTC)
    probe.start()
    try:
        cells, verify_ok = serve_and_measure(
            operations, seconds, rounds, probe, reference_too=reference_too
        )
    finally:
        probe.stop()
    elapsed = time.monotonic() - started
    cpu_after = machine.cpu_loop_seconds()
    if probe.error is None:  # now that no flush is in progress: each cell's slowest
        for cell in cells:
            flushes = probe.between(*cell.wrk_window)
            cell.slowest_flush_ms = round(flushes.max_ms, 1) if flushes.count else None
    problems = report(
        cells,
        operations,
        seconds,
        rounds,
        stamp,
        elapsed,
        load=load,
        revision=revision,
        cpu_loop=(cpu_before, cpu_after),
        flushes=probe.between() if probe.error is None else probe.error,
        verify_ok=verify_ok,
        full=not only and reference_too,
    )
    return 1 if problems else 0


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
