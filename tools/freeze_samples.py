"""Freeze the stored document of each event type's current version that has no sample yet.

    .venv/bin/python -m tools.freeze_samples [DOCUMENT.json ...]

For a type whose older version has a sample, the newest older sample is decoded (through the
upcasters), appended to a scratch database, and its `data` written back exactly as PostgreSQL
stores it: `tests/stored_events/<Type>.v<N>.json`. A new type has no older sample: give a file
holding one document of it (its `data`, with the `type` key); it is stored the same way.
Existing samples are never touched (they are what was stored, forever).
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
import uuid
from pathlib import Path

import msgspec

from eventlog import appends, codec, connections, migrations
from eventlog.events.base import Metadata
from service import embedded

SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "stored_events"
SAMPLE_NAME = re.compile(r"^(\w+)\.v(\d+)\.json$")
ACTOR = Metadata(actor_id="freeze-samples", actor_name="freeze-samples", actor_kind="system")


def existing() -> dict[str, dict[int, Path]]:
    found: dict[str, dict[int, Path]] = {}
    for path in SAMPLES.glob("*.json"):
        match = SAMPLE_NAME.match(path.name)
        if match:
            found.setdefault(match[1], {})[int(match[2])] = path
    return found


def wanted(documents: list[Path]) -> list[tuple[str, int, codec.DomainEvent]]:
    """(type, current version, event) for every missing current-version sample."""
    samples = existing()
    given = {}
    for path in documents:
        text = path.read_text()
        name = msgspec.json.decode(text, type=dict[str, object])["type"]
        assert isinstance(name, str)
        given[name] = codec.decode(name, codec.EVENT_TYPES[name].schema_version, text)
    out = []
    for name, cls in codec.EVENT_TYPES.items():
        versions = samples.get(name, {})
        if cls.schema_version in versions:
            continue
        if name in given:
            out.append((name, cls.schema_version, given[name]))
        elif versions:
            older = max(versions)
            event = codec.decode(name, older, versions[older].read_text().rstrip("\n"))
            out.append((name, cls.schema_version, event))
        else:
            sys.exit(f"{name} is new: give a file holding one document of it")
    return out


async def store(dsn: str, missing: list[tuple[str, int, codec.DomainEvent]]) -> None:
    conn = await connections.connect(dsn)
    try:
        await migrations.migrate(conn)
        for name, version, event in missing:
            async with conn.transaction():
                stream = ("sample", uuid.uuid4().hex)
                await appends.append(conn, stream, "no-stream", [event], ACTOR)
                data = await conn.fetchval(
                    "SELECT data::text FROM events WHERE stream_key = $1", stream[1]
                )
            (SAMPLES / f"{name}.v{version}.json").write_text(data + "\n")
            print(f"wrote {name}.v{version}.json")
    finally:
        await conn.close()


def main(argv: list[str]) -> int:
    missing = wanted([Path(a) for a in argv])
    if not missing:
        print("every event type's current version has its sample")
        return 0
    with (
        tempfile.TemporaryDirectory(prefix="freeze-", dir="/tmp") as scratch,
        embedded.embedded_postgres(Path(scratch)) as dsn,
    ):
        asyncio.run(store(dsn, missing))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
