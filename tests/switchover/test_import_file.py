"""`import-unleash --file EXPORT.json --environment ENV`: an export file imported as the
features-batch import does, each flag into its project; a second run appends nothing; a
segment the file names only is refused by name; what is no export file exits 2."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from service.switchover import kinds
from tests.factories import ADMIN, flag, ok
from tests.harness import run_cli

if TYPE_CHECKING:
    from pathlib import Path
    from subprocess import CompletedProcess

    from tests.switchover.conftest import Source, Target


def imported(target: Target, path: Path, *more: str) -> CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"} | {"DATABASE_URL": target.dsn}
    return run_cli(
        env, "import-unleash", "--file", str(path), "--environment", "development", *more
    )


async def exported(source: Source, path: Path) -> None:
    body = {"environment": "development", "project": "default", "downloadFile": False}
    found = await ok(
        await source.client.post("/api/admin/features-batch/export", json=body, headers=ADMIN)
    )
    path.write_text(json.dumps(found))


async def test_a_file_is_imported_once(source: Source, target: Target, tmp_path: Path) -> None:
    await flag(source.client, "file-one")
    await flag(source.client, "file-two", description="from a file")
    path = tmp_path / "export.json"
    await exported(source, path)
    before = await target.events()
    done = imported(target, path, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "dry run" in done.stdout
    assert await target.events() == before
    done = imported(target, path)
    assert done.returncode == 0, done.stderr
    assert await target.events() > before
    one = await ok(
        await target.client.get("/api/admin/projects/default/features/file-two", headers=ADMIN)
    )
    assert one["description"] == "from a file"
    marks = await target.conn.fetch(
        "SELECT DISTINCT metadata->>'origin' AS o FROM events WHERE stream_key = 'file-two'"
    )
    assert [m["o"] for m in marks] == ["unleash-file:export.json"]
    settled = await target.events()
    again = imported(target, path)
    assert again.returncode == 0, again.stderr
    assert await target.events() == settled


async def test_a_segment_the_file_only_names_is_refused(
    source: Source, target: Target, tmp_path: Path
) -> None:
    segment = await ok(
        await source.client.post(
            "/api/admin/segments", json={"name": "file-seg", "constraints": []}, headers=ADMIN
        ),
        201,
    )
    await flag(source.client, "file-segmented")
    strategy = {"name": "default", "segments": [segment["id"]], "constraints": []}
    await ok(
        await source.client.post(
            "/api/admin/projects/default/features/file-segmented/environments/development/strategies",
            json=strategy,
            headers=ADMIN,
        )
    )
    path = tmp_path / "export.json"
    await exported(source, path)
    before = await target.events()
    done = imported(target, path)
    assert done.returncode == 1, done.stdout
    assert "file-seg" in done.stdout
    assert await target.events() == before


async def test_what_is_no_export_file_exits_2(target: Target, tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"features": "no"}')
    done = imported(target, path)
    assert done.returncode == 2
    assert "is not an Unleash export file" in done.stderr
    missing = imported(target, tmp_path / "absent.json")
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr


async def test_a_url_run_after_a_file_finds_the_same_flags_the_same(
    source: Source, target: Target, tmp_path: Path
) -> None:
    """The file's import makes new strategy ids (as Unleash's does): a run from the source
    the file came from finds the same content, no conflict, and writes nothing to them."""
    await flag(source.client, "file-then-url")
    strategies = (
        "/api/admin/projects/default/features/file-then-url/environments/development/strategies"
    )
    for body in (
        {"name": "flexibleRollout", "parameters": {"rollout": "25", "stickiness": "default"}},
        {"name": "default", "constraints": []},
    ):
        await ok(await source.client.post(strategies, json=body, headers=ADMIN))
    path = tmp_path / "export.json"
    await exported(source, path)
    done = imported(target, path)
    assert done.returncode == 0, done.stderr
    ours = await ok(await target.client.get(strategies, headers=ADMIN))
    theirs = await ok(await source.client.get(strategies, headers=ADMIN))
    assert {s["id"] for s in ours}.isdisjoint({s["id"] for s in theirs})
    report = await target.run(source, only=[k for k in kinds.all_kinds() if k.name == "flags"])
    (flags,) = report.outcomes
    assert flags.conflicts == []
    assert "file-then-url" not in flags.updated
    assert await ok(await target.client.get(strategies, headers=ADMIN)) == ours
