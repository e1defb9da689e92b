"""`import-unleash` at scale: 10,000 flags with strategies and 10,000 users, from a reference
Unleash into a fresh flagstore database, then a re-run over the unchanged source.

Run with `make bench` (or `.venv/bin/python -m tests.bench.import_unleash`). The reference is
its own Unleash 6.10.1, not the shared one (the seed adds 10,000 flags and users to it):

    UNLEASH_PORT=4244 PG_PORT=5435 UNLEASH_REF_DIR=/tmp/unleash-ref-c \\
        UNLEASH_FEATURE_FLAGS_LIMIT=100000 bash ../shared/reference/setup.sh

BENCH_IMPORT_REFERENCE is its URL (http://127.0.0.1:4244 by default), BENCH_IMPORT_TOKEN an
admin API token of it, BENCH_IMPORT_ADMIN / BENCH_IMPORT_PASSWORD the UI user whose personal
access token seeds the flags (Unleash's features-batch import refuses admin API tokens).

The seed is idempotent: what the reference has already (flags, users and segments by name) is
not made again, so a second bench run reuses it. Flags go in through
`POST /api/admin/features-batch/import`, 50 a call and environment, 4 calls at once; users through
`POST /api/admin/user-admin`, 16 at once. Each flag has two strategies in development (a
gradual rollout with two constraints and strategy variants, a userIds strategy, one flag in
ten with a segment) and one in production, on in development; one in five has environment
variants in production.

Then our service starts on a fresh embedded PostgreSQL and `python -m service import-unleash`
runs twice as its own process, each timed from start to exit: the first run, and a re-run that
should append nothing. Prints markdown tables: the runs, and each run's progress phases (from
the import's progress lines) with what lies outside them; JSON in
tests/bench/out/import_unleash.json.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from tests.bench.create import REFERENCE_TOKEN, ROOT, dsn_of, serving_ours
from tests.bench.machine import cpu_loop_seconds
from tests.bench.tokens import EXPIRES, sign_in

OUT = ROOT / "tests" / "bench" / "out" / "import_unleash.json"
URL = os.environ.get("BENCH_IMPORT_REFERENCE", "http://127.0.0.1:4244")
TOKEN = os.environ.get("BENCH_IMPORT_TOKEN", REFERENCE_TOKEN)
ADMIN = os.environ.get("BENCH_IMPORT_ADMIN", "admin")
PASSWORD = os.environ.get("BENCH_IMPORT_PASSWORD", "unleash4all")
FLAGS = int(os.environ.get("BENCH_IMPORT_FLAGS", "10000"))
USERS = int(os.environ.get("BENCH_IMPORT_USERS", "10000"))
SEGMENTS = 20
CHUNK = 50  # flags a features-batch import call (Unleash refuses bodies over 100 kB)
PREFIX = "bench-import"
TARGET_FIRST_S = 60.0
TARGET_AGAIN_S = 15.0


def call(token: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        URL + path,
        data=data,
        method=method,
        headers={"Authorization": token, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"{method} {path}: {exc.code} {exc.read()[:500]!r}") from None
    return json.loads(raw) if raw else None


def flag_name(i: int) -> str:
    return f"{PREFIX}-flag-{i:05d}"


def segments() -> dict[str, int]:
    """The bench's segments by name, made where missing."""
    found = {s["name"]: s["id"] for s in call(TOKEN, "GET", "/api/admin/segments")["segments"]}
    for i in range(SEGMENTS):
        name = f"{PREFIX}-segment-{i:02d}"
        if name not in found:
            body = {
                "name": name,
                "constraints": [{"contextName": "userId", "operator": "IN", "values": [str(i)]}],
            }
            found[name] = call(TOKEN, "POST", "/api/admin/segments", body)["id"]
    return found


def _strategies(i: int, env: str, segment: dict[str, Any] | None) -> list[dict[str, Any]]:
    name = flag_name(i)
    if env == "production":
        return [
            {
                "featureName": name,
                "name": "flexibleRollout",
                "parameters": {"rollout": str(i % 101), "stickiness": "default", "groupId": name},
                "constraints": [],
                "segments": [],
                "sortOrder": 0,
            }
        ]
    return [
        {
            "featureName": name,
            "name": "flexibleRollout",
            "title": f"rollout {i}",
            "parameters": {"rollout": str(i % 100), "stickiness": "userId", "groupId": name},
            "constraints": [
                {"contextName": "appName", "operator": "IN", "values": ["web", f"app-{i % 7}"]},
                {
                    "contextName": "userId",
                    "operator": "STR_STARTS_WITH",
                    "values": [f"u{i % 10}"],
                    "inverted": i % 3 == 0,
                    "caseInsensitive": True,
                },
            ],
            "segments": [] if segment is None else [segment["id"]],
            "variants": [
                {
                    "name": "blue",
                    "weight": 500,
                    "weightType": "variable",
                    "stickiness": "default",
                    "payload": {"type": "string", "value": f"b{i}"},
                },
                {"name": "red", "weight": 500, "weightType": "variable", "stickiness": "default"},
            ],
            "sortOrder": 0,
        },
        {
            "featureName": name,
            "name": "userWithId",
            "parameters": {"userIds": f"{i},{i + 1}"},
            "constraints": [],
            "segments": [],
            "sortOrder": 1,
        },
    ]


def _batch(start: int, stop: int, env: str, by_id: list[dict[str, Any]]) -> dict[str, Any]:
    features, strategies, environments = [], [], []
    for i in range(start, stop):
        name = flag_name(i)
        features.append(
            {
                "name": name,
                "type": ("release", "experiment", "operational")[i % 3],
                "description": f"bench flag {i}",
                "impressionData": i % 4 == 0,
                "project": "default",
            }
        )
        segment = by_id[i % len(by_id)] if i % 10 == 0 else None
        strategies += _strategies(i, env, segment)
        variants = []
        if env == "production" and i % 5 == 0:
            variants = [
                {"name": "on", "weight": 1000, "weightType": "variable", "stickiness": "default"}
            ]
        environments.append(
            {
                "featureName": name,
                "name": name,
                "environment": env,
                "enabled": env == "development",
                "variants": variants,
            }
        )
    return {
        "project": "default",
        "environment": env,
        "data": {
            "features": features,
            "featureStrategies": strategies,
            "featureEnvironments": environments,
            "featureTags": [],
            "tagTypes": [],
            "contextFields": [],
            "segments": by_id,
            "dependencies": [],
        },
    }


def seed_flags() -> tuple[int, float]:
    """The flags the reference lacks, in chunks; returns how many were made and the seconds."""
    started = time.perf_counter()
    listed = call(TOKEN, "GET", "/api/admin/projects/default/features")["features"]
    have = {f["name"] for f in listed}
    by_id = [{"id": v, "name": k} for k, v in segments().items() if k.startswith(PREFIX)]
    chunks = [
        (start, min(start + CHUNK, FLAGS))
        for start in range(0, FLAGS, CHUNK)
        if not all(flag_name(i) in have for i in range(start, min(start + CHUNK, FLAGS)))
    ]
    if not chunks:
        return 0, time.perf_counter() - started
    pat = _personal_token(sign_in(URL, ADMIN, PASSWORD))

    def made(chunk: tuple[int, int]) -> int:
        for env in ("development", "production"):
            call(pat, "POST", "/api/admin/features-batch/import", _batch(*chunk, env, by_id))
        return chunk[1] - chunk[0]

    with ThreadPoolExecutor(4) as pool:
        count = sum(pool.map(made, chunks))
    return count, time.perf_counter() - started


def _personal_token(cookie: str) -> str:
    request = urllib.request.Request(
        URL + "/api/admin/user/tokens",
        data=json.dumps(
            {"description": f"{PREFIX} seed {time.time_ns()}", "expiresAt": EXPIRES}
        ).encode(),
        headers={"Content-Type": "application/json", "Cookie": cookie},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        return str(json.loads(resp.read())["secret"])


def seed_users() -> tuple[int, float]:
    started = time.perf_counter()
    have = {u.get("email") for u in call(TOKEN, "GET", "/api/admin/user-admin")["users"]}
    roles = (1, 2, 3)  # Admin, Editor, Viewer: Unleash's root roles' ids
    missing = [i for i in range(USERS) if f"{PREFIX}-user-{i:05d}@example.com" not in have]

    def make(i: int) -> None:
        body = {
            "email": f"{PREFIX}-user-{i:05d}@example.com",
            "name": f"Bench User {i}",
            "rootRole": roles[0] if i % 50 == 0 else roles[1] if i % 5 == 0 else roles[2],
            "sendEmail": False,
        }
        call(TOKEN, "POST", "/api/admin/user-admin", body)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(make, missing))
    return len(missing), time.perf_counter() - started


@dataclass
class Run:
    name: str
    seconds: float
    events: int  # appended, as the database counts them
    reported_events: int  # the report's events column, summed
    flags: int  # the flags row: in the source
    flags_created: int
    users: int  # the users row: created
    exit_code: int
    phases: dict[str, float]  # seconds of each progress phase (summed where one repeats)


_ROW = re.compile(r"^(\S.*?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)")


def _rows(out: str) -> dict[str, list[int]]:
    rows = {}
    for line in out.splitlines():
        found = _ROW.match(line)
        if found:
            rows[found.group(1).strip()] = [int(x) for x in found.groups()[1:]]
    return rows


def _phases(err: str) -> dict[str, float]:
    """Each phase's seconds from the progress lines (JSON on a pipe): a phase's last line."""
    last: dict[tuple[str, int], float] = {}
    order: dict[str, None] = {}
    starts = 0
    for line in err.splitlines():
        if not line.startswith('{"phase"'):
            continue
        shown = json.loads(line)
        if shown["done"] == 0 and shown["seconds"] == 0:
            starts += 1
        order[shown["phase"]] = None
        last[(shown["phase"], starts)] = shown["seconds"]
    found = dict.fromkeys(order, 0.0)
    for (phase, _), seconds in last.items():
        found[phase] += seconds
    return {k: round(v, 2) for k, v in found.items()}


def _events(env: dict[str, str]) -> int:
    done = subprocess.run(
        ["psql", dsn_of(env), "-tAc", "SELECT count(*) FROM events"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.strip())


def import_once(name: str, env: dict[str, str]) -> Run:
    before = _events(env)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "service", "import-unleash", "--url", URL, "--token", TOKEN],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    print(done.stdout, file=sys.stderr)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
    rows = _rows(done.stdout)
    flags = rows.get("flags", [0] * 7)
    users = rows.get("users", [0] * 7)
    return Run(
        name=name,
        seconds=round(seconds, 2),
        events=_events(env) - before,
        reported_events=sum(r[5] for r in rows.values()),
        flags=flags[0],
        flags_created=flags[1],
        users=users[1],
        exit_code=done.returncode,
        phases=_phases(done.stderr),
    )


def main() -> None:
    flags_made, flags_s = seed_flags()
    users_made, users_s = seed_users()
    print(
        f"seed: {flags_made} flags made in {flags_s:.1f} s, {users_made} users in {users_s:.1f} s",
        file=sys.stderr,
    )
    env: dict[str, str] = {}
    with serving_ours(env, check_verify=True):
        runs = [import_once("first run", env), import_once("no-change re-run", env)]
    cpu = cpu_loop_seconds()
    print(f"\nimport-unleash from {URL}: {FLAGS} flags, {USERS} users in the source")
    print(f"CPU loop: {cpu:.2f} s (tests/bench/machine.py)\n")
    print("| run | wall time | target | events | flags (source / created) | users imported |")
    print("|---|---:|---:|---:|---:|---:|")
    for run, target in zip(runs, (TARGET_FIRST_S, TARGET_AGAIN_S), strict=True):
        print(
            f"| {run.name} | {run.seconds:.1f} s | < {target:.0f} s | {run.events:,} | "
            f"{run.flags:,} / {run.flags_created:,} | {run.users:,} |"
        )
    print("\n| phase (seconds) | " + " | ".join(r.name for r in runs) + " |")
    print("|---|" + "---:|" * len(runs))
    names = dict.fromkeys(p for r in runs for p in r.phases)
    for phase in names:
        if max(r.phases.get(phase, 0.0) for r in runs) >= 0.1:
            cells = " | ".join(f"{r.phases.get(phase, 0.0):.1f}" for r in runs)
            print(f"| {phase} | {cells} |")
    outside = " | ".join(f"{r.seconds - sum(r.phases.values()):.1f}" for r in runs)
    print(f"| outside the phases (start, locks, commits) | {outside} |")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps({"cpu_loop_s": cpu, "runs": [asdict(r) for r in runs]}, indent=2) + "\n"
    )
    if any(r.exit_code for r in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
