"""Users at scale: import, search at 10k / 100k / 1M users, and deleting 10,000 inactive users.

Run with `make bench` (or `.venv/bin/python -m tests.bench.users`; wrk from Debian; the plot
needs the `bench` extra, which `make bench` installs). Our service runs as its own process on
a fresh embedded PostgreSQL; `python -m service import-users` loads generated users (made-up
names, thousands of first and last names) in three steps: 10,000, then 100,000 more, then the
rest up to 1,000,000, each file timed. After each step the caches are warmed (`warm`: the users
table and its indexes, and a draw of queries other than the measured ones), then wrk
searches, one request at a time and 16 at a time, with three query mixes (see `fragments`:
typed words, random slices, and broad queries that match nearly everyone), and the plan
PostgreSQL chose for one query is recorded.
Then 10,000 inactive users are deleted in one request, timed.

BENCH_USERS=10000,110000 stops earlier; BENCH_SECONDS sets the seconds per measured row
(default 10). With BENCH_REFERENCE=1 the reference server is searched at 10,000 users too
(users created through its API). Prints markdown tables; JSON in tests/bench/out/users.json;
the plot of search latency against user count in docs/bench-users-search.png.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tests.bench.clone import call
from tests.bench.create import (
    REFERENCE,
    REFERENCE_TOKEN,
    ROOT,
    TOKEN,
    Row,
    dsn_of,
    serving_ours,
    serving_reference,
    wrk_row,
)

OUT = ROOT / "tests" / "bench" / "out" / "users.json"
PLOT = ROOT / "docs" / "bench-users-search.png"
FIRST = [  # the reference's users
    "Ada",
    "Bela",
    "Cyra",
    "Dmitri",
    "Elin",
    "Farah",
    "Goran",
    "Hana",
    "Ivo",
    "Jana",
    "Kofi",
    "Lena",
    "Mateo",
    "Nia",
    "Oskar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
]
LUA = """
local queries = QUERIES
math.randomseed(os.time())
function request()
  local q = queries[math.random(#queries)]
  return wrk.format("GET", PATH .. "?q=" .. q, HEADERS)
end
"""


SYLLABLES = [
    "an",
    "bel",
    "cor",
    "da",
    "el",
    "fin",
    "ga",
    "hal",
    "is",
    "jo",
    "ka",
    "li",
    "mar",
    "no",
    "or",
    "pe",
    "qui",
    "ra",
    "so",
    "ta",
    "ul",
    "ve",
    "wil",
    "xa",
    "yo",
    "ze",
    "ber",
    "cha",
    "dor",
    "en",
    "fa",
    "gre",
    "hu",
    "ir",
    "lo",
    "mi",
    "na",
    "ol",
    "pa",
    "ri",
]


def person_name(rng: random.Random) -> tuple[str, str]:
    """Made-up first and last names, thousands of each, so a name is as rare as in life."""
    first = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
    last = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))).capitalize()
    return first, last


def make_file(directory: Path, start: int, count: int) -> Path:
    """Users start..start+count: inactive (created 2 years ago, last seen 400 days ago)."""
    rng = random.Random(start)
    path = directory / f"users-{start}-{count}.jsonl"
    with path.open("w") as out:
        for i in range(start, start + count):
            first, last = person_name(rng)
            line = {
                "email": f"{first.lower()}.{last.lower()}{i}@corp{i % 97}.example.com",
                "name": f"{first} {last}",
                "rootRole": 3,
                "createdAt": "2024-11-01T00:00:00Z",
                "seenAt": "2025-10-01T00:00:00Z",
            }
            out.write(json.dumps(line) + "\n")
    return path


def import_file(env: dict[str, str], path: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "service", "import-users", str(path)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - started


def fragments(env: dict[str, str], count: int = 500) -> dict[str, list[str]]:
    """Two mixes of 3-8 character queries from the names and e-mails present (before the `@`:
    the domain is shared by everyone, and `broad` below measures that case).

    `words`: what people type: the start of a first name, a last name or an e-mail, or a piece
    inside one word. `slices`: pieces cut at random, so many straddle a space or a dot and keep
    one or two letters of a word ("mi K", "n.fa"): the worst case for trigrams.
    """
    rows = psql(
        env,
        "SELECT name || ' ' || split_part(email, '@', 1) FROM readmodel.users "
        "TABLESAMPLE SYSTEM (5) LIMIT 2000",
    )
    rng = random.Random(7)
    slices: list[str] = []
    words: list[str] = []
    while len(slices) < count or len(words) < count:
        text = rng.choice(rows)
        size = rng.randint(3, 8)
        start = rng.randrange(max(1, len(text) - size))
        piece = text[start : start + size].strip()
        if len(piece) >= 3 and len(slices) < count:
            slices.append(piece)
        word = rng.choice([w for w in text.replace(".", " ").split() if len(w) >= 3])
        start = 0 if rng.random() < 0.6 else rng.randrange(len(word) - 2)
        piece = word[start : start + size]
        if len(piece) >= 3 and len(words) < count:
            words.append(piece)
    return {"words": words, "slices": slices}


# Queries that match most users: two characters, and the e-mail domain everyone shares.
BROAD = ["ad", "an", "30", "e.", "corp", "example", "example.com", "co"]


def psql(env: dict[str, str], sql: str) -> list[str]:
    dsn = dsn_of(env)
    script = (
        "import asyncio, asyncpg, sys\n"
        "async def main():\n"
        "    c = await asyncpg.connect(sys.argv[1])\n"
        "    for r in await c.fetch(sys.argv[2]): print(r[0])\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, dsn, sql], check=True, capture_output=True, text=True
    ).stdout
    return out.splitlines()


def plan(env: dict[str, str], q: str) -> list[str]:
    """What PostgreSQL does for a search for q: the plan of each statement the search function
    (public.search_user_ids) runs, with its time, as auto_explain reports them."""
    from service.users import queries  # noqa: PLC0415 - the exact SQL the service runs
    from service.users.handlers import search  # noqa: PLC0415

    script = (
        "import asyncio, asyncpg, sys, json\n"
        "async def main():\n"
        "    c = await asyncpg.connect(sys.argv[1],\n"
        "                              server_settings={'search_path': 'readmodel, public'})\n"
        "    args = json.loads(sys.argv[3])\n"
        "    await c.fetch(sys.argv[2], *args)  # the function compiled, its plans made\n"
        "    await c.execute(\"LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; \"\n"
        '                    "SET auto_explain.log_nested_statements = on; "\n'
        '                    "SET auto_explain.log_analyze = on; SET client_min_messages = log")\n'
        "    c.add_log_listener(lambda _c, m: print(m.message))\n"
        "    await c.fetch(sys.argv[2], *args)\n"
        "    await asyncio.sleep(0.2)\n"
        "asyncio.run(main())\n"
    )
    arguments = json.dumps([*search.arguments(q.strip(), 100), 0])
    out = subprocess.run(
        [sys.executable, "-c", script, dsn_of(env), queries.SEARCH, arguments],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.splitlines()


def search_row(  # noqa: PLR0917 - one measured row, every knob explicit
    server: str,
    base: str,
    token: str,
    queries: list[str],
    seconds: int,
    pid: int,
    concurrency: int = 16,
) -> Row:
    quoted = "{" + ", ".join(json.dumps(urllib.parse.quote(q)) for q in queries) + "}"
    script = (
        LUA.replace("QUERIES", quoted)
        .replace("PATH", json.dumps("/api/admin/user-admin/search"))
        .replace("HEADERS", '{["Authorization"] = "' + token + '"}')
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    try:
        return wrk_row(server, concurrency, seconds, pid, ["-s", handle.name, base])
    finally:
        Path(handle.name).unlink()


def delete_inactive(base: str, count: int) -> tuple[float, int]:
    listed = call(base, TOKEN, "GET", "/api/admin/user-admin/inactive")["inactiveUsers"]
    ids = [u["id"] for u in listed[:count]]
    started = time.perf_counter()
    call(base, TOKEN, "POST", "/api/admin/user-admin/inactive/delete", {"ids": ids})
    return time.perf_counter() - started, len(ids)


MIXES = ("words", "slices", "broad")


def warm(env: dict[str, str], base: str) -> float:
    """Bring what the cells read into the caches, as steady searching does, without answering
    the cells' own queries beforehand.

    The users table goes into PostgreSQL's shared buffers and its indexes into the kernel's
    cache (pg_prewarm; search samples random pages of the table); then a draw of words and
    slices of its own, not the lists the cells measure, is searched once, so that the
    service's caches (the records of people a search returned) hold no more of the measured
    pages than a server that has been answering other searches would.

    The cells measure a server that has been answering searches, not the first reads after an
    import. On this project's machine that matters: its kernel pages out file cache that goes
    unused for a minute (DAMON's pageout scheme), so after a large import the first cells
    would read from disk (docs/benchmarks.md); PostgreSQL's shared buffers are not paged
    out."""
    started = time.perf_counter()
    try:
        psql(env, "CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        psql(env, "SELECT pg_prewarm('readmodel.users')")
        psql(
            env,
            "SELECT sum(pg_prewarm(i.indexrelid::regclass, 'read')) FROM pg_index i "
            "WHERE i.indrelid = 'readmodel.users'::regclass",
        )
    except subprocess.CalledProcessError as exc:  # a server without the contrib extension
        last = exc.stderr.strip().splitlines()[-1:] or ["?"]
        print(f"no pg_prewarm, the queries alone warm up: {last[0]}", file=sys.stderr)
    other = fragments(env)  # TABLESAMPLE: other people, so other queries
    for q in other["words"] + other["slices"]:
        call(base, TOKEN, "GET", "/api/admin/user-admin/search?q=" + urllib.parse.quote(q))
    return time.perf_counter() - started


def bench_ours(sizes: list[int], seconds: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-users-", dir="/tmp"))
    steps: list[dict[str, Any]] = []
    try:
        env: dict[str, str] = {}
        with serving_ours(env) as (base, pid):
            have = 0
            for size in sizes:
                path = make_file(work, have, size - have)
                seconds_import = import_file(env, path)
                path.unlink()
                mixes = fragments(env) | {"broad": BROAD}
                seconds_warm = warm(env, base)
                rows: dict[str, Any] = {}
                for mix in MIXES:
                    for concurrency in (1, 16):
                        row = search_row("ours", base, TOKEN, mixes[mix], seconds, pid, concurrency)
                        rows[f"{mix} c{concurrency}"] = asdict(row)
                        print(
                            f"{size} users, {mix} c{concurrency}: {row.ok_per_s:.0f}/s "
                            f"p50 {row.p50_ms} p99 {row.p99_ms} ms",
                            file=sys.stderr,
                        )
                sample = mixes["slices"][0]
                steps.append(
                    {
                        "users": size,
                        "imported": size - have,
                        "import_s": round(seconds_import, 1),
                        "warm_s": round(seconds_warm, 1),
                        "rows": rows,
                        "plan": plan(env, sample),
                        "sample_q": sample,
                        "broad_plan": plan(env, "example"),
                    }
                )
                have = size
            delete_s, deleted = delete_inactive(base, 10_000)
            return {"steps": steps, "delete_s": round(delete_s, 2), "deleted": deleted}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_reference(seconds: int) -> Row:
    """10,000 users created through the reference's API, then the same kind of search."""
    with serving_reference() as (base, pid):
        names = []
        for i in range(10_000):
            first = FIRST[i % len(FIRST)]
            email = f"{first.lower()}.{i:05x}@corp{i % 97}.example.com"
            call(
                base,
                REFERENCE_TOKEN,
                "POST",
                "/api/admin/user-admin",
                {"email": email, "name": f"{first} {i}", "rootRole": 3, "sendEmail": False},
            )
            names.append(f"{first} {i} {email}")
        rng = random.Random(7)
        queries = []
        for _ in range(500):
            text = rng.choice(names)
            size = rng.randint(3, 8)
            start = rng.randrange(len(text) - size)
            queries.append(text[start : start + size].strip() or "ada")
        return search_row("reference", base, REFERENCE_TOKEN, queries, seconds, pid)


def plot(result: dict[str, Any]) -> None:
    import matplotlib as mpl  # noqa: PLC0415 - only the benchmark needs it

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    users = [s["users"] for s in result["steps"]]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    colours = {"words": "tab:blue", "slices": "tab:orange", "broad": "tab:green"}
    for ax, concurrency in zip(axes, (1, 16), strict=True):
        for mix in MIXES:
            for key, style in (("p50_ms", "-"), ("p99_ms", "--")):
                values = [s["rows"][f"{mix} c{concurrency}"][key] for s in result["steps"]]
                label = f"{mix} {key[:3]}"
                ax.plot(users, values, style, color=colours[mix], marker="o", label=label)
        ax.axhline(25, color="grey", linestyle=":", linewidth=1, label="25 ms")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("users")
        ax.set_title(f"{concurrency} request(s) at a time")
        ax.grid(visible=True, which="both", alpha=0.3)
    axes[0].set_ylabel("GET /api/admin/user-admin/search latency (ms)")
    axes[1].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(PLOT, dpi=100)


def main() -> int:
    if shutil.which("wrk") is None:
        print("wrk is needed: apt-get install wrk", file=sys.stderr)
        return 2
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    sizes = [int(s) for s in os.environ.get("BENCH_USERS", "10000,110000,1000000").split(",")]
    reference = os.environ.get("BENCH_REFERENCE") == "1"
    if reference:
        subprocess.run(["bash", str(REFERENCE / "stop.sh")], check=False, capture_output=True)
    result = bench_ours(sizes, seconds)
    if reference:
        result["reference"] = asdict(bench_reference(seconds))
    print("| users | imported | import s | users/s |")
    print("|---:|---:|---:|---:|")
    for s in result["steps"]:
        print(
            f"| {s['users']:,} | {s['imported']:,} | {s['import_s']} "
            f"| {s['imported'] / s['import_s']:,.0f} |"
        )
    print("\n| users | queries | concurrency | searches/s | p50 ms | p99 ms |")
    print("|---:|---|---:|---:|---:|---:|")
    for s in result["steps"]:
        for name, r in s["rows"].items():
            mix, concurrency = name.split(" c")
            print(
                f"| {s['users']:,} | {mix} | {concurrency} | {r['ok_per_s']:,.0f} "
                f"| {r['p50_ms']:.1f} | {r['p99_ms']:.1f} |"
            )
    if reference:
        r = result["reference"]
        print(
            f"| 10,000 (reference) | slices | 16 | {r['ok_per_s']:,.0f} | {r['p50_ms']:.1f} "
            f"| {r['p99_ms']:.1f} |"
        )
    print(f"\ndeleted {result['deleted']:,} inactive users in one request: {result['delete_s']} s")
    for s in result["steps"]:
        print(f"\nplan at {s['users']:,} users (q={s['sample_q']!r}):\n" + "\n".join(s["plan"]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2))
    plot(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
