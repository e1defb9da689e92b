"""A toy server for checking tests/bench/wrk_correction.py against the real wrk: it answers
`GET /` after LATENCY_MS, and once, STALL_AT seconds after its first request, freezes for
STALL_MS (the whole process, as a commit waiting for a slow flush holds every request in
flight).

    python -m tests.bench.stall_server PORT LATENCY_MS STALL_MS [STALL_AT]
    wrk -t 2 -c 16 -d 10s --latency http://127.0.0.1:PORT/
"""

from __future__ import annotations

import asyncio
import sys
import time

from aiohttp import web


def app(latency_ms: float, stall_ms: float, stall_at: float = 5.0) -> web.Application:
    state: dict[str, float | bool] = {"first": 0.0, "stalled": stall_ms <= 0}

    async def answer(_request: web.Request) -> web.Response:
        now = time.monotonic()
        if not state["first"]:
            state["first"] = now
        if not state["stalled"] and now - float(state["first"]) >= stall_at:
            state["stalled"] = True
            time.sleep(stall_ms / 1000)  # the event loop held: every request waits
        await asyncio.sleep(latency_ms / 1000)
        return web.Response(text="ok")

    application = web.Application()
    application.router.add_get("/", answer)
    return application


def main(argv: list[str]) -> int:
    if len(argv) not in {3, 4}:
        print(__doc__)
        return 2
    port, latency, stall = int(argv[0]), float(argv[1]), float(argv[2])
    stall_at = float(argv[3]) if len(argv) == 4 else 5.0
    web.run_app(app(latency, stall, stall_at), port=port, print=None, access_log=None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
