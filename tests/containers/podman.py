"""Containers of the service image with podman, for `make image-test` and `make deploy-test`.

The image comes from IMAGE (set by make). Without it, or without podman, the tests fail: a
container test never skips (CI must not pass without running it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

ROOT = Path(__file__).resolve().parents[2]
UID = 10001  # any numeric user; the image's default too
# Where the Deployment mounts its Secrets (deploy/base/deployment.yaml).
SECRETS_DIR = "/run/secrets/flagstore"


def image() -> str:
    name = os.environ.get("IMAGE")
    if not name:
        pytest.fail("IMAGE is unset: run `make image-test` or `make deploy-test`, which build it")
    if podman("image", "exists", name, check=False).returncode != 0:
        pytest.fail(f"image {name} does not exist: `make image` builds it")
    return name


def podman(
    *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTAINERS_CONF": str(ROOT / "deploy" / "containers.conf")}
    try:
        return subprocess.run(
            ["podman", *args], env=env, capture_output=True, text=True, check=check, timeout=timeout
        )
    except FileNotFoundError:
        pytest.fail("podman is not installed (apt-get install podman runc)")
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"podman {' '.join(args)} exited {exc.returncode}:\n{exc.stderr}")


def inspect(name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = json.loads(podman("inspect", name).stdout)
    return found[0]


def secret_files(directory: Path, files: dict[str, str]) -> str:
    """Files mounted read-only at SECRETS_DIR as the Deployment's Secret volume is: mode 0440,
    group UID (its fsGroup); the `--volume` value. Without root (rootless podman), which cannot
    give the files to UID's group, they are readable by all."""
    directory.mkdir()
    for name, content in files.items():
        (directory / name).write_text(content + "\n")
    paths = [directory / name for name in files] + [directory]
    try:
        for path in paths:
            os.chown(path, -1, UID)
        dir_mode, file_mode = 0o750, 0o440
    except PermissionError:
        dir_mode, file_mode = 0o755, 0o444
    for path in paths:
        path.chmod(dir_mode if path.is_dir() else file_mode)
    return f"{directory}:{SECRETS_DIR}:ro"


def _run_options(env: dict[str, str], volumes: tuple[str, ...]) -> list[str]:
    """Read-only, on the host network, as the numeric user, with these variables and mounts."""
    return [
        "--network", "host", "--read-only", "--user", f"{UID}:{UID}",
        *[f"--env={key}={value}" for key, value in env.items()],
        *[f"--volume={volume}" for volume in volumes],
    ]  # fmt: skip


@dataclass
class Container:
    """A detached container of the image on the host network, read-only, as a numeric user."""

    name: str
    port: int
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    volumes: tuple[str, ...] = ()  # `--volume` values, e.g. secret_files()'s

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, image_name: str) -> Container:
        env = {"PORT": str(self.port), **self.env}
        podman(
            "run", "--detach", "--name", self.name, *_run_options(env, self.volumes),
            image_name, *self.args,
        )  # fmt: skip
        return self

    def running(self) -> bool:
        return bool(inspect(self.name)["State"]["Running"])

    def exit_code(self) -> int:
        return int(inspect(self.name)["State"]["ExitCode"])

    def logs(self) -> str:
        result = podman("logs", self.name, check=False)
        return result.stdout + result.stderr

    def log_lines(self) -> list[dict[str, Any]]:
        lines = podman("logs", self.name, check=False).stdout.splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def stop(self, timeout: float) -> tuple[int, float]:
        """`podman stop` (SIGTERM, SIGKILL after timeout): the exit code and the seconds taken."""
        began = time.monotonic()
        podman("stop", "--time", str(int(timeout)), self.name, timeout=timeout + 30)
        return self.exit_code(), time.monotonic() - began

    def signal(self, sig: str = "TERM") -> None:
        podman("kill", "--signal", sig, self.name)

    def remove(self) -> None:
        podman("rm", "--force", "--time", "0", self.name, check=False)

    async def wait_ready(self, timeout: float = 60) -> float:
        """Seconds until /ready answered 200; fails with the logs when the container exits."""
        began = time.monotonic()
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(force_close=True),
            timeout=aiohttp.ClientTimeout(total=2),
        ) as session:
            while True:
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(f"{self.url}/ready") as resp:
                        if resp.status == 200:
                            return time.monotonic() - began
                if not self.running():
                    pytest.fail(f"{self.name} exited {self.exit_code()}:\n{self.logs()}")
                if time.monotonic() - began > timeout:
                    pytest.fail(f"{self.name}: /ready not 200 within {timeout} s:\n{self.logs()}")
                await asyncio.sleep(0.1)


def run_once(
    image_name: str, *args: str, env: dict[str, str], volumes: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """A one-off command of the image (a migration Job, verify), read-only, as a numeric user."""
    return podman(
        "run", "--rm", "--name", f"flagstore-job-{uuid.uuid4().hex[:8]}",
        *_run_options(env, volumes), image_name, *args, check=False, timeout=300,
    )  # fmt: skip


def start_job(image_name: str, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """run_once, not waited for: several at once (the migration Job's race)."""
    command = ["podman", "run", "--rm", *_run_options(env, ()), image_name, *args]
    return subprocess.Popen(
        command,
        env={**os.environ, "CONTAINERS_CONF": str(ROOT / "deploy" / "containers.conf")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
