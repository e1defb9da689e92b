"""The flag table, GET /api/admin/search/features (docs/behavior.md, "The flag table"): what
each flag shows, Unleash's filter operators, sorting, paging, favourites first; a filter that
does not parse is a 400, whatever it holds (hypothesis), never a 500."""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.app import create_app
from service.appkeys import POOL
from service.search.handlers import TOTALS
from tests.factories import ADMIN, ISO, error, flag, gravatar, make_account, ok, settings_for

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from tests.conftest import AiohttpClient

    Client = TestClient[Any, Any]

SEARCH = "/api/admin/search/features"
FLAGS = "/api/admin/projects/{project}/features/{name}"


async def names(client: Client, query: str, headers: dict[str, str] = ADMIN) -> list[str]:
    found = await ok(await client.get(f"{SEARCH}?{query}", headers=headers))
    return [f["name"] for f in found["features"]]


async def post(client: Client, path: str, body: Any = None, status: int = 200) -> Any:
    return await ok(await client.post(path, json=body, headers=ADMIN), status)


async def test_a_flag_shows_what_the_table_needs(client: Client, app: web.Application) -> None:
    """Environments (with their switches, strategies and variants), segments, tags, the
    creator, the dependency, the lifecycle and the favourite, in Unleash's shape."""
    person = await make_account(app, role=2, email="ada@example.com")
    await ok(
        await client.post(
            "/api/admin/projects/default/features",
            json={"name": "checkout", "type": "experiment", "description": "Pay"},
            headers=person.headers,
        )
    )
    await flag(client, "child")
    segment = await post(client, "/api/admin/segments", {"name": "beta", "constraints": []}, 201)
    flag_path = FLAGS.format(project="default", name="checkout")
    await post(
        client,
        f"{flag_path}/environments/production/strategies",
        {"name": "default", "segments": [segment["id"]], "disabled": True},
    )
    await post(client, f"{flag_path}/environments/development/strategies", {"name": "default"})
    await post(client, f"{flag_path}/environments/development/on")
    variant = {"name": "a", "weight": 1000, "weightType": "variable", "stickiness": "default"}
    resp = await client.put(
        f"{flag_path}/environments/development/variants", json=[variant], headers=ADMIN
    )
    await ok(resp)
    await post(client, "/api/admin/features/checkout/tags", {"type": "simple", "value": "pay"}, 201)
    await post(
        client,
        FLAGS.format(project="default", name="child") + "/dependencies",
        {"feature": "checkout"},
    )
    await ok(
        await client.post(
            "/api/admin/projects/default/features/checkout/favorites", headers=person.headers
        )
    )
    found = await ok(await client.get(f"{SEARCH}?query=check", headers=person.headers))
    feature = found["features"][0]
    created = feature["createdAt"]
    assert ISO.match(created)
    # switched on in development: `pre-live` since then, as the flag's own lifecycle says
    (enabled,) = [
        s
        for s in await ok(await client.get(f"{flag_path}/lifecycle", headers=ADMIN))
        if s["stage"] == "pre-live"
    ]
    assert enabled["enteredStageAt"] > created
    assert found == {
        "features": [
            {
                "type": "experiment",
                "description": "Pay",
                "project": "default",
                "favorite": True,
                "name": "checkout",
                "createdAt": created,
                "stale": False,
                "potentiallyStale": False,
                "archivedAt": None,
                "impressionData": False,
                "lastSeenAt": None,
                "dependencyType": "parent",
                "environments": [
                    {
                        "name": "development",
                        "enabled": True,
                        "type": "development",
                        "sortOrder": 2,
                        "variantCount": 1,
                        "lastSeenAt": None,
                        "hasStrategies": True,
                        "hasEnabledStrategies": True,
                        "yes": 0,
                        "no": 0,
                        "changeRequestIds": [],
                    },
                    {
                        "name": "production",
                        "enabled": False,
                        "type": "production",
                        "sortOrder": 3,
                        "variantCount": 0,
                        "lastSeenAt": None,
                        "hasStrategies": True,
                        "hasEnabledStrategies": False,
                        "yes": 0,
                        "no": 0,
                        "changeRequestIds": [],
                    },
                ],
                "segments": ["beta"],
                "createdBy": {
                    "id": person.id,
                    "name": f"user-{person.id}",
                    "imageUrl": gravatar("ada@example.com"),
                },
                "lifecycle": enabled,
                "tags": [{"value": "pay", "type": "simple"}],
            }
        ],
        "total": 1,
    }
    child = (await ok(await client.get(f"{SEARCH}?query=child", headers=ADMIN)))["features"][0]
    assert (child["dependencyType"], child["favorite"], child["createdBy"]) == (
        "child",
        False,
        {
            "id": -42,
            "name": "Unleash Admin Token User",
            "imageUrl": gravatar("unleash admin token user"),
        },
    )


async def test_the_creator_is_unknown_once_their_account_is_gone(
    client: Client, app: web.Application
) -> None:
    person = await make_account(app, role=2)
    resp = await client.post(
        "/api/admin/projects/default/features", json={"name": "orphan"}, headers=person.headers
    )
    await ok(resp)
    await ok(await client.delete(f"/api/admin/user-admin/{person.id}", headers=ADMIN))
    found = await ok(await client.get(SEARCH, headers=ADMIN))
    assert found["features"][0]["createdBy"] == {
        "id": 0,
        "name": "unknown",
        "imageUrl": gravatar("unknown"),
    }


async def many(client: Client) -> None:
    """Five flags in two projects, in creation order a, b, c (shop), d, e."""
    await ok(
        await client.post(
            "/api/admin/projects", json={"id": "shop", "name": "Shop"}, headers=ADMIN
        ),
        201,
    )
    await flag(client, "a", type="release", description="the First")
    await flag(client, "b", type="experiment")
    await flag(client, "c", "shop", type="kill-switch")
    await flag(client, "d", type="release", description="50% off")
    await flag(client, "e", type="operational")


async def test_filters_pick_flags_by_unleash_operators(
    client: Client, app: web.Application
) -> None:
    await many(client)
    await post(client, "/api/admin/features/a/tags", {"type": "simple", "value": "xx"}, 201)
    await post(client, "/api/admin/features/a/tags", {"type": "simple", "value": "yy"}, 201)
    await post(client, "/api/admin/features/b/tags", {"type": "simple", "value": "xx"}, 201)
    segment = await post(client, "/api/admin/segments", {"name": "beta", "constraints": []}, 201)
    strategies = FLAGS.format(project="default", name="d") + "/environments/development/strategies"
    await post(client, strategies, {"name": "default", "segments": [segment["id"]]})
    await post(client, FLAGS.format(project="default", name="d") + "/environments/development/on")
    await post(client, "/api/admin/projects/default/stale", {"features": ["e"], "stale": True}, 202)
    person = await make_account(app, role=2)
    resp = await client.post(
        "/api/admin/projects/default/features", json={"name": "f"}, headers=person.headers
    )
    await ok(resp)
    cases = {
        "": ["a", "b", "c", "d", "e", "f"],
        "project=IS:default": ["a", "b", "d", "e", "f"],
        "project=IS_NOT:default": ["c"],
        "project=IS_ANY_OF:shop,default": ["a", "b", "c", "d", "e", "f"],
        "project=IS_NONE_OF:shop,nowhere": ["a", "b", "d", "e", "f"],
        "type=IS:release": ["a", "d", "f"],
        "type=IS_ANY_OF:experiment,%20kill-switch": ["b", "c"],
        "type=IS_NONE_OF:release,experiment": ["c", "e"],
        "tag=INCLUDE:simple:xx": ["a", "b"],
        "tag=INCLUDE_ANY_OF:simple:yy,simple:zz": ["a"],
        "tag=INCLUDE_ALL_OF:simple:xx,simple:yy": ["a"],
        "tag=DO_NOT_INCLUDE:simple:xx": ["c", "d", "e", "f"],
        "tag=EXCLUDE_IF_ANY_OF:simple:yy,simple:zz": ["b", "c", "d", "e", "f"],
        "tag=EXCLUDE_ALL:simple:xx,simple:yy": ["b", "c", "d", "e", "f"],
        "segment=INCLUDE:beta": ["d"],
        "segment=DO_NOT_INCLUDE:beta": ["a", "b", "c", "e", "f"],
        "segment=INCLUDE_ALL_OF:beta,gamma": [],
        "state=IS:stale": ["e"],
        "state=IS:active": ["a", "b", "c", "d", "f"],
        "state=IS_NOT:active": ["e"],
        "state=IS:potentially-stale": [],
        "state=IS_ANY_OF:stale,potentially-stale": ["e"],
        "state=IS_NONE_OF:active,stale": [],
        "status=development:enabled": ["d"],
        "status=development:disabled&status=production:enabled": ["a", "b", "c", "e", "f"],
        "status=staging:enabled": [],
        f"createdBy=IS:{person.id}": ["f"],
        "createdBy=IS:-42": ["a", "b", "c", "d", "e"],
        f"createdBy=IS_NOT:{person.id}": ["a", "b", "c", "d", "e"],
        "lifecycle=IS:initial": ["a", "b", "c", "e", "f"],
        "lifecycle=IS_NOT:initial": ["d"],  # switched on in development: pre-live
        "lifecycle=IS:pre-live": ["d"],
        "lifecycle=IS:live": [],
        "createdAt=IS_BEFORE:2000-01-01": [],
        "createdAt=IS_ON_OR_AFTER:2000-01-01": ["a", "b", "c", "d", "e", "f"],
        "lastSeenAt=IS_ON_OR_AFTER:2000-01-01": [],
        "query=first": ["a"],
        "query=FIRST,%20e": ["a", "e"],
        "query=%25": ["d"],  # % is a plain character
        "query=_": [],
        "type=IS:": ["a", "b", "c", "d", "e", "f"],  # no value after the operator: no filter
        "project=IS:default&type=IS:release&tag=INCLUDE:simple:xx": ["a"],
    }
    for query, expected in cases.items():
        assert await names(client, query) == expected, query
    await ok(await client.delete(FLAGS.format(project="default", name="b"), headers=ADMIN), 202)
    assert await names(client, "archived=IS:true") == ["b"]
    assert await names(client, "archived=IS:false&project=IS:default") == ["a", "d", "e", "f"]


async def test_sorting_and_paging(client: Client, app: web.Application) -> None:
    await many(client)
    await post(client, FLAGS.format(project="default", name="d") + "/environments/production/on")
    await post(client, "/api/admin/projects/default/stale", {"features": ["a"], "stale": True}, 202)
    cases = {
        "": ["a", "b", "c", "d", "e"],
        "sortOrder=desc": ["e", "d", "c", "b", "a"],
        "sortBy=name&sortOrder=desc": ["e", "d", "c", "b", "a"],
        "sortBy=type": ["b", "c", "e", "a", "d"],
        "sortBy=type&sortOrder=desc": ["a", "d", "e", "c", "b"],
        "sortBy=stale&sortOrder=desc": ["a", "b", "c", "d", "e"],
        "sortBy=project&sortOrder=desc": ["c", "a", "b", "d", "e"],
        # Enabled there first (desc), flags of projects without it last either way.
        "sortBy=environment:production&sortOrder=desc": ["d", "a", "b", "c", "e"],
        "sortBy=environment:production": ["a", "b", "c", "e", "d"],
        "sortBy=environment:staging": ["a", "b", "c", "d", "e"],
        "sortBy=lastSeenAt&sortOrder=desc": ["a", "b", "c", "d", "e"],
        "sortBy=createdBy": ["a", "b", "c", "d", "e"],  # no order of its own: creation
        "limit=2": ["a", "b"],
        "limit=2&offset=2": ["c", "d"],
        "limit=2&offset=4": ["e"],
        "offset=9": [],
        "limit=2&offset=1&sortOrder=desc": ["d", "c"],
    }
    for query, expected in cases.items():
        assert await names(client, query) == expected, query
    paged = await ok(await client.get(f"{SEARCH}?limit=1&offset=3", headers=ADMIN))
    assert (paged["total"], [f["name"] for f in paged["features"]]) == (5, ["d"])
    for limit in ("1000", ""):
        found = await ok(await client.get(f"{SEARCH}?limit={limit}", headers=ADMIN))
        assert len(found["features"]) == len(cases[""])


async def test_at_most_a_hundred_flags_a_page(client: Client, app: web.Application) -> None:
    """Unleash gives its default page of 50 for a limit above 100; ours gives 100."""
    async with app[POOL].acquire() as conn:
        for i in range(105):
            await conn.execute(
                "INSERT INTO features (name, project, type, impression_data, created_at, "
                "lifecycle_stage, lifecycle_entered_at) "
                "VALUES ($1, 'default', 'release', false, now(), 'initial', now())",
                f"bulk-{i:03d}",
            )
    found = await ok(await client.get(f"{SEARCH}?limit=500", headers=ADMIN))
    assert (len(found["features"]), found["total"]) == (100, 105)
    found = await ok(await client.get(SEARCH, headers=ADMIN))
    assert len(found["features"]) == 50


async def test_favourites_first(client: Client, app: web.Application) -> None:
    await many(client)
    person = await make_account(app, role=3)
    for name, project in (("d", "default"), ("b", "default"), ("c", "shop")):
        path = FLAGS.format(project=project, name=name) + "/favorites"
        await ok(await client.post(path, headers=person.headers))
    cases = {
        "favoritesFirst=true": ["b", "c", "d", "a", "e"],
        "favoritesFirst=true&sortOrder=desc": ["d", "c", "b", "e", "a"],
        "favoritesFirst=true&limit=2&offset=2": ["d", "a"],
        "favoritesFirst=true&limit=2&offset=3": ["a", "e"],
        "favoritesFirst=true&project=IS:default&sortBy=name&sortOrder=desc": ["d", "b", "e", "a"],
        "favoritesFirst=false": ["a", "b", "c", "d", "e"],
    }
    for query, expected in cases.items():
        assert await names(client, query, person.headers) == expected, query
    # An API token has no favourites: the order is the plain one.
    assert await names(client, "favoritesFirst=true", ADMIN) == ["a", "b", "c", "d", "e"]


async def test_filters_that_do_not_parse_are_400(client: Client) -> None:
    for query, field in [
        ("type=release", "type"),
        ("project=LIKE:default", "project"),
        ("tag=INCLUDE:simple", "tag"),
        ("tag=IS:simple:x", "tag"),
        ("createdBy=IS:abc", "createdBy"),
        ("createdBy=IS:99999999999", "createdBy"),
        ("state=IS:bogus", "state"),
        ("lifecycle=IS:gone", "lifecycle"),
        ("createdAt=IS:2026-01-01", "createdAt"),
        ("createdAt=IS_BEFORE:2026-13-01", "createdAt"),
        ("createdAt=IS_BEFORE:yesterday", "createdAt"),
        ("status=development:on", "status"),
        ("status=enabled", "status"),
        ("archived=yes", "archived"),
        ("favoritesFirst=maybe", "favoritesFirst"),
        ("sortOrder=up", "sortOrder"),
        ("limit=0", "limit"),
        ("limit=x", "limit"),
        ("offset=-1", "offset"),
        ("query=a%00b", "query"),
        ("type=IS:a,b&type=IS:c", "type"),
    ]:
        message = await error(
            await client.get(f"{SEARCH}?{query}", headers=ADMIN), 400, "ValidationError"
        )
        assert message.endswith(f"at `{field}`"), (query, message)


# fmt: off
FIELDS = ("project", "type", "createdBy", "state", "lifecycle", "tag", "segment", "createdAt",
          "lastSeenAt", "status", "archived", "sortBy", "sortOrder", "query", "favoritesFirst")
# fmt: on
OPERATORS = (
    "IS",
    "IS_NOT",
    "IS_ANY_OF",
    "IS_NONE_OF",
    "INCLUDE",
    "DO_NOT_INCLUDE",
    "INCLUDE_ALL_OF",
    "INCLUDE_ANY_OF",
    "EXCLUDE_IF_ANY_OF",
    "EXCLUDE_ALL",
    "IS_BEFORE",
    "IS_ON_OR_AFTER",
    "",
)  # fmt: skip
pieces = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["release", "simple:xx", "stale", "-42", "7", "2026-01-01", "a:b:c",
                     "development:enabled", "environment:production", "%", "_", "\\"]),
)  # fmt: skip
values = st.builds(
    lambda op, items: (f"{op}:" if op else "") + ",".join(items),
    st.sampled_from(OPERATORS),
    st.lists(pieces, max_size=4),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(params=st.lists(st.tuples(st.sampled_from(FIELDS), values), max_size=4))
async def test_any_filter_is_an_answer_or_a_400(
    client: Client, params: list[tuple[str, str]]
) -> None:
    resp = await client.get(f"{SEARCH}?{urllib.parse.urlencode(params)}", headers=ADMIN)
    if resp.status == 400:
        await error(resp, 400, "ValidationError")
    else:
        body = await ok(resp, 200)
        assert set(body) == {"features", "total"}


async def test_a_total_is_counted_again_only_once_the_log_moved(
    client: Client, app: web.Application, aiohttp_client: AiohttpClient, dsn: str
) -> None:
    """The total of a search is remembered with the log position it was counted at: the page
    skips the count while the head has not moved, and counts again after any append, also one
    made through another replica."""
    for name in ("m1", "m2", "m3"):
        await flag(client, name)
    query = "project=IS:default&limit=2"

    async def total(on: Client = client, extra: str = "") -> int:
        found = await ok(await on.get(f"{SEARCH}?{query}{extra}", headers=ADMIN))
        return int(found["total"])

    assert await total() == 3
    # A row removed behind the log's back (no event, the head stays): the total remembered
    # still answers, which shows the count was skipped; the page itself is read afresh.
    async with app[POOL].acquire() as conn:
        await conn.execute("DELETE FROM feature_creators WHERE feature_name = 'm1'")
        await conn.execute("DELETE FROM features WHERE name = 'm1'")
    assert await total() == 3
    assert await names(client, query) == ["m2", "m3"]
    other_app = create_app(settings_for(dsn), dsn)
    other = await aiohttp_client(other_app)
    await flag(other, "m4")  # the other replica's append moves the head: counted again
    assert await total() == 3  # m2, m3, m4
    assert await total(other) == 3
    # Searches whose matches move with the clock or SDK reports are never remembered.
    kept = len(app[TOTALS])
    assert await total(extra="&state=IS:potentially-stale") == 0
    assert await total(extra="&lastSeenAt=IS_BEFORE:2030-01-01") == 0
    assert len(app[TOTALS]) == kept
    # A past state counts its own: two flags existed after the second create.
    async with app[POOL].acquire() as conn:
        second = await conn.fetchval(
            "SELECT position FROM events WHERE type = 'FeatureCreated' ORDER BY position "
            "OFFSET 1 LIMIT 1"
        )
    assert await total(extra=f"&at={second}") == 2
