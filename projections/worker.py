"""One group of projections rebuilt into a replay's scratch schema, in a process of its own:
`replay` starts one per group (registry.GROUPS) so that a large log is rebuilt on every core.

    FLAGSTORE_REBUILD_DSN=... python -m projections.worker SCHEMA GROUP UPTO

(the connection string comes from the environment, never from the command line, which other
users of the machine may read). Prints one JSON line: the events read, and the seconds taken.
"""

from __future__ import annotations

import os
import re
import sys
import time

import msgspec
import uvloop

from eventlog import connections
from eventlog.privacy import master
from projections.rebuild import rebuild_group
from projections.registry import GROUPS

DSN_VARIABLE = "FLAGSTORE_REBUILD_DSN"


class Rebuilt(msgspec.Struct, frozen=True, kw_only=True):
    group: int
    events: int
    seconds: float


async def run(dsn: str, schema: str, group: int, upto: int) -> Rebuilt:
    started = time.perf_counter()
    conn = await connections.connect(dsn)
    try:
        async with conn.transaction():
            await conn.execute(connections.set_search_path(schema))
            events = await rebuild_group(conn, GROUPS[group], upto)
    finally:
        await conn.close()
    return Rebuilt(group=group, events=events, seconds=round(time.perf_counter() - started, 3))


def main() -> int:
    schema, group, upto = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", schema):  # it goes into SQL text
        sys.stderr.write(f"not a schema name: {schema!r}\n")
        return 2
    master.install_from_worker_environment(os.environ)
    done = uvloop.run(run(os.environ[DSN_VARIABLE], schema, group, upto))
    sys.stdout.write(msgspec.json.encode(done).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
