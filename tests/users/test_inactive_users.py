"""Deleting inactive users (docs/behavior.md, delete inactive users), and their list."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

from projections.verify import verify
from service.appkeys import POOL
from service.users.deletions import DELETIONS, LANES
from tests import factories
from tests.factories import (
    ADMIN,
    INACTIVE,
    STRONG,
    USERS,
    ago,
    create_user,
    error,
    event_count,
    person,
    sign_in,
)
from tests.factories import DELETE_INACTIVE as DELETE

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]


async def inactive_ids(client: Client) -> list[int]:
    body = await (await client.get(INACTIVE, headers=ADMIN)).json()
    return [u["id"] for u in body["inactiveUsers"]]


async def test_the_inactive_definition_at_its_edges(client: Client, app: web.Application) -> None:
    cases = {
        "seen 181 days ago": (await person(app, seen=181), True),
        "seen 180 days and a minute ago": (await person(app, seen=180 + 1 / 1440), True),
        "seen 179 days ago": (await person(app, seen=179), False),
        "seen 180 days less a minute ago": (await person(app, seen=180 - 1 / 1440), False),
        "never seen, created 181 days ago": (await person(app), True),
        "never seen, created 179 days ago": (await person(app, created=179), False),
        "old, token used 10 days ago": (await person(app, seen=300, token_seen=10), False),
        "old, token used 200 days ago": (await person(app, seen=300, token_seen=200), True),
        "old, token never used (even a fresh one)": (await person(app, seen=300), True),
        "service account, never seen": (await person(app, service=True), False),
    }
    listed = await inactive_ids(client)
    for what, (account, inactive) in cases.items():
        assert (account.id in listed) == inactive, what
    assert listed == sorted(listed)  # each once, by id
    body = await (await client.get(INACTIVE, headers=ADMIN)).json()
    entry = next(
        u for u in body["inactiveUsers"] if u["id"] == cases["old, token used 200 days ago"][0].id
    )
    assert set(entry) == {"id", "name", "email", "username", "seenAt", "createdAt", "patSeenAt"}
    assert entry["patSeenAt"] is not None
    assert body["version"] == 1


async def test_delete_removes_exactly_the_inactive_ones_listed(
    client: Client, app: web.Application
) -> None:
    old = [await person(app, seen=300) for _ in range(3)]
    active = await person(app, seen=1)
    machine = await person(app, service=True)
    unlisted = await person(app, seen=300)
    ids = [old[0].id, old[1].id, old[1].id, active.id, machine.id, 999_999, old[2].id]
    resp = await client.post(DELETE, json={"ids": ids}, headers=ADMIN)
    assert (resp.status, await resp.read()) == (200, b"")
    assert await inactive_ids(client) == [unlisted.id]
    remaining = [u["id"] for u in (await (await client.get(USERS, headers=ADMIN)).json())["users"]]
    assert remaining == sorted([active.id, unlisted.id])
    # Their tokens stop at once; the others' still work.
    for account in old:
        await error(
            await client.get("/api/admin/projects", headers=account.headers),
            401,
            "AuthenticationRequired",
        )
    assert (await client.get("/api/admin/projects", headers=active.headers)).status == 200
    assert (await client.get("/api/admin/projects", headers=machine.headers)).status == 200
    # One event, with each deleted user's record.
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch("SELECT data FROM events WHERE type = 'UsersDeleted'")
        assert (await verify(conn)).ok
    assert len(rows) == 1
    data = json.loads(rows[0]["data"])
    assert [u["user_id"] for u in data["users"]] == [a.id for a in old]
    assert data["inactive_days"] == 180
    # Nothing inactive listed: 200, no event.
    resp = await client.post(DELETE, json={"ids": [active.id, 123456]}, headers=ADMIN)
    assert resp.status == 200
    assert await event_count(app, "UsersDeleted") == 1


async def test_the_caller_is_never_deleted(client: Client, app: web.Application) -> None:
    caller = await person(app, seen=300)
    async with app[POOL].acquire() as conn:
        await conn.execute("UPDATE users SET root_role = 1 WHERE id = $1", caller.id)
    resp = await client.post(DELETE, json={"ids": [caller.id]}, headers=caller.headers)
    assert resp.status == 200
    assert caller.id in await inactive_ids(client)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"ids": "1"},
        {"ids": [1, "2"]},
        {"ids": [-1]},
        {"ids": [1.5]},
        {"ids": [True]},
        {"ids": [1], "extra": 1},
        {"ids": list(range(10_001))},
        [1, 2],
    ],
)
async def test_bad_bodies_are_400_and_delete_nothing(
    client: Client, app: web.Application, body: Any
) -> None:
    victim = await person(app, seen=300)
    resp = await client.post(DELETE, json=body, headers=ADMIN)
    await error(resp, 400, "ValidationError")
    assert victim.id in await inactive_ids(client)


async def test_only_admins_list_or_delete(client: Client, app: web.Application) -> None:
    editor = await person(app, seen=1)
    async with app[POOL].acquire() as conn:
        await conn.execute("UPDATE users SET root_role = 2 WHERE id = $1", editor.id)
    await error(await client.get(INACTIVE, headers=editor.headers), 403, "NoAccessError")
    resp = await client.post(DELETE, json={"ids": [1]}, headers=editor.headers)
    await error(resp, 403, "NoAccessError")
    await error(await client.post(DELETE, json={"ids": [1]}), 401, "AuthenticationRequired")
    resp = await client.post(DELETE, data="ids=1", headers={**ADMIN, "Content-Type": "text/plain"})
    await error(resp, 415, "ContentTypeerror")


async def test_a_user_who_signs_in_during_the_delete_survives(
    client: Client, app: web.Application
) -> None:
    """The sign-in holds the user's row while it commits; the delete's row lock waits for it
    and then sees a user who is no longer inactive."""
    user = await create_user(client, {"username": "sleeper", "password": STRONG})
    async with app[POOL].acquire() as conn:
        await conn.execute(
            "UPDATE users SET created_at = $2, seen_at = $2 WHERE id = $1", user["id"], ago(300)
        )
    assert user["id"] in await inactive_ids(client)
    async with app[POOL].acquire() as blocker, blocker.transaction():
        await blocker.execute("SELECT 1 FROM users WHERE id = $1 FOR UPDATE", user["id"])
        signing_in = asyncio.ensure_future(sign_in(client, "sleeper"))
        await lanes_blocked(app, 1)  # the sign-in (its password checked) waits for the row
        deleting = asyncio.ensure_future(
            client.post(DELETE, json={"ids": [user["id"]]}, headers=ADMIN)
        )
        await lanes_blocked(app, 2)  # and the delete behind it
    resp, _ = await signing_in
    assert resp.status == 200
    assert (await deleting).status == 200
    assert (await client.get(f"{USERS}/{user['id']}", headers=ADMIN)).status == 200
    assert await event_count(app, "UsersDeleted") == 0


async def test_ten_thousand_ids_in_one_request(client: Client, app: web.Application) -> None:
    async with app[POOL].acquire() as conn:
        for _ in range(20):
            await factories.account(conn, created_at=ago(400))
    ids = list(range(10_000))
    resp = await client.post(DELETE, json={"ids": ids}, headers=ADMIN)
    assert resp.status == 200
    assert await inactive_ids(client) == []


async def lanes_blocked(app: web.Application, lanes: int) -> None:
    """Waits until this many sessions (lanes of deletions) wait for a row lock. (Fixed sleeps
    let the test depend on timing: two requests that come in the same turn go into one lane's
    batch, leaving the other lane free for the next request alone.) Asked on a
    connection of its own: in a transaction pg_stat_activity stays as first read."""
    for _ in range(400):
        locked = await app[POOL].fetchval(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        if locked == lanes:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"{locked} of {lanes} lanes wait for the lock after 10 s")


async def both_lanes_blocked(app: web.Application, delete: Callable[[str], object]) -> list[Any]:
    """One deletion a lane, each waiting for a row lock held by the test (`delete(request_id)`
    sends one that waits)."""
    first = []
    for lane in range(1, LANES + 1):
        first.append(delete(f"lane-{lane}"))
        await lanes_blocked(app, lane)
    return first


async def queued(app: web.Application, count: int) -> None:
    """Waits until `count` deletions wait for a lane (service/batches.py)."""
    for _ in range(400):
        if app[DELETIONS].waiting == count:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"{app[DELETIONS].waiting} of {count} deletions wait after 10 s")


async def test_concurrent_deletions_commit_together_each_as_if_alone(
    client: Client, app: web.Application
) -> None:
    """Group commit (service/batches.py): deletions that wait while both lanes are busy run in
    one transaction, each with its own event and request id, each taking what it would have
    taken had they run one after another (a user listed twice goes to the first; a caller is
    never deleted: domain.split_inactive, test_decide_users)."""
    u1, u2, u3, u4, u5 = [await person(app, seen=300) for _ in range(5)]

    def delete(ids: list[int], request_id: str) -> Any:
        headers = {**ADMIN, "X-Request-Id": request_id}
        return asyncio.ensure_future(client.post(DELETE, json={"ids": ids}, headers=headers))

    async with app[POOL].acquire() as blocker, blocker.transaction():
        await blocker.execute("SELECT 1 FROM users WHERE id = $1 FOR UPDATE", u1.id)
        first = await both_lanes_blocked(app, lambda request: delete([u1.id], request))
        waiting = {"b": delete([u2.id, u3.id], "b"), "c": delete([u3.id, u4.id, u5.id], "c")}
        waiting["d"] = delete([u4.id], "d")
        await queued(app, 3)
    for answer in [*first, *waiting.values()]:
        assert (await answer).status == 200
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT xmin::text AS tx, metadata->>'request_id' AS request, data"
            " FROM events WHERE type = 'UsersDeleted' ORDER BY position"
        )
        assert (await verify(conn)).ok
    taken = {r["request"]: [u["user_id"] for u in json.loads(r["data"])["users"]] for r in rows}
    assert len(rows) == len(taken)  # one event a request that deleted anybody
    assert sorted(i for ids in taken.values() for i in ids) == [u1.id, u2.id, u3.id, u4.id, u5.id]
    together = [r["request"] for r in rows if r["request"] in waiting]
    assert len({r["tx"] for r in rows if r["request"] in waiting}) == 1, together
    # In the order they ran (their events' positions): u3 is the first's of b and c, u4 the
    # first's of c and d, whoever came first; d may be left with nothing.
    order = [name for name in ["b", "c", "d"] if name in taken]
    ran = sorted(order, key=together.index)
    assert u3.id in taken[next(n for n in ran if n in {"b", "c"})]
    if "d" in taken:
        assert taken["d"] == [u4.id]
        assert ran.index("d") < ran.index("c")
    else:
        assert u4.id in taken["c"]
    assert taken["b"][0] == u2.id
    assert u5.id in taken["c"]
    assert await inactive_ids(client) == []


async def test_deletions_listing_many_ids_do_not_commit_together(
    client: Client, app: web.Application
) -> None:
    """A transaction of several lists 1,000 ids at most (deletions.BATCH_IDS): large requests
    that wait together still run one by one (each alone stays well within the statement
    timeout; sixteen of 10,000 ids together would run into it)."""
    blocked, u1, u2 = [await person(app, seen=300) for _ in range(3)]

    def delete(ids: list[int], request_id: str) -> Any:
        headers = {**ADMIN, "X-Request-Id": request_id}
        return asyncio.ensure_future(client.post(DELETE, json={"ids": ids}, headers=headers))

    unknown = list(range(10**8, 10**8 + 600))
    async with app[POOL].acquire() as blocker, blocker.transaction():
        await blocker.execute("SELECT 1 FROM users WHERE id = $1 FOR UPDATE", blocked.id)
        first = await both_lanes_blocked(app, lambda request: delete([blocked.id], request))
        large = [delete([u1.id, *unknown], "large-1"), delete([u2.id, *unknown], "large-2")]
        await queued(app, 2)
    for answer in [*first, *large]:
        assert (await answer).status == 200
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT xmin::text AS tx FROM events WHERE type = 'UsersDeleted'"
            " AND metadata->>'request_id' LIKE 'large-%'"
        )
    assert len(rows) == 2
    assert rows[0]["tx"] != rows[1]["tx"]
