"""`?at=` (docs/audit.md): a read route asked about a past instant answers, byte for byte, what
it answered then. A few hundred random changes through the API; after each, the instant and
the answers of the read routes; then every instant asked again with `at=`, by time and by
position."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, error, in_days, settings_for

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from service.settings import Settings

    Client = TestClient[Any, Any]

CHANGES = 250  # changes that appended events (refused ones are tried again)
FLAGS = [f"f{n}" for n in range(6)]
PROJECTS = ["default", "p1"]
ENVIRONMENTS = ["development", "production"]


@pytest.fixture
def settings(dsn: str) -> Settings:
    """Deleted people are erased a year later here (ERASURE_DELAY_DAYS): these tests read what
    the log held about them (erasure, and its "[erased]", is tests/audit/test_privacy.py's)."""
    return settings_for(dsn, erasure_delay_days=365)


@dataclass
class World:
    """What the random changes made so far, so that most of them are valid."""

    client: Client
    rng: random.Random
    flags: dict[str, str] = field(default_factory=dict)  # name -> project
    archived: set[str] = field(default_factory=set)
    strategies: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    segments: list[int] = field(default_factory=list)
    users: list[int] = field(default_factory=list)
    accounts: list[int] = field(default_factory=list)
    pats: dict[int, list[int]] = field(default_factory=dict)
    api_tokens: list[int] = field(default_factory=list)
    projects: list[str] = field(default_factory=lambda: ["default"])
    counter: int = 0
    touched: list[str] = field(default_factory=list)  # paths whose answers this change may alter
    # (each asked again at its instant, ALWAYS's lists among them: not left to their turn)

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        resp = await self.client.request(method, path, json=body, headers=ADMIN)
        assert resp.status < 500, await resp.text()
        return await resp.json() if resp.content_type == "application/json" else None

    def flag(self) -> tuple[str, str] | None:
        active = [n for n in self.flags if n not in self.archived]
        if not active:
            return None
        name = self.rng.choice(active)
        return name, self.flags[name]

    def next(self) -> int:
        self.counter += 1
        return self.counter


def feature_paths(name: str, project: str) -> list[str]:
    base = f"/api/admin/projects/{project}/features/{name}"
    return [
        base,
        f"{base}/environments/development/strategies",
        f"/api/admin/features/{name}/tags",
        f"/api/admin/projects/{project}/features",
        "/api/admin/projects",  # its flag count
        f"/api/admin/archive/features/{project}",
    ]


async def create_flag(w: World) -> None:
    free = [n for n in FLAGS if n not in w.flags]
    if not free:
        return
    name, project = w.rng.choice(free), w.rng.choice(w.projects)
    body = {"name": name, "description": w.rng.choice(["", "d", None]), "type": "release"}
    if await w.call("POST", f"/api/admin/projects/{project}/features", body):
        w.flags[name] = project
        w.touched += feature_paths(name, project)


async def clone_flag(w: World) -> None:
    source, free = w.flag(), [n for n in FLAGS if n not in w.flags]
    if source is None or not free:
        return
    name, project = w.rng.choice(free), w.rng.choice(w.projects)
    path = f"/api/admin/projects/{project}/features/{source[0]}/clone"
    if await w.call("POST", path, {"name": name}):
        w.flags[name] = project
        w.strategies[name] = []  # ids are new: unknown here, so not changed later
        w.touched += feature_paths(name, project)


async def strategy(w: World) -> None:
    found = w.flag()
    if found is None:
        return
    name, project = found
    env = w.rng.choice(ENVIRONMENTS)
    base = f"/api/admin/projects/{project}/features/{name}/environments/{env}/strategies"
    mine = [s for s in w.strategies.get(name, []) if s[0] == env]
    body = {
        "name": "flexibleRollout",
        "parameters": {"rollout": str(w.rng.randint(0, 100)), "groupId": name},
        "constraints": [{"contextName": "userId", "operator": "IN", "values": [str(w.next())]}][
            : w.rng.randint(0, 1)
        ],
        "segments": w.rng.sample(w.segments, min(len(w.segments), w.rng.randint(0, 1))),
    }
    roll = w.rng.random()
    if mine and roll < 0.3:
        env, strategy_id = w.rng.choice(mine)
        await w.call("PUT", f"{base}/{strategy_id}", body)
    elif mine and roll < 0.45:
        env, strategy_id = w.rng.choice(mine)
        await w.call("DELETE", f"{base}/{strategy_id}")
        w.strategies[name].remove((env, strategy_id))
    else:
        added = await w.call("POST", base, body)
        if added and "id" in added:
            w.strategies.setdefault(name, []).append((env, added["id"]))
    w.touched += feature_paths(name, project)


async def switch(w: World) -> None:
    found = w.flag()
    if found is None:
        return
    name, project = found
    env, state = w.rng.choice(ENVIRONMENTS), w.rng.choice(["on", "off"])
    await w.call(
        "POST", f"/api/admin/projects/{project}/features/{name}/environments/{env}/{state}"
    )
    w.touched += feature_paths(name, project)


async def variants(w: World) -> None:
    found = w.flag()
    if found is None:
        return
    name, project = found
    names = w.rng.sample(["a", "b", "c"], w.rng.randint(0, 3))
    body = [
        {"name": v, "weightType": "variable", "weight": 0, "stickiness": "default"} for v in names
    ]
    path = f"/api/admin/projects/{project}/features/{name}/environments/development/variants"
    await w.call("PUT", path, body)
    w.touched += feature_paths(name, project)


async def tag(w: World) -> None:
    found = w.flag()
    if found is None:
        return
    name, project = found
    value = w.rng.choice(["alpha", "beta", "gamma"])
    if w.rng.random() < 0.6:
        await w.call("POST", f"/api/admin/features/{name}/tags", {"value": value})
    else:
        await w.call("DELETE", f"/api/admin/features/{name}/tags/simple/{value}")
    w.touched += feature_paths(name, project)


async def stale_archive_revive(w: World) -> None:
    roll = w.rng.random()
    if roll < 0.15 and w.archived:  # deleted for good: the name may be created again
        name = w.rng.choice(sorted(w.archived))
        project = w.flags[name]
        resp = await w.client.delete(f"/api/admin/archive/{name}", headers=ADMIN)
        assert resp.status in (200, 403), await resp.text()  # 403: a flag depends on it
        if resp.status == 200:
            del w.flags[name]
            w.archived.discard(name)
            w.strategies.pop(name, None)
    elif roll < 0.4 and w.archived:
        name = w.rng.choice(sorted(w.archived))
        project = w.flags[name]
        await w.call("POST", f"/api/admin/projects/{project}/revive", {"features": [name]})
        w.archived.discard(name)
    elif (found := w.flag()) is not None:
        name, project = found
        if roll < 0.7:
            body = {"features": [name], "stale": w.rng.random() < 0.5}
            await w.call("POST", f"/api/admin/projects/{project}/stale", body)
        else:
            await w.call("DELETE", f"/api/admin/projects/{project}/features/{name}")
            w.archived.add(name)
    else:
        return
    w.touched += feature_paths(name, project)


async def dependency(w: World) -> None:
    child, parent = w.flag(), w.flag()
    if child is None or parent is None or child[1] != parent[1] or child == parent:
        return
    base = f"/api/admin/projects/{child[1]}/features/{child[0]}/dependencies"
    if w.rng.random() < 0.6:
        await w.call("POST", base, {"feature": parent[0], "enabled": w.rng.random() < 0.5})
    else:
        await w.call("DELETE", f"{base}/{parent[0]}")
    w.touched += feature_paths(*child) + feature_paths(*parent)


async def segment(w: World) -> None:
    roll = w.rng.random()
    body = {"name": f"s{w.next()}", "constraints": []}
    if w.segments and roll < 0.3:
        segment_id = w.rng.choice(w.segments)
        await w.call("PUT", f"/api/admin/segments/{segment_id}", body)
    elif w.segments and roll < 0.45:
        segment_id = w.rng.choice(w.segments)
        resp = await w.client.delete(f"/api/admin/segments/{segment_id}", headers=ADMIN)
        if resp.status == 204:
            w.segments.remove(segment_id)
    else:
        created = await w.call("POST", "/api/admin/segments", body)
        segment_id = created["id"]
        w.segments.append(segment_id)
    w.touched += [f"/api/admin/segments/{segment_id}", "/api/admin/segments"]


async def project(w: World) -> None:
    w.touched += [
        "/api/admin/projects",
        "/api/admin/projects/p1/features",
        "/api/admin/environments",  # the projects each environment is enabled in
    ]
    if "p1" not in w.projects:
        await w.call("POST", "/api/admin/projects", {"id": "p1", "name": "P1"})
        w.projects.append("p1")
        return
    env = "production"
    if w.rng.random() < 0.5:
        await w.call("DELETE", f"/api/admin/projects/p1/environments/{env}")
    else:
        await w.call("POST", "/api/admin/projects/p1/environments", {"environment": env})


async def user(w: World) -> None:
    roll = w.rng.random()
    if w.users and roll < 0.3:
        user_id = w.rng.choice(w.users)
        body = {"name": f"N{w.next()}", "rootRole": w.rng.choice([1, 2, 3])}
        await w.call("PUT", f"/api/admin/user-admin/{user_id}", body)
    elif w.users and roll < 0.4:
        user_id = w.rng.choice(w.users)
        await w.call("DELETE", f"/api/admin/user-admin/{user_id}")
        w.users.remove(user_id)
    else:
        n = w.next()
        body = {"email": f"user{n}@example.com", "name": f"User {n}", "rootRole": 3}
        user_id = (await w.call("POST", "/api/admin/user-admin", body))["id"]
        w.users.append(user_id)
    w.touched += [
        f"/api/admin/user-admin/{user_id}",
        "/api/admin/user-admin",
        "/api/admin/user-admin/search?q=user",
    ]


async def service_account(w: World) -> None:
    roll = w.rng.random()
    body: dict[str, Any]
    if w.accounts and roll < 0.4:
        account_id = w.rng.choice(w.accounts)
        body = {"description": f"t{w.next()}", "expiresAt": in_days(30)}
        made = await w.call("POST", f"/api/admin/service-account/{account_id}/token", body)
        w.pats.setdefault(account_id, []).append(made["id"])
    elif w.pats and roll < 0.5:
        account_id = w.rng.choice(sorted(w.pats))
        if w.pats[account_id]:
            token_id = w.pats[account_id].pop()
            await w.call("DELETE", f"/api/admin/service-account/{account_id}/token/{token_id}")
    elif w.accounts and roll < 0.6:
        account_id = w.rng.choice(w.accounts)
        body = {"name": f"SA {w.next()}", "rootRole": w.rng.choice([1, 2, 3])}
        await w.call("PUT", f"/api/admin/service-account/{account_id}", body)
    elif w.accounts and roll < 0.65:
        account_id = w.rng.choice(w.accounts)
        await w.call("DELETE", f"/api/admin/service-account/{account_id}")
        w.accounts.remove(account_id)
        w.pats.pop(account_id, None)
    else:
        body = {"username": f"sa{w.next()}", "rootRole": 3}
        account_id = (await w.call("POST", "/api/admin/service-account", body))["id"]
        w.accounts.append(account_id)
    w.touched += [f"/api/admin/service-account/{account_id}/token", "/api/admin/service-account"]


async def api_token(w: World) -> None:
    if w.api_tokens and w.rng.random() < 0.3:
        token_id = w.api_tokens.pop(w.rng.randrange(len(w.api_tokens)))
        await w.call("DELETE", f"/api/admin/api-tokens/{token_id}")
    else:
        body = {"tokenName": f"t{w.next()}", "type": "client", "environment": "development"}
        w.api_tokens.append((await w.call("POST", "/api/admin/api-tokens", body))["id"])
    w.touched.append("/api/admin/api-tokens")


CHANGES_BY_WEIGHT: list[tuple[Callable[[World], Awaitable[None]], int]] = [
    (create_flag, 4),
    (clone_flag, 1),
    (strategy, 6),
    (switch, 3),
    (variants, 2),
    (tag, 3),
    (stale_archive_revive, 3),
    (dependency, 2),
    (segment, 2),
    (project, 1),
    (user, 3),
    (service_account, 3),
    (api_token, 1),
]
# Read at every instant, besides the paths the change touched: all of them live, and each of
# them asked again in the past at the instants of the changes that touched it and, in turn, at
# one other instant in ASKED_EVERY (a past read rebuilds the log up to the instant).
ASKED_EVERY = 3
ALWAYS = [
    "/api/admin/projects",
    "/api/admin/environments",
    "/api/admin/projects/default/features",
    "/api/admin/projects/p1/features",
    "/api/admin/archive/features",
    "/api/admin/segments",
    "/api/admin/user-admin",
    "/api/admin/user-admin/search?q=user",
    "/api/admin/service-account",
    "/api/admin/api-tokens",
]


# Whether some flag's stream holds a creation after a deletion.
RECREATED = """
SELECT EXISTS (SELECT 1 FROM events d JOIN events c USING (stream_type, stream_key)
               WHERE d.type = 'FeatureDeleted' AND c.type IN ('FeatureCreated', 'FeatureCloned')
                 AND c.position > d.position)
"""


@dataclass
class Moment:
    position: int
    time: datetime
    answers: dict[str, tuple[int, str]]
    touched: frozenset[str]


# A project's lastUpdatedAt comes from an async read model (its latest event), which a past
# read shows as last known (docs/behavior.md): it is no part of the past state compared here.
_LAST_UPDATED = re.compile(r'"lastUpdatedAt":("[^"]*"|null)')


async def answer(client: Client, path: str) -> tuple[int, str]:
    """Status and body; an error's body without its id (a new one every time)."""
    resp = await client.get(path, headers=ADMIN)
    if resp.status >= 400:
        body = await resp.json()
        return resp.status, f"{body['name']}: {body['message']}"
    return resp.status, _LAST_UPDATED.sub('"lastUpdatedAt":-', await resp.text())


@pytest.mark.timeout(400)  # more than the suite's 120 s: a slower machine needs the room
async def test_every_read_route_answers_at_a_past_instant_what_it_answered_then(
    client: Client, app: web.Application
) -> None:
    world = World(client, random.Random(14))
    moments: list[Moment] = []
    last = 0
    while len(moments) < CHANGES:
        change = world.rng.choices(*zip(*CHANGES_BY_WEIGHT, strict=True))[0]
        world.touched = []
        await change(world)
        moment = datetime.now(UTC)
        async with app[POOL].acquire() as conn:
            position = int(await conn.fetchval("SELECT position FROM log_head"))
        if position == last:
            continue  # refused, or nothing to change: no new instant
        last = position
        paths = ALWAYS + sorted(set(world.touched))
        answers = {p: await answer(client, p) for p in paths}
        moments.append(Moment(position, moment, answers, frozenset(world.touched)))
    asked = 0
    for number, then in enumerate(moments):
        at = str(then.position) if number % 2 else quote(then.time.isoformat())
        for path, expected in then.answers.items():
            turn = path not in ALWAYS or (ALWAYS.index(path) + number) % ASKED_EVERY == 0
            if not turn and path not in then.touched:
                continue
            joined = "&" if "?" in path else "?"
            assert await answer(client, f"{path}{joined}at={at}") == expected, (number, path)
            asked += 1
    assert asked > CHANGES * len(ALWAYS) // ASKED_EVERY
    # The answers changed all along: the test compared many different states.
    for path in ("/api/admin/projects/default/features", "/api/admin/user-admin"):
        assert len({m.answers[path] for m in moments}) > CHANGES // 10, path
    kinds = {re.sub(r"/(f|s)?[0-9]+", "/N", p) for m in moments for p in m.answers}
    assert len(kinds) >= len(ALWAYS) + 5  # flags, strategies, tags, segments, tokens too
    # Flags were deleted from the archive, and some names created again after that.
    async with app[POOL].acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM events WHERE type = 'FeatureDeleted'")
        assert await conn.fetchval(RECREATED)
    # The live read models were never touched, and still match a rebuild.
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_at_is_checked_and_only_read_routes_take_it(client: Client) -> None:
    flags = "/api/admin/projects/default/features"
    before = await answer(client, f"{flags}?at=0")
    assert before == (404, "NotFoundError: Project default does not exist")  # nothing yet
    message = await error(
        await client.get(f"{flags}?at=999999", headers=ADMIN), 400, "ValidationError"
    )
    assert message.startswith("Position 999999 is beyond the log's end")
    for bad in ("yesterday", "2026-11-24", "2026-11-24T10:00:00", "-1", "1" * 19):
        resp = await client.get(f"{flags}?at={quote(bad)}", headers=ADMIN)
        assert (await error(resp, 400, "ValidationError")).endswith("at `at`"), bad
    resp = await client.post(f"{flags}?at=1", json={"name": "x"}, headers=ADMIN)
    assert (
        await error(resp, 400, "ValidationError")
    ) == "This route has no past states to read - at `at`"
    resp = await client.get("/api/admin/user?at=1", headers=ADMIN)
    await error(resp, 400, "ValidationError")
    future = quote("2999-01-01T00:00:00+00:00")
    assert await answer(client, f"{flags}?at={future}") == await answer(client, flags)
    past = quote("2000-01-01T00:00:00Z")
    assert await answer(client, f"{flags}?at={past}") == before


async def test_a_past_read_leaves_the_connection_as_it_was(
    client: Client, app: web.Application
) -> None:
    """The temporary tables stay empty and last on the search path: later reads on the same
    connections see the live read models."""
    flags = "/api/admin/projects/default/features"
    await client.post(flags, json={"name": "one"}, headers=ADMIN)
    empty = await answer(client, f"{flags}?at=5")
    for _ in range(3 * app[POOL].get_max_size()):
        assert await answer(client, f"{flags}?at=5") == empty
        assert '"one"' in (await answer(client, flags))[1]
    async with app[POOL].acquire() as conn:
        path = await conn.fetchval("SHOW search_path")
        assert path.endswith("pg_temp")
