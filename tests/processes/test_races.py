"""No race answers 500: 12 concurrent requests with the same name or key to every route that
creates something unique get exactly one success and a 409 for every other, and the log still
verifies afterwards."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from eventlog import connections
from projections.replay import replay
from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, FEATURES, STRONG, create_user, flag, in_days

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

CONCURRENT = 12
PAT_CREATED = "PersonalAccessTokenCreated"
COUNT = "SELECT count(*) FROM events WHERE type = $1"


@dataclass(frozen=True)
class Race:
    """Requests (method, path, body), one per racer, and the status of the one that wins."""

    method: str
    path: str
    bodies: list[Any]
    success: int
    headers: dict[str, str]
    created: str  # the type of the one event the winner appends


def same(body: Any) -> list[Any]:
    return [body] * CONCURRENT


async def run(client: Client, race: Race) -> Counter[int]:
    async def one(body: Any) -> int:
        resp = await client.request(race.method, race.path, json=body, headers=race.headers)
        await resp.read()
        return resp.status

    return Counter(await asyncio.gather(*(one(body) for body in race.bodies)))


async def projects(_client: Client) -> Race:
    body = {"id": "race", "name": "Race"}
    return Race("POST", "/api/admin/projects", same(body), 201, ADMIN, "ProjectCreated")


async def environments(_client: Client) -> Race:
    body = {"name": "race-env", "type": "test"}
    return Race("POST", "/api/admin/environments", same(body), 201, ADMIN, "EnvironmentCreated")


async def flags(_client: Client) -> Race:
    path = "/api/admin/projects/default/features"
    return Race("POST", path, same({"name": "race-flag"}), 200, ADMIN, "FeatureCreated")


async def clone_targets(client: Client) -> Race:
    await flag(client, "race-source")
    path = "/api/admin/projects/default/features/race-source/clone"
    return Race("POST", path, same({"name": "race-copy"}), 200, ADMIN, "FeatureCloned")


async def segments(_client: Client) -> Race:
    body = {"name": "race-segment", "constraints": []}
    return Race("POST", "/api/admin/segments", same(body), 201, ADMIN, "SegmentCreated")


async def tags(client: Client) -> Race:
    await flag(client, "race-tagged")
    path = "/api/admin/features/race-tagged/tags"
    body = {"type": "simple", "value": "race"}
    return Race("POST", path, same(body), 201, ADMIN, "FeatureTagged")


async def dependencies(client: Client) -> Race:
    await flag(client, "race-parent")
    await flag(client, "race-child")
    path = "/api/admin/projects/default/features/race-child/dependencies"
    return Race("POST", path, same({"feature": "race-parent"}), 200, ADMIN, "DependencyAdded")


async def users_by_email(_client: Client) -> Race:
    # The same address in different cases: e-mails are unique in any case.
    bodies = [
        {"email": f"{'Race' if i % 2 else 'race'}@Example.com", "rootRole": 3}
        for i in range(CONCURRENT)
    ]
    return Race("POST", "/api/admin/user-admin", bodies, 201, ADMIN, "UserCreated")


async def users_by_username(_client: Client) -> Race:
    body = {"username": "race-user", "rootRole": 3}
    return Race("POST", "/api/admin/user-admin", same(body), 201, ADMIN, "UserCreated")


async def service_accounts(_client: Client) -> Race:
    body = {"username": "race-account", "rootRole": 3}
    return Race(
        "POST", "/api/admin/service-account", same(body), 201, ADMIN, "ServiceAccountCreated"
    )


async def own_tokens(client: Client) -> Race:
    await create_user(client, {"username": "racer", "password": STRONG, "rootRole": 3})
    resp = await client.post("/auth/simple/login", json={"username": "racer", "password": STRONG})
    assert resp.status == 200, await resp.text()
    cookie = resp.cookies["unleash-session"].value
    body = {"description": "race", "expiresAt": in_days(1)}
    headers = {"Cookie": f"unleash-session={cookie}"}
    return Race("POST", "/api/admin/user/tokens", same(body), 201, headers, PAT_CREATED)


async def service_account_tokens(client: Client) -> Race:
    resp = await client.post(
        "/api/admin/service-account",
        json={"username": "token-racer", "rootRole": 3},
        headers=ADMIN,
    )
    account = (await resp.json())["id"]
    body = {"description": "race", "expiresAt": in_days(1)}
    path = f"/api/admin/service-account/{account}/token"
    return Race("POST", path, same(body), 201, ADMIN, PAT_CREATED)


async def strategy_types(_client: Client) -> Race:
    body = {"name": "race-type", "parameters": []}
    created = "StrategyDefinitionCreated"
    return Race("POST", "/api/admin/strategies", same(body), 201, ADMIN, created)


async def context_fields(_client: Client) -> Race:
    body = {"name": "race-field"}
    return Race("POST", "/api/admin/context", same(body), 201, ADMIN, "ContextFieldCreated")


RACES: dict[str, Callable[[Client], Awaitable[Race]]] = {
    "projects": projects,
    "environments": environments,
    "flags": flags,
    "clone targets": clone_targets,
    "segments": segments,
    "tags on a flag": tags,
    "dependencies": dependencies,
    "users by e-mail": users_by_email,
    "users by username": users_by_username,
    "service accounts": service_accounts,
    "own personal access tokens": own_tokens,
    "service-account tokens": service_account_tokens,
    "strategy types": strategy_types,
    "context fields": context_fields,
}


@pytest.mark.parametrize("route", list(RACES))
async def test_concurrent_creates_of_one_key_give_one_success_and_409s(
    client: Client, app: web.Application, route: str
) -> None:
    race = await RACES[route](client)
    before = await app[POOL].fetchval(COUNT, race.created)
    statuses = await run(client, race)
    assert statuses == Counter({race.success: 1, 409: CONCURRENT - 1}), (route, statuses)
    async with app[POOL].acquire() as conn:
        assert await conn.fetchval(COUNT, race.created) == before + 1
        report = await verify(conn)
    assert report.ok, report.lines()


async def test_replay_under_writes_never_fails_a_request(
    client: Client, app: web.Application, dsn: str
) -> None:
    """Writers touch read-model tables in their own order (a create reads `projects`, then
    `environments`...); the swap of a replay locks them all. The swap must be the one that
    yields: no write may fail with a deadlock while replays run."""
    stop = asyncio.Event()
    statuses: list[int] = []

    async def writer(n: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            name = f"w{n}-{i}"
            resp = await client.post(FEATURES, json={"name": name}, headers=ADMIN)
            statuses.append(resp.status)
            path = f"{FEATURES}/{name}/environments/development/strategies"
            resp = await client.post(path, json={"name": "default"}, headers=ADMIN)
            statuses.append(resp.status)
            resp = await client.post(
                "/api/admin/segments", json={"name": name, "constraints": []}, headers=ADMIN
            )
            statuses.append(resp.status)

    writers = [asyncio.create_task(writer(n)) for n in range(4)]
    replayer = await connections.connect(dsn)
    try:
        for _ in range(6):
            await asyncio.sleep(0.1)
            await replay(replayer)
    finally:
        stop.set()
        await asyncio.gather(*writers)
        await replayer.close()
    assert statuses
    assert {s for s in statuses if s >= 300} == set()
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok
