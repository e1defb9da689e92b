"""Clone throughput and a big clone's latency: ours and the reference, same load tool.

Run with `make bench` (or `.venv/bin/python -m tests.bench.clone`; wrk from Debian). The
source flag has 2 environments x 2 strategies (each with a constraint, parameters and a
variant); wrk clones it with a fresh name per request at concurrency 1 and 16. Then a big
flag (3 environments x 30 strategies x 10 constraints) is cloned 20 times one after the
other, and the latencies are reported. BENCH_REFERENCE=1 measures the reference server the
same way. Prints markdown tables; JSON in tests/bench/out/clone.json.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict
from typing import Any

from tests.bench.create import (
    REFERENCE,
    REFERENCE_TOKEN,
    ROOT,
    TOKEN,
    Row,
    run_wrk,
    serving_ours,
    serving_reference,
)

OUT = ROOT / "tests" / "bench" / "out" / "clone.json"
# The reference only accepts constraints on context fields it knows; these are built in.
CONTEXT_FIELDS = ("userId", "sessionId", "appName", "environment")
STRATEGY: dict[str, Any] = {
    "name": "flexibleRollout",
    "constraints": [{"contextName": "userId", "operator": "IN", "values": ["a", "b"]}],
    "parameters": {"rollout": "50", "stickiness": "default", "groupId": "src"},
    "variants": [{"name": "v", "weight": 1000, "weightType": "variable", "stickiness": "default"}],
}


def call(base: str, token: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        base + path,
        data=data,
        method=method,
        headers={"Authorization": token, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


def make_source(
    base: str, token: str, name: str, *, envs: list[str], strategies: int, constraints: int
) -> None:
    call(base, token, "POST", "/api/admin/projects/default/features", {"name": name})
    strategy = STRATEGY | {
        "constraints": [
            {
                "contextName": CONTEXT_FIELDS[i % len(CONTEXT_FIELDS)],
                "operator": "IN",
                "values": [f"v{i}", "b"],
            }
            for i in range(constraints)
        ]
    }
    for env in envs:
        for _ in range(strategies):
            path = f"/api/admin/projects/default/features/{name}/environments/{env}/strategies"
            call(base, token, "POST", path, strategy)


def big_clone_latencies(base: str, token: str, count: int = 20) -> list[float]:
    envs = ["development", "production", "staging"]
    # The reference's open-source edition cannot create environments: it uses what it has.
    with contextlib.suppress(urllib.error.HTTPError):
        call(base, token, "POST", "/api/admin/environments", {"name": "staging", "type": "test"})
    try:
        call(
            base,
            token,
            "POST",
            "/api/admin/projects/default/environments",
            {"environment": "staging"},
        )
    except urllib.error.HTTPError:
        envs = ["development", "production"]
    make_source(base, token, "big", envs=envs, strategies=30, constraints=10)
    latencies = []
    for i in range(count):
        started = time.perf_counter()
        call(
            base,
            token,
            "POST",
            "/api/admin/projects/default/features/big/clone",
            {"name": f"big-copy-{i}"},
        )
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def measure(server: str, base: str, token: str, seconds: int, pid: int | None) -> dict[str, Any]:
    make_source(base, token, "src", envs=["development", "production"], strategies=2, constraints=1)
    path = "/api/admin/projects/default/features/src/clone"
    rows = [run_wrk(server, base, "default", token, c, seconds, pid, path) for c in (1, 16)]
    big = big_clone_latencies(base, token)
    return {"rows": [asdict(r) for r in rows], "big_ms": big}


def bench_ours(seconds: int) -> dict[str, Any]:
    with serving_ours() as (base, pid):
        return measure("ours", base, TOKEN, seconds, pid)


def bench_reference(seconds: int) -> dict[str, Any]:
    with serving_reference() as (base, pid):
        return measure("reference", base, REFERENCE_TOKEN, seconds, pid)


def main() -> int:
    if shutil.which("wrk") is None:
        print("wrk is needed: apt-get install wrk", file=sys.stderr)
        return 2
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    reference = os.environ.get("BENCH_REFERENCE") == "1"
    if reference:
        subprocess.run(["bash", str(REFERENCE / "stop.sh")], check=False, capture_output=True)
    results = {"ours": bench_ours(seconds)}
    if reference:
        results["reference"] = bench_reference(seconds)
    print("| server | concurrency | clones/s (2xx) | p50 ms | p99 ms | non-2xx | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for result in results.values():
        for r in (Row(**row) for row in result["rows"]):
            print(
                f"| {r.server} | {r.concurrency} | {r.ok_per_s:,.0f} | {r.p50_ms:.1f} "
                f"| {r.p99_ms:.1f} | {r.non_2xx} | {r.peak_rss_mb or '-'} |"
            )
    print()
    print("| server | big clone (3 env x 30 strategies x 10 constraints) | median ms | max ms |")
    print("|---|---|---:|---:|")
    for server, result in results.items():
        big = result["big_ms"]
        print(f"| {server} | {len(big)} clones | {statistics.median(big):.1f} | {max(big):.1f} |")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
