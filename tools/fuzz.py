"""Fuzz the running service with schemathesis: `.venv/bin/python -m tools.fuzz [--max-examples N]
[--seed S] [--max-time SECONDS]`.

Starts `python -m service serve` on 127.0.0.1 (a free port, the embedded PostgreSQL in a temporary
DATA_DIR), seeds it over HTTP with an admin token (a project with an environment on, flags with
strategies, variants, tags and a dependency, a segment, a custom strategy type and context field
that the flags' strategies use, a tag type with a tag, users, a service account with a token, an
API token), signs in as a Viewer and makes their personal access token, then runs `schemathesis
run` on /docs/openapi.json (every phase: examples, coverage, fuzzing, stateful) with the Viewer's
token, then with the admin token. Every operation is fuzzed but the one schemathesis reads the
document from (GET /docs/openapi.json). The client API's stream of server-sent events never ends:
schemathesis reads its first event (STREAM_EVENTS) and checks it against the document's
`text/event-stream` schema. Every check is on but those listed in EXCLUDED_CHECKS (and
NARROWER_CHECKS: the statuses of one), each with its reason. The service is stopped (SIGTERM) and
its directory removed whatever happens; exit 1 when schemathesis found a failure or an error.

Each token's run leaves out the one operation that revokes that very token (the run would go on
with 401 everywhere); a short run of that operation alone follows it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from service.settings import Settings

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parent.parent
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
EXPIRES = "2099-01-01T00:00:00Z"
PASSWORD = "Fuzz-Viewer-Passw0rd!2026"  # a throwaway service's seeded Viewer
# One worker: with two, Hypothesis' lambda descriptions (ast.parse in both threads at once) hit
# CPython 3.11's "SystemError: AST constructor recursion depth mismatch" now and then, a crash
# of the fuzzer and no finding; one worker fuzzes as many examples in the same time.
WORKERS = 1

# Every check schemathesis has is on (its default) except these:
EXCLUDED_CHECKS = {
    # Expects every schema-valid request to be accepted (2xx). The service also refuses with
    # 400 what JSON Schema cannot say: rules across fields (`email` or `username`), the
    # password policy (OwaspValidationError), names that must exist (a rootRole, a
    # constraint's operator and the value it needs), `?at=` positions beyond the log,
    # filters that name no user. The README and docs/behavior.md ("Order of checks", "Creating
    # users") document these 400s; the check would flag each of them on every run.
    "positive_data_acceptance",
}
# A request that breaks the schema may also be refused for its size: 413 for a body over 1 MiB,
# 431 for a request line (a query) over 8190 bytes. negative_data_rejection counts these as
# accepting it by default; they are refusals, and every operation documents them.
REJECTIONS = (400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, 431, "5xx")
# Checks configured in schemathesis.toml, each with its reason.
NARROWER_CHECKS = (
    "[checks.negative_data_rejection]",
    f"expected-statuses = {json.dumps([str(status) for status in REJECTIONS])}",
)
# A stream of server-sent events never ends, and its later events come only with changes:
# schemathesis stops reading it after its first one (`unleash-connected`, sent at once), instead
# of waiting for the request's timeout.
STREAM_EVENTS = (
    "[[operations]]",
    'include-path = "/api/client/streaming"',
    "max-stream-events = 1",
)
# The operations that revoke the credential of the run they are in: run last, alone.
REVOKE = {"admin": "deleteApiToken", "viewer": "deleteOwnToken"}
# Maintenance mode switched on refuses every later change with 503 (not_a_server_error would
# flag each): the admin's toggle runs alone after the rest, and the mode is off again after it.
MAINTENANCE = "toggleMaintenance"
# The admin's deletes (an archived flag, a disabled environment, a deleted user or segment) run
# after everything else: run among the rest, they take the seeded data away early, and most
# flag, user and segment routes then only ever meet a 404. A Viewer deletes nothing: one run.
PARTS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "viewer": (("", ()),),
    "admin": (("", ("--exclude-method", "DELETE")), ("-delete", ("--include-method", "DELETE"))),
}


@dataclass
class Run:
    """One schemathesis run: its name and what its JSON report says."""

    name: str
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def failures(self) -> int:
        cases: dict[str, int] = self.report.get("test_cases", {})
        errors = sum(int(e.get("count", 1)) for e in self.report.get("errors", []))
        return cases.get("unique_failures", 0) + errors


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def call(
    url: str,
    method: str = "GET",
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, dict[str, str]]:
    """One request; the status, the JSON body (or None) and the headers."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})  # noqa: S310
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - 127.0.0.1
            raw, status, got = response.read(), response.status, dict(response.headers)
    except urllib.error.HTTPError as exc:
        raw, status, got = exc.read(), exc.code, dict(exc.headers)
    return status, (json.loads(raw) if raw else None), got


class Service:
    """The service as a subprocess on a fresh embedded database."""

    def __init__(self, data_dir: Path, admin_token: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin = admin_token
        env = dict(os.environ)
        for name in Settings.__struct_fields__:  # DATABASE_URL among them: embedded PostgreSQL
            env.pop(name.upper(), None)
            env.pop(f"{name.upper()}_FILE", None)
        env.update(
            HOST="127.0.0.1",
            PORT=str(self.port),
            DATA_DIR=str(data_dir),
            LOG_FORMAT="json",
            LOG_LEVEL="warning",  # 5xx are logged (error); no line per request
            INIT_ADMIN_API_TOKENS=admin_token,
            PII_MASTER_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
        )
        self.log = data_dir.parent / "serve.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "service", "serve"],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                msg = f"serve exited with {self.proc.returncode}:\n{self.log.read_text()}"
                raise RuntimeError(msg)
            with contextlib.suppress(OSError):
                if call(f"{self.url}/ready")[0] == 200:
                    return
            time.sleep(0.1)
        msg = f"/ready not 200 within {START_TIMEOUT} s"
        raise RuntimeError(msg)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def admin_call(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        status, answer, _ = call(self.url + path, method, body, {"Authorization": self.admin})
        if status != expect:
            msg = f"{method} {path}: {status} {answer}"
            raise RuntimeError(msg)
        return answer


@dataclass
class Seeded:
    """What seed() made: the Viewer's token, and for each path parameter the values that name
    something (schemathesis draws from them 4 times in 5: config())."""

    viewer_token: str = ""
    known: dict[str, list[str | int]] = field(default_factory=dict)

    def add(self, name: str, *values: str | int) -> None:
        self.known.setdefault(name, []).extend(values)


def seed(service: Service) -> Seeded:
    """Something for every operation to find."""
    seeded = Seeded()
    post = service.admin_call
    post("POST", "/api/admin/projects", {"id": "fuzz", "name": "Fuzz"}, 201)
    post("POST", "/api/admin/environments", {"name": "staging", "type": "test"}, 201)
    post("POST", "/api/admin/projects/fuzz/environments", {"environment": "staging"})
    segment = post(
        "POST",
        "/api/admin/segments",
        {
            "name": "beta",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1", "2"]}],
        },
        201,
    )
    # A custom strategy type and context field, which the flags' strategies use (a delete of
    # the type then meets its 409, the field's strategies route finds them).
    post("POST", "/api/admin/strategies", {"name": "fuzz-type", "parameters": []}, 201)
    post("POST", "/api/admin/context", {"name": "fuzz-field"}, 201)
    for name in ("fuzz-parent", "fuzz-child", "fuzz-other"):
        post("POST", "/api/admin/projects/fuzz/features", {"name": name, "description": "seed"})
        flag = f"/api/admin/projects/fuzz/features/{name}/environments/staging"
        strategy = {
            "name": "flexibleRollout",
            "parameters": {"rollout": "50", "stickiness": "default", "groupId": name},
            "constraints": [{"contextName": "appName", "operator": "IN", "values": ["web"]}],
            "segments": [segment["id"]],
        }
        seeded.add("strategyId", post("POST", f"{flag}/strategies", strategy)["id"])
        on_field = [{"contextName": "fuzz-field", "operator": "IN", "values": ["x"]}]
        post("POST", f"{flag}/strategies", {"name": "fuzz-type", "constraints": on_field})
        variants = [{"name": "blue", "weight": 500}, {"name": "green", "weight": 500}]
        post("PUT", f"{flag}/variants", variants)
        post("POST", f"{flag}/on")
        post("POST", f"/api/admin/features/{name}/tags", {"value": "seeded"}, 201)
    post("POST", "/api/admin/tag-types", {"name": "fuzz-team", "color": "#1A7F37"}, 201)
    post("POST", "/api/admin/tags", {"type": "fuzz-team", "value": "seeded"}, 201)
    post(
        "POST",
        "/api/admin/projects/fuzz/features/fuzz-child/dependencies",
        {"feature": "fuzz-parent"},
    )
    # A link, so that the link routes reach more than their 404.
    parent = "/api/admin/projects/fuzz/features/fuzz-parent"
    post("POST", f"{parent}/link", {"url": "https://example.com/pr/1"}, 204)
    seeded.add("linkId", post("GET", parent)["links"][0]["id"])
    post("DELETE", "/api/admin/projects/fuzz/features/fuzz-other", expect=202)  # one archived
    email = "viewer@example.com"
    viewer = {"email": email, "name": "Vi", "rootRole": 3, "password": PASSWORD}
    seeded.add("id", post("POST", "/api/admin/user-admin", viewer, 201)["id"])
    editor = {"username": "editor", "rootRole": 2}
    seeded.add("id", post("POST", "/api/admin/user-admin", editor, 201)["id"])
    account = post(
        "POST", "/api/admin/service-account", {"username": "fuzz-bot", "rootRole": 2}, 201
    )
    pat = {"description": "seed", "expiresAt": EXPIRES}
    token = post("POST", f"/api/admin/service-account/{account['id']}/token", pat, 201)
    client = {"tokenName": "fuzz-client", "type": "client", "projects": ["fuzz"]}
    api_token = post("POST", "/api/admin/api-tokens", {**client, "environment": "staging"}, 201)
    seeded.add("id", account["id"], segment["id"], api_token.get("id", 2))
    seeded.add("tokenId", token["id"])
    seeded.add("projectId", "fuzz", "default")
    seeded.add("environment", "staging", "development")
    flags = ("fuzz-parent", "fuzz-child", "fuzz-other")
    for name in ("featureName", "child", "parent"):
        seeded.add(name, *flags)
    seeded.add("type", "simple", "fuzz-team")
    # tag types, strategy types and the client API's flags
    seeded.add("name", "simple", "fuzz-team", "fuzz-type", "flexibleRollout", *flags)
    seeded.add("strategyName", "fuzz-type", "userWithId")
    seeded.add("contextField", "fuzz-field", "userId")
    seeded.add("value", "seeded")
    seeded.viewer_token = viewer_token(service, email)
    return seeded


def config(seeded: Seeded, path: Path) -> Path:
    """schemathesis.toml: each path parameter drawn from what seed() made 4 times in 5 (else
    generated), so that operations reach more than their 404."""
    lines = []
    for name, values in sorted(seeded.known.items()):
        lines += [f"[dictionaries.{name}]", f"values = {json.dumps(values)}", ""]
    lines.append("[parameters]")
    lines += [
        f'"path.{name}" = {{ dictionary = "{name}", probability = 0.8 }}'
        for name in sorted(seeded.known)
    ]
    path.write_text("\n".join([*lines, "", *NARROWER_CHECKS, "", *STREAM_EVENTS]) + "\n")
    return path


def viewer_token(service: Service, email: str) -> str:
    """Sign in as the Viewer, then make their personal access token with the session."""
    login = {"username": email, "password": PASSWORD}
    status, _, headers = call(f"{service.url}/auth/simple/login", "POST", login)
    cookie = headers.get("Set-Cookie", "").split(";", 1)[0]
    if status != 200 or not cookie:
        msg = f"the Viewer could not sign in: {status}"
        raise RuntimeError(msg)
    pat = {"description": "fuzz", "expiresAt": EXPIRES}
    status, body, _ = call(f"{service.url}/api/admin/user/tokens", "POST", pat, {"Cookie": cookie})
    if status != 201:
        msg = f"the Viewer's token: {status} {body}"
        raise RuntimeError(msg)
    secret: str = body["secret"]
    return secret


def schemathesis(
    service: Service,
    run: Run,
    token: str,
    args: argparse.Namespace,
    report_dir: Path,
    *filters: str,
) -> Run:
    """One `schemathesis run`; its JSON report is read into run.report."""
    # Every phase; but no links lead from or to an operation run alone, or among deletes: no
    # stateful phase for those runs (schemathesis counts "no links" as an error).
    alone = "--include-operation-id" in filters or "--include-method" in filters
    phases = "examples,coverage,fuzzing" + ("" if alone else ",stateful")
    path = report_dir / f"{run.name}.json"
    command = [
        str(SCHEMATHESIS),
        "--config-file",
        str(report_dir / "schemathesis.toml"),
        "run",
        f"{service.url}/docs/openapi.json",
        "--header",
        f"Authorization: {token}",
        "--phases",
        phases,
        "--exclude-checks",
        ",".join(sorted(EXCLUDED_CHECKS)),
        "--workers",
        str(WORKERS),
        "--seed",
        str(args.seed),
        "--max-examples",
        str(args.max_examples),
        "--generation-database",
        "none",  # the same seed, the same run: nothing carried over from earlier runs
        "--request-timeout",
        "30",
        "--report",
        "json",
        "--report-json-path",
        str(path),
        "--no-color",
        *(["--max-time", str(args.max_time)] if args.max_time and not filters else []),
        *filters,
    ]
    shown = " ".join("Authorization: <token>" if token in part else part for part in command)
    print(f"\n== {run.name}: {shown}")
    sys.stdout.flush()
    subprocess.run(command, cwd=report_dir, check=False)
    if path.exists():
        run.report = json.loads(path.read_text())
    else:
        run.report = {"errors": [{"title": "schemathesis wrote no report"}]}
    return run


def summary(runs: list[Run], seconds: float) -> None:
    print("\n== fuzz summary")
    for run in runs:
        ops = run.report.get("operations", {})
        cases = run.report.get("test_cases", {})
        kinds = ", ".join(
            f"{f['code']} {f['title']} x{f['count']}" for f in run.report.get("failures", [])
        )
        print(
            f"{run.name:<14} operations {ops.get('tested', 0)}/{ops.get('total', 0)}, "
            f"{cases.get('generated', 0)} examples, {run.failures} failures"
            + (f" ({kinds})" if kinds else "")
            + (f", {len(run.report.get('errors', []))} errors" if run.report.get("errors") else "")
        )
    print(f"{sum(r.failures for r in runs)} failures in {seconds:.0f} s")


@contextlib.contextmanager
def running() -> Iterator[tuple[Service, Path]]:
    """The service on a fresh directory; stopped and removed whatever happens."""
    work = Path(tempfile.mkdtemp(prefix="fuzz-")).resolve()
    service = None
    try:
        service = Service(work / "data", f"*:*.{secrets.token_hex(32)}")
        service.wait_ready()
        yield service, work
    finally:
        if service is not None:
            service.stop()
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=20, help="per operation and phase")
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument(
        "--max-time", type=int, default=0, help="seconds per token's run (0: no bound)"
    )
    parser.add_argument("--keep-reports", type=Path, help="copy the JSON reports here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    runs: list[Run] = []
    with running() as (service, work):
        seeded = seed(service)
        config(seeded, work / "schemathesis.toml")
        for name, token in (("viewer", seeded.viewer_token), ("admin", service.admin)):
            revoke = REVOKE[name]
            for part, filters in PARTS[name]:
                runs.append(
                    schemathesis(
                        service,
                        Run(f"{name}{part}"),
                        token,
                        args,
                        work,
                        *filters,
                        "--exclude-operation-id",
                        revoke,
                        *(("--exclude-operation-id", MAINTENANCE) if name == "admin" else ()),
                    )
                )
            if name == "admin":
                runs.append(
                    schemathesis(
                        service,
                        Run("admin-maintenance"),
                        token,
                        args,
                        work,
                        "--include-operation-id",
                        MAINTENANCE,
                    )
                )
                service.admin_call("POST", "/api/admin/maintenance", {"enabled": False}, 204)
            runs.append(
                schemathesis(
                    service,
                    Run(f"{name}-revoke"),
                    token,
                    args,
                    work,
                    "--include-operation-id",
                    revoke,
                )
            )
        if args.keep_reports:
            args.keep_reports.mkdir(parents=True, exist_ok=True)
            for report in work.glob("*.json"):
                shutil.copy(report, args.keep_reports)
    summary(runs, time.monotonic() - started)
    return 1 if any(run.failures for run in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
