"""Compare two checkouts of the service on this machine, cells interleaved so that noise hits
both: `.venv/bin/python -m tools.ab BASE HEAD [--seconds 5] [--rounds 5] [--only create,health]`.

BASE and HEAD are checkouts with their own `.venv` (`make install` in each). Both servers run at
once on fresh embedded databases seeded alike: a service account with 50 tokens, a flag to clone
(2 environments x 2 strategies), 10,000 imported users, a pool of inactive users to delete
(one a request, each id once), a person with a password (who signs in, and creates flags with
a session: a person's name is in every such event's metadata). Each round runs every cell on
both, in alternating order, with wrk; the table gives the median requests/s and p99 of each.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

TOKEN = "*:*.ab-admin-token-0123456789abcdef-0123"
EXPIRES = "2099-01-01T00:00:00Z"
FRESH_NAMES = """
local counter = 0
prefix = ""
function setup(thread)
  thread:set("prefix", "t" .. tostring(math.random(1, 1000000000)))
end
function request()
  counter = counter + 1
  local body = '{"name":"' .. RUN .. prefix .. "-" .. counter .. '"}'
  return wrk.format("POST", nil, {["Authorization"] = AUTH,
                                  ["Content-Type"] = "application/json"}, body)
end
"""
# Each wrk thread deletes its own share of the pool's ids, one a request.
DELETE_IDS = """
local counter = 0
local index = 0
local next_thread = 0
function setup(thread)
  thread:set("index", next_thread)
  next_thread = next_thread + 1
end
function request()
  local id = IDS[index + 1 + counter * THREADS]
  counter = counter + 1
  if id == nil then id = 0 end
  return wrk.format("POST", nil, {["Authorization"] = AUTH,
                                  ["Content-Type"] = "application/json"},
                    '{"ids":[' .. id .. ']}')
end
"""
INACTIVE_POOL = 30_000  # more than both sides delete in all rounds of 5 s cells
PERSON = "signer"
PASSWORD = "Ab-bench-Passw0rd!2026"
SIGN_IN = f"""
function request()
  return wrk.format("POST", nil, {{["Content-Type"] = "application/json"}},
                    '{{"username":"{PERSON}","password":"{PASSWORD}"}}')
end
"""
CELLS = (  # (name, path, concurrency, what it posts: nothing, fresh names, a sign-in)
    ("health", "/health", 16, None),
    ("50 tokens, c=1", "/api/admin/service-account/{account}/token", 1, None),
    ("50 tokens, c=16", "/api/admin/service-account/{account}/token", 16, None),
    ("create, c=16", "/api/admin/projects/default/features", 16, "names"),
    ("create by a person (session), c=16", "/api/admin/projects/default/features", 16, "own"),
    ("clone, c=16", "/api/admin/projects/default/features/src/clone", 16, "names"),
    ("search q=user12, c=16", "/api/admin/user-admin/search?q=user12", 16, None),
    ("search q=user00042, c=16", "/api/admin/user-admin/search?q=user00042", 16, None),
    ("sign-in, c=2", "/auth/simple/login", 2, "sign-in"),
    ("client features, c=16", "/api/client/features", 16, None),
    ("delete inactive, c=16", "/api/admin/user-admin/inactive/delete", 16, "delete"),
)
SESSIONS: dict[str, str] = {}  # base URL -> the person's "Cookie" header


def call(base: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - a local URL
        base + path,
        data=data,
        method=method,
        headers={"Authorization": TOKEN, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as resp:  # noqa: S310
        text = resp.read()
    return json.loads(text) if text.strip() else None


@contextlib.contextmanager
def serving(checkout: Path, port: int) -> Iterator[str]:
    data_dir = Path(tempfile.mkdtemp(prefix="ab-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {
        "PORT": str(port),
        "DATA_DIR": str(data_dir),
        "LOG_FORMAT": "json",
        "INIT_ADMIN_API_TOKENS": TOKEN,
        "LOGIN_RATE_LIMIT_PER_ADDRESS": "100000",
        "LOGIN_RATE_LIMIT_PER_ACCOUNT": "100000",
    }
    python = str(checkout / ".venv" / "bin" / "python")
    proc = subprocess.Popen(
        [python, "-m", "service", "serve"],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(base + "/ready", timeout=1)  # noqa: S310
                break
            time.sleep(0.1)
        seed(base, checkout, python, env)
        yield base
    finally:
        proc.terminate()
        proc.wait(60)
        shutil.rmtree(data_dir, ignore_errors=True)


def seed(base: str, checkout: Path, python: str, env: dict[str, str]) -> None:
    account = call(base, "POST", "/api/admin/service-account", {"username": "sa", "rootRole": 1})
    for i in range(50):
        body = {"description": f"t{i}", "expiresAt": EXPIRES}
        call(base, "POST", f"/api/admin/service-account/{account['id']}/token", body)
    call(base, "POST", "/api/admin/projects/default/features", {"name": "src"})
    for env_name in ("development", "production"):
        path = f"/api/admin/projects/default/features/src/environments/{env_name}/strategies"
        for i in range(2):
            strategy = {
                "name": "flexibleRollout",
                "constraints": [{"contextName": "userId", "operator": "IN", "values": [str(i)]}],
                "parameters": {"rollout": "50", "stickiness": "default", "groupId": "src"},
                "variants": [
                    {"name": "v", "weight": 1000, "weightType": "variable", "stickiness": "default"}
                ],
            }
            call(base, "POST", path, strategy)
    users = Path(tempfile.mkstemp(suffix=".jsonl")[1])
    users.write_text(
        "".join(
            json.dumps({"email": f"user{i:05d}@example.com", "name": f"User {i:05d}"}) + "\n"
            for i in range(10_000)
        )
        + "".join(
            json.dumps(
                {
                    "email": f"gone{i:05d}@example.com",
                    "createdAt": "2020-01-01T00:00:00Z",
                    "seenAt": "2020-01-02T00:00:00Z",
                }
            )
            + "\n"
            for i in range(INACTIVE_POOL)
        )
    )
    subprocess.run(
        [python, "-m", "service", "import-users", str(users)],
        cwd=checkout,
        env=env,
        check=True,
        capture_output=True,
    )
    users.unlink()
    person: dict[str, object] = {
        "username": PERSON,
        "name": "Sig Ner",
        "rootRole": 1,
        "password": PASSWORD,
    }
    call(base, "POST", "/api/admin/user-admin", person)
    request = urllib.request.Request(  # noqa: S310 - a local URL
        base + "/auth/simple/login",
        data=json.dumps({"username": PERSON, "password": PASSWORD}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as resp:  # noqa: S310
        SESSIONS[base] = resp.headers["Set-Cookie"].split(";", 1)[0]


def inactive_ids(base: str) -> list[int]:
    """The pool's ids not deleted yet (the delete cells take each once)."""
    listed = call(base, "GET", "/api/admin/user-admin/inactive")
    return sorted(int(user["id"]) for user in listed["inactiveUsers"])


def wrk(
    base: str, path: str, concurrency: int, seconds: int, *, posts: str | None
) -> tuple[float, float]:
    threads = min(concurrency, 2)
    args = ["wrk", "--latency", f"-t{threads}", f"-c{concurrency}", f"-d{seconds}s"]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        # wrk's Lua random numbers repeat from run to run: a run prefix keeps names fresh.
        run = f"r{time.time_ns()}"
        script.write(f'AUTH = "{TOKEN}"\nRUN = "{run}"\n')
        if posts == "delete":
            ids = ", ".join(map(str, inactive_ids(base)))
            script.write(f"THREADS = {threads}\nIDS = {{{ids}}}\n")
        scripts = {None: "", "names": FRESH_NAMES, "own": FRESH_NAMES, "delete": DELETE_IDS}
        script.write(scripts.get(posts, SIGN_IN))
    if posts == "own":  # the person's session instead of the token
        args += ["-s", script.name]
        Path(script.name).write_text(
            Path(script.name)
            .read_text()
            .replace('["Authorization"] = AUTH,', f'["Cookie"] = "{SESSIONS[base]}",')
        )
    elif posts is not None:
        args += ["-s", script.name]
    else:
        args += ["-H", f"Authorization: {TOKEN}"]
    out = subprocess.run([*args, base + path], capture_output=True, text=True, check=True).stdout
    Path(script.name).unlink()
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]
    if "Non-2xx" in out:
        sys.exit(f"{base}{path}: answers other than 2xx\n{out}")
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    assert p99 is not None
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99[2]]
    return rate, float(p99[1]) * scale


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.ab", description=__doc__)
    parser.add_argument("base", type=Path)
    parser.add_argument("head", type=Path)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--only", default="", help="comma-separated prefixes of the cells to run (default: all)"
    )
    args = parser.parse_args(argv)
    prefixes = [p.strip() for p in args.only.split(",") if p.strip()]
    cells = [c for c in CELLS if not prefixes or any(c[0].startswith(p) for p in prefixes)]
    sides = {"base": args.base.resolve(), "head": args.head.resolve()}
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with contextlib.ExitStack() as stack:
        bases = {
            name: stack.enter_context(serving(path, 4300 + i))
            for i, (name, path) in enumerate(sides.items())
        }
        for round_number in range(args.rounds):
            for cell, path, concurrency, posts in cells:
                order = list(bases) if round_number % 2 == 0 else list(reversed(bases))
                for side in order:
                    url_path = path.replace("{account}", "1")
                    rate_p99 = wrk(bases[side], url_path, concurrency, args.seconds, posts=posts)
                    results.setdefault((cell, side), []).append(rate_p99)
    print(
        f"{args.rounds} rounds of {args.seconds} s cells, medians; base {sides['base']}, "
        f"head {sides['head']}"
    )
    print("| cell | base req/s | head req/s | head/base | base p99 ms | head p99 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for cell, *_ in cells:
        base_rate = statistics.median(r for r, _ in results[(cell, "base")])
        head_rate = statistics.median(r for r, _ in results[(cell, "head")])
        base_p99 = statistics.median(p for _, p in results[(cell, "base")])
        head_p99 = statistics.median(p for _, p in results[(cell, "head")])
        print(
            f"| {cell} | {base_rate:,.0f} | {head_rate:,.0f} | {head_rate / base_rate:.2f} "
            f"| {base_p99:.1f} | {head_p99:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
