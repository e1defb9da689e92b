"""Token listing throughput: a service account's 50 tokens (docs/behavior.md, list all tokens
for a service account), ours and the reference, same load tool, same machine.

Run with `make bench` (or `.venv/bin/python -m tests.bench.tokens`; wrk from Debian). Ours:
GET /api/admin/service-account/:id/token for an account holding 50 tokens, authenticated by
an admin API token and by an admin service account's own token (the personal-access-token
path, which also records use), at concurrency 1 and 16; and GET /api/admin/user/tokens for a
user holding 10 tokens. The reference's open-source edition has no service accounts, so with
BENCH_REFERENCE=1 its comparable listing is measured: a user's own tokens (its limit of 10),
GET /api/admin/user/tokens authenticated by one of them. BENCH_SECONDS sets the seconds per row
(default 10). Prints a markdown table; JSON in tests/bench/out/tokens.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

from tests.bench.clone import call
from tests.bench.create import (
    REFERENCE,
    REFERENCE_TOKEN,
    ROOT,
    TOKEN,
    Row,
    serving_ours,
    serving_reference,
    wrk_row,
)

OUT = ROOT / "tests" / "bench" / "out" / "tokens.json"
PASSWORD = "Bench!Passw0rd#2026"
EXPIRES = (datetime.now(UTC) + timedelta(days=30)).isoformat()


def sign_in(base: str, username: str, password: str) -> str:
    """The session cookie ("name=value") of a password sign-in."""
    request = urllib.request.Request(
        base + "/auth/simple/login",
        data=json.dumps({"username": username, "password": password}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        cookies = [c.split(";")[0] for c in resp.headers.get_all("Set-Cookie") or []]
    # The session's cookie, whichever place it has among those set (Unleash may set others).
    session = [c for c in cookies if c.startswith("unleash-session=")]
    if not session:
        raise RuntimeError(f"no session cookie from {base}: {cookies}")
    return str(session[-1])


def own_tokens(base: str, cookie: str, count: int) -> list[str]:
    secrets = []
    for i in range(count):
        request = urllib.request.Request(
            base + "/api/admin/user/tokens",
            data=json.dumps({"description": f"bench {i}", "expiresAt": EXPIRES}).encode(),
            headers={"Content-Type": "application/json", "Cookie": cookie},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as resp:
            secrets.append(json.loads(resp.read())["secret"])
    return secrets


def get(  # noqa: PLR0917 - one measured row, every knob explicit
    server: str, url: str, auth: str, concurrency: int, seconds: int, pid: int
) -> Row:
    return wrk_row(server, concurrency, seconds, pid, ["-H", f"Authorization: {auth}", url])


def bench_ours(seconds: int) -> list[tuple[str, Row]]:
    with serving_ours() as (base, pid):
        account = call(
            base,
            TOKEN,
            "POST",
            "/api/admin/service-account",
            {"username": "bench-sa", "rootRole": 1},
        )
        path = f"/api/admin/service-account/{account['id']}/token"
        secrets = [
            call(base, TOKEN, "POST", path, {"description": f"t{i}", "expiresAt": EXPIRES})[
                "secret"
            ]
            for i in range(50)
        ]
        assert len(call(base, TOKEN, "GET", path)["pats"]) == 50
        user = {"username": "bench", "password": PASSWORD, "rootRole": 1}
        call(base, TOKEN, "POST", "/api/admin/user-admin", user)
        pat = own_tokens(base, sign_in(base, "bench", PASSWORD), 10)[0]
        rows = [
            (
                f"{path.replace(str(account['id']), ':id')} (50), admin API token",
                get("ours", base + path, TOKEN, c, seconds, pid),
            )
            for c in (1, 16)
        ]
        rows.append(
            (
                "same, the account's own token",
                get("ours", base + path, secrets[0], 16, seconds, pid),
            )
        )
        rows.append(
            (
                "/api/admin/user/tokens (10), own token",
                get("ours", base + "/api/admin/user/tokens", pat, 16, seconds, pid),
            )
        )
        return rows


def bench_reference(seconds: int) -> list[tuple[str, Row]]:
    with serving_reference() as (base, pid):
        pat = own_tokens(base, sign_in(base, "admin", "unleash4all"), 10)[0]
        url = base + "/api/admin/user/tokens"
        assert REFERENCE_TOKEN  # the admin API token cannot list PATs there: PATs need a user
        return [
            ("/api/admin/user/tokens (10), own token", get("reference", url, pat, c, seconds, pid))
            for c in (1, 16)
        ]


def main() -> int:
    if shutil.which("wrk") is None:
        print("wrk is needed: apt-get install wrk", file=sys.stderr)
        return 2
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    reference = os.environ.get("BENCH_REFERENCE") == "1"
    if reference:
        subprocess.run(["bash", str(REFERENCE / "stop.sh")], check=False, capture_output=True)
    results = bench_ours(seconds)
    if reference:
        results += bench_reference(seconds)
    print("| server | listing | c | requests/s (2xx) | p50 ms | p99 ms | non-2xx | peak RSS MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for what, r in results:
        print(
            f"| {r.server} | {what} | {r.concurrency} | {r.ok_per_s:,.0f} | {r.p50_ms:.2f} "
            f"| {r.p99_ms:.2f} | {r.non_2xx} | {r.peak_rss_mb or '-'} |"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps([{"listing": w} | asdict(r) for w, r in results], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
