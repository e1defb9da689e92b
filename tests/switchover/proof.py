"""`make import-compare`: the switch from a running Unleash proven end to end against it.

`python -m tests.switchover.proof --url REFERENCE_URL --token ADMIN_TOKEN [--flags N]
[--prefix P] [--contexts N] [--keep]`:

1. seeds the reference with seed.py under a prefix of this run's own (a shared reference is
   never wiped; earlier runs' data stays and is imported too);
2. starts a new flagstore (embedded PostgreSQL in a temporary data directory, a port of its
   own, an admin token of its own, made before the import so the proof can read it; that
   token is left out of the comparison);
3. runs `python -m service import-unleash --url ... --token ...`;
4. compares the whole of both servers (compare.py, creation times to the millisecond) and
   asks the SDK of each, with the reference's client token, about every flag;
5. changes the reference (a strategy updated, a flag archived, a user deleted), imports
   again, compares again and checks that each change arrived;
6. runs `python -m service verify` on the new server's database.

It prints a table per comparison, then the final one (kind, on the reference, imported,
compared, result) and the SDK figures, and exits 0 only when every step passed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp

from service.settings import Settings
from tests import ROOT
from tests.harness import free_port, stop_postgres
from tests.switchover import seed as seeding
from tests.switchover.compare import ReadError, Report, Side, compare, render, table
from tests.switchover.normalise import Times

if TYPE_CHECKING:
    from collections.abc import Iterator

DEFAULT_URL = "http://127.0.0.1:4242"
DEFAULT_TOKEN = "*:*.unleash-insecure-admin-api-token"
START_SECONDS = 60.0
COMMAND_SECONDS = 600.0
ENVIRONMENT = "production"


class ProofFailed(Exception):
    """A step that the rest depends on failed."""


@dataclass
class Flagstore:
    """A new service as a process: its data directory, port and admin token."""

    data_dir: Path
    port: int
    token: str
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in Settings.__struct_fields__:  # DATABASE_URL among them: embedded
            env.pop(name.upper(), None)
            env.pop(f"{name.upper()}_FILE", None)
        env.update(
            HOST="127.0.0.1",
            PORT=str(self.port),
            DATA_DIR=str(self.data_dir),
            LOG_FORMAT="json",
            INIT_ADMIN_API_TOKENS=self.token,
        )
        return env

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`python -m service ARGS` on this service's database (also while it serves)."""
        return subprocess.run(
            [sys.executable, "-m", "service", *args],
            cwd=ROOT,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_SECONDS,
            check=False,
        )


@contextlib.contextmanager
def flagstore(keep: bool) -> Iterator[Flagstore]:
    data_dir = Path(tempfile.mkdtemp(prefix="import-compare-", dir="/tmp"))
    service = Flagstore(data_dir, free_port(), f"*:*.{secrets.token_hex(32)}")
    try:
        with (data_dir / "serve.out").open("wb") as out, (data_dir / "serve.err").open("wb") as err:
            service.proc = subprocess.Popen(
                [sys.executable, "-m", "service", "serve"],
                cwd=ROOT,
                env=service.env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
        asyncio.run(_ready(service))
        yield service
    finally:
        if service.proc is not None and service.proc.poll() is None:
            service.proc.send_signal(signal.SIGTERM)
            try:
                service.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                service.proc.kill()
                service.proc.wait(timeout=10)
        stop_postgres(data_dir / "pg")
        if keep:
            say(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


async def _ready(service: Flagstore) -> None:
    deadline = time.monotonic() + START_SECONDS
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        while True:
            assert service.proc is not None
            if service.proc.poll() is not None:
                err = (service.data_dir / "serve.err").read_text(errors="replace")
                raise ProofFailed(f"serve exited with {service.proc.returncode}:\n{err[-2000:]}")
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(f"{service.url}/ready") as resp:
                    if resp.status == 200:
                        return
            if time.monotonic() > deadline:
                raise ProofFailed(f"the new service was not ready within {START_SECONDS} s")
            await asyncio.sleep(0.2)


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# --- the steps --------------------------------------------------------------------------------


@dataclass
class Step:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class Proof:
    steps: list[Step] = field(default_factory=list)
    reports: list[tuple[str, Report]] = field(default_factory=list)

    def step(self, name: str, ok: bool, detail: str = "") -> bool:
        self.steps.append(Step(name, ok, detail))
        say(f"[{'ok' if ok else 'FAILED'}] {name}" + (f": {detail}" if detail else ""))
        return ok

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)


def import_unleash(proof: Proof, service: Flagstore, url: str, token: str, what: str) -> bool:
    started = time.monotonic()
    done = service.command("import-unleash", "--url", url, "--token", token)
    took = time.monotonic() - started
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
    say(tail)
    return proof.step(
        f"{what} (import-unleash, {took:.1f} s)", done.returncode == 0, f"exit {done.returncode}"
    )


async def own_tokens(service: Flagstore) -> frozenset[int]:
    """The ids of the tokens the new service has before any import: its own admin token."""
    headers = {"Authorization": service.token}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{service.url}/api/admin/api-tokens", headers=headers) as resp,
    ):
        body = await resp.json()
    return frozenset(int(t["id"]) for t in body["tokens"] if "id" in t)


def sides(
    url: str, token: str, seeded: seeding.Seeded, service: Flagstore, skip: frozenset[int]
) -> tuple[Side, Side]:
    clients = {e: seeded.client_token(e) for e in seeded.environments}
    reference = Side("reference", url, token, clients)
    ours = Side("flagstore", service.url, service.token, clients, skip_token_ids=skip)
    return reference, ours


async def compared(proof: Proof, what: str, reference: Side, ours: Side, contexts: int) -> Report:
    report = await compare(
        reference, ours, times=Times(created=True), contexts=contexts, sdk_environment=ENVIRONMENT
    )
    say(render(report, reference, ours))
    proof.reports.append((what, report))
    differing = sum(not k.ok for k in report.kinds)
    sdk = ", ".join(s.error or f"SDK {s.agree}/{s.agree + s.differ} agree" for s in report.sdk)
    proof.step(what, report.ok, f"{differing} kinds differ; {sdk}")
    return report


@dataclass(frozen=True)
class Change:
    """What the proof changes in the reference, to import again."""

    flag: str  # its production strategy's rollout goes to 37
    project: str
    strategy: str
    archived: str
    user: str  # e-mail
    user_id: int


async def change_reference(url: str, token: str, seeded: seeding.Seeded) -> Change:
    """A strategy updated, a flag archived, a user deleted: among what this run seeded."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        api = seeding.Api(session, url, token)
        flag, project = seeded.flags[0], seeded.projects[0]  # a parent: a rollout everywhere
        path = (
            f"/api/admin/projects/{project}/features/{flag}/environments/{ENVIRONMENT}/strategies"
        )
        (strategy, *_) = await api.get(path)
        body = {
            k: strategy[k]
            for k in (
                "name",
                "constraints",
                "parameters",
                "variants",
                "segments",
                "title",
                "disabled",
            )
            if k in strategy
        }
        body["parameters"] = {**body["parameters"], "rollout": "37"}
        await api.call("PUT", f"{path}/{strategy['id']}", body)
        archived = next(
            f for n, f in enumerate(seeded.flags) if n % 10 == 4 and f not in seeded.archived
        )
        archived_project = await _project_of(api, archived)
        await api.call("DELETE", f"/api/admin/projects/{archived_project}/features/{archived}")
        users = (await api.get("/api/admin/user-admin"))["users"]
        email = f"{seeded.prefix}-viewer-1@example.com"
        (user_id,) = [u["id"] for u in users if u.get("email") == email]
        await api.call("DELETE", f"/api/admin/user-admin/{user_id}")
    return Change(flag, project, strategy["id"], archived, email, int(user_id))


async def _project_of(api: seeding.Api, flag: str) -> str:
    for project in (p["id"] for p in (await api.get("/api/admin/projects"))["projects"]):
        names = {
            f["name"]
            for f in (await api.get(f"/api/admin/projects/{project}/features"))["features"]
        }
        if flag in names:
            return str(project)
    raise ProofFailed(f"flag {flag} is in no project of the reference")


async def change_arrived(service: Flagstore, change: Change) -> list[str]:
    """What of the change the new service does not show (nothing, when it arrived)."""
    missing = []
    headers = {"Authorization": service.token}
    async with aiohttp.ClientSession(headers=headers) as session:
        base = f"{service.url}/api/admin/projects/{change.project}/features/{change.flag}"
        async with session.get(f"{base}/environments/{ENVIRONMENT}/strategies") as resp:
            strategies = await resp.json() if resp.status == 200 else []
        if not any(s.get("parameters", {}).get("rollout") == "37" for s in strategies):
            missing.append(f"{change.flag}: its {ENVIRONMENT} rollout is not 37")
        async with session.get(f"{service.url}/api/admin/archive/features") as resp:
            archived = (
                {f["name"] for f in (await resp.json()).get("features", [])}
                if resp.status == 200
                else set()
            )
        if change.archived not in archived:
            missing.append(f"{change.archived} is not archived")
        async with session.get(f"{service.url}/api/admin/user-admin") as resp:
            emails = (
                {u.get("email") for u in (await resp.json()).get("users", [])}
                if resp.status == 200
                else set()
            )
        if change.user in emails:
            missing.append(f"{change.user} is still a user")
        if change.user.replace("-viewer-1@", "-viewer-2@") not in emails:
            missing.append("the other users are not there either")
    return missing


def final_table(proof: Proof) -> str:
    if not proof.reports:
        return "no comparison ran"
    _, last = proof.reports[-1]
    rows = [["kind", "on the reference", "imported", "compared", "result"]]
    for k in last.kinds:
        if not all(k.served):
            rows.append(
                [
                    k.kind,
                    "",
                    "",
                    "",
                    "not served by " + ("the reference" if not k.served[0] else "flagstore"),
                ]
            )
            continue
        result = (
            "equal"
            if k.ok
            else f"{len(k.differing)} differ, {len(k.only_a)} missing, {len(k.only_b)} extra"
        )
        rows.append([k.kind, str(k.count_a), str(k.count_b), str(k.entities), result])
    lines = [table(rows)]
    for what, report in proof.reports:
        for s in report.sdk:
            total = s.agree + s.differ
            if s.error:
                lines.append(f"SDK ({what}, {s.environment}): {s.error}")
                continue
            lines.append(
                f"SDK ({what}, {s.environment}): {s.flags} flags x {s.contexts} contexts,"
                f" is_enabled and get_variant: {s.agree} of {total} answers identical,"
                f" {s.differ} differ"
            )
    return "\n".join(lines)


async def _seed(url: str, token: str, flags: int, prefix: str) -> seeding.Seeded:
    seeded = await seeding.seed(url, token, flags=flags, prefix=prefix)
    say(f"seeded {url} under {prefix!r}: {seeded.counts}; skipped: {seeded.skipped}")
    return seeded


def run(args: argparse.Namespace) -> Proof:
    proof = Proof()
    try:
        seeded = asyncio.run(_seed(args.url, args.token, args.flags, args.prefix))
    except (seeding.SeedError, aiohttp.ClientError) as error:
        proof.step("seed the reference", ok=False, detail=str(error))
        return proof
    proof.step(
        "seed the reference", ok=True, detail=f"prefix {args.prefix}, version {seeded.version}"
    )
    with flagstore(args.keep) as service:
        proof.step("start a new flagstore", ok=True, detail=service.url)
        skip = asyncio.run(own_tokens(service))
        reference, ours = sides(args.url, args.token, seeded, service, skip)
        if not import_unleash(proof, service, args.url, args.token, "import"):
            return proof
        asyncio.run(compared(proof, "compare after the import", reference, ours, args.contexts))
        change = asyncio.run(change_reference(args.url, args.token, seeded))
        proof.step(
            "change the reference",
            ok=True,
            detail=f"{change.flag} rollout 37, {change.archived} archived, {change.user} deleted",
        )
        if not import_unleash(proof, service, args.url, args.token, "import again"):
            return proof
        missing = asyncio.run(change_arrived(service, change))
        proof.step("the change arrived", not missing, "; ".join(missing))
        asyncio.run(
            compared(proof, "compare after the second import", reference, ours, args.contexts)
        )
        verified = service.command("verify")
        say("\n".join((verified.stdout + verified.stderr).strip().splitlines()[-15:]))
        proof.step("verify", verified.returncode == 0, f"exit {verified.returncode}")
    return proof


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.switchover.proof", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--url", default=os.environ.get("REFERENCE_URL", DEFAULT_URL))
    parser.add_argument("--token", default=os.environ.get("REFERENCE_TOKEN", DEFAULT_TOKEN))
    parser.add_argument("--flags", type=int, default=seeding.DEFAULT_FLAGS)
    parser.add_argument("--prefix", default=f"proof-{int(time.time()):x}")
    parser.add_argument("--contexts", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the new service's data")
    args = parser.parse_args(argv)
    try:
        proof = run(args)
    except (ProofFailed, ReadError, aiohttp.ClientError, RuntimeError) as error:
        say(f"import-compare: {error}")
        return 2
    say("\n" + final_table(proof))
    say("\nsteps: " + ", ".join(f"{s.name}: {'ok' if s.ok else 'FAILED'}" for s in proof.steps))
    say("result: " + ("PROVEN EQUAL" if proof.ok else "NOT PROVEN"))
    return 0 if proof.ok else 1


if __name__ == "__main__":
    sys.exit(main())
