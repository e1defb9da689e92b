"""Context fields (/api/admin/context): the built-in ones as Unleash 6.10.1 seeds them, custom
ones created, updated, validated and deleted, and the flags' strategies whose constraints name a
field (docs/behavior.md, "Context fields")."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.replay import replay
from projections.verify import verify
from service.appkeys import POOL
from tests.factories import ADMIN, FEATURES, ISO, create, error, event_count, head, make_account

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

CONTEXT = "/api/admin/context"


def built_in(name: str, description: str, sort_order: int, *, stickiness: bool = False) -> Any:
    """A built-in field as Unleash's list shows it on a new install (but `createdAt`: the time
    of its migration there, null here: it came with the service)."""
    return {
        "name": name,
        "description": f"Allows you to constrain on {description}",
        "stickiness": stickiness,
        "sortOrder": sort_order,
        "legalValues": [],
        "createdAt": None,
        "usedInProjects": 0,
        "usedInFeatures": 0,
    }


BUILT_IN = [
    built_in("appName", "application name", 2),
    built_in("currentTime", "date values", 3),
    built_in("environment", "application environment", 0),
    built_in("sessionId", "sessionId", 4, stickiness=True),
    built_in("userId", "userId", 1),
]
TIER: dict[str, Any] = {
    "name": "tier",
    "description": "The customer's plan",
    "legalValues": [{"value": "gold", "description": "Paid yearly"}, {"value": "silver"}],
    "stickiness": True,
    "sortOrder": 7,
}


def unlisted(field: dict[str, Any]) -> dict[str, Any]:
    """A field as GET of one shows it: without the use counts of the list."""
    return {k: v for k, v in field.items() if not k.startswith("usedIn")}


async def fields(client: Client, headers: dict[str, str] = ADMIN) -> list[dict[str, Any]]:
    resp = await client.get(CONTEXT, headers=headers)
    assert resp.status == 200
    body: list[dict[str, Any]] = await resp.json()
    return body


async def one(client: Client, name: str) -> dict[str, Any]:
    resp = await client.get(f"{CONTEXT}/{name}", headers=ADMIN)
    assert resp.status == 200, await resp.text()
    found: dict[str, Any] = await resp.json()
    return found


async def status(client: Client, method: str, path: str, body: Any = None) -> int:
    return (await client.request(method, path, json=body, headers=ADMIN)).status


async def test_the_built_in_fields_are_unleashs(client: Client) -> None:
    assert await fields(client) == BUILT_IN
    assert await one(client, "sessionId") == unlisted(BUILT_IN[3])
    resp = await client.get(f"{CONTEXT}/nope", headers=ADMIN)
    assert await error(resp, 404, "NotFoundError") == "Could not find context field with name nope"


async def test_a_custom_field_from_creation_to_deletion(
    client: Client, app: web.Application
) -> None:
    resp = await client.post(CONTEXT, json=TIER, headers=ADMIN)
    assert resp.status == 201
    created = await resp.json()
    assert ISO.match(created["createdAt"])
    shown = TIER | {"createdAt": created["createdAt"]}
    assert created == shown
    assert await one(client, "tier") == shown
    assert await fields(client) == [
        *BUILT_IN[:4],
        shown | {"usedInProjects": 0, "usedInFeatures": 0},
        BUILT_IN[4],
    ]
    for taken in ("tier", "userId"):
        resp = await client.post(CONTEXT, json={"name": taken}, headers=ADMIN)
        message = await error(resp, 409, "NameExistsError")
        assert message == f"A context field named {taken} already exists"

    # PUT: legal values and stickiness as given (left out: none and false), the description and
    # the sort order left out are kept; a `name` in the body is ignored.
    resp = await client.put(f"{CONTEXT}/tier", json={"name": "x"}, headers=ADMIN)
    assert (resp.status, await resp.read()) == (200, b"")
    assert await one(client, "tier") == shown | {"legalValues": [], "stickiness": False}
    update = {"description": "", "legalValues": [{"value": "a"}], "sortOrder": -3}
    assert await status(client, "PUT", f"{CONTEXT}/tier", update) == 200
    changed = shown | update | {"stickiness": False}
    assert await one(client, "tier") == changed

    resp = await client.delete(f"{CONTEXT}/tier", headers=ADMIN)
    assert (resp.status, await resp.read()) == (200, b"")
    for method in ("GET", "PUT", "DELETE"):
        resp = await client.request(method, f"{CONTEXT}/tier", json={}, headers=ADMIN)
        await error(resp, 404, "NotFoundError")
    # The name is free again.
    resp = await client.post(CONTEXT, json={"name": "tier"}, headers=ADMIN)
    assert await resp.json() == {
        "name": "tier",
        "description": None,
        "stickiness": False,
        "sortOrder": 0,
        "legalValues": [],
        "createdAt": (await resp.json())["createdAt"],
    }
    counted = [
        await event_count(app, f"ContextField{k}") for k in ("Created", "Updated", "Deleted")
    ]
    assert counted == [2, 2, 1]
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_validate_says_whether_a_name_could_be_created(client: Client) -> None:
    validate = f"{CONTEXT}/validate"
    resp = await client.post(validate, json={"name": "free"}, headers=ADMIN)
    assert (resp.status, await resp.read()) == (200, b"")
    for name in ("userId", "taken"):
        assert await status(client, "POST", CONTEXT, {"name": "taken"}) in {201, 409}
        resp = await client.post(validate, json={"name": name}, headers=ADMIN)
        assert (
            await error(resp, 409, "NameExistsError")
            == f"A context field named {name} already exists"
        )
    for body, message in [
        ({}, "Object missing required field `name`"),
        ({"name": "a b"}, "Name may only contain"),
        ({"name": ""}, "Name must not be empty - at `$.name`"),
        ({"name": "validate"}, "A context field may not be named validate - at `$.name`"),
    ]:
        resp = await client.post(validate, json=body, headers=ADMIN)
        assert (await error(resp, 400, "ValidationError")).startswith(message)
        resp = await client.post(CONTEXT, json=body, headers=ADMIN)
        assert (await error(resp, 400, "ValidationError")).startswith(message)
    # The route's path is no field's: other methods there are a 405 naming POST.
    resp = await client.get(validate, headers=ADMIN)
    await error(resp, 405, "MethodNotAllowedError")
    assert resp.headers["Allow"] == "POST"


async def test_a_built_in_field_is_changed_but_never_deleted(
    client: Client, app: web.Application
) -> None:
    update = {"legalValues": [{"value": "1", "description": "one"}], "stickiness": True}
    assert await status(client, "PUT", f"{CONTEXT}/userId", update) == 200
    user_id = unlisted(BUILT_IN[4]) | update
    assert await one(client, "userId") == user_id
    assert (await fields(client))[4] == BUILT_IN[4] | update
    update = {"description": "Who", "sortOrder": 9}
    assert await status(client, "PUT", f"{CONTEXT}/userId", update) == 200
    user_id |= update | {"legalValues": [], "stickiness": False}
    assert await one(client, "userId") == user_id
    resp = await client.delete(f"{CONTEXT}/userId", headers=ADMIN)
    message = await error(resp, 403, "InvalidOperationError")
    assert message == "Cannot delete context field userId: every SDK's context has it (built in)"
    assert await one(client, "userId") == user_id
    async with app[POOL].acquire() as conn:
        await conn.execute("DELETE FROM readmodel.context_fields")
        assert await replay(conn) > 0
        assert (await verify(conn)).ok
    assert await one(client, "userId") == user_id


async def test_the_strategies_whose_constraints_name_a_field(
    client: Client, app: web.Application
) -> None:
    assert await status(client, "POST", "/api/admin/projects", {"id": "p2", "name": "P2"}) == 201
    on_tier = {"contextName": "tier", "operator": "IN", "values": ["gold"]}
    on_user = {"contextName": "userId", "operator": "IN", "values": ["1"]}
    added: dict[tuple[str, str], str] = {}
    for project, flag, constraints in [
        ("default", "a", [on_tier, on_tier, on_user]),
        ("default", "b", [on_tier]),
        ("p2", "c", [on_tier]),
        ("default", "d", []),
    ]:
        await create(client, {"name": flag}, project=project)
        path = f"/api/admin/projects/{project}/features/{flag}/environments/development/strategies"
        resp = await client.post(
            path, json={"name": "default", "constraints": constraints}, headers=ADMIN
        )
        assert resp.status == 200, await resp.text()
        added[(project, flag)] = (await resp.json())["id"]
    # A field's name counts whether or not a field has it (constraints hold names).
    resp = await client.get(f"{CONTEXT}/tier/strategies", headers=ADMIN)
    assert await resp.json() == {
        "strategies": [
            {
                "id": added[(project, flag)],
                "projectId": project,
                "featureName": flag,
                "strategyName": "default",
                "environment": "development",
            }
            for project, flag in [("default", "a"), ("default", "b"), ("p2", "c")]
        ]
    }
    resp = await client.get(f"{CONTEXT}/nobody/strategies", headers=ADMIN)
    assert await resp.json() == {"strategies": []}
    assert await status(client, "POST", CONTEXT, {"name": "tier"}) == 201
    # An archived flag's strategies count, as in Unleash.
    assert await status(client, "DELETE", f"{FEATURES}/b") == 202
    used = {f["name"]: (f["usedInFeatures"], f["usedInProjects"]) for f in await fields(client)}
    assert used == {
        "appName": (0, 0),
        "currentTime": (0, 0),
        "environment": (0, 0),
        "sessionId": (0, 0),
        "tier": (3, 2),
        "userId": (1, 1),
    }
    # Deleting a field that constraints name is allowed, as in Unleash: they keep the name.
    assert await status(client, "DELETE", f"{CONTEXT}/tier") == 200
    resp = await client.get(f"{CONTEXT}/tier/strategies", headers=ADMIN)
    assert len((await resp.json())["strategies"]) == 3


async def test_bodies_are_validated(client: Client, app: web.Application) -> None:
    before = await event_count(app)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"description": "d"}, "Object missing required field `name`"),
        ({"name": "x", "description": "d" * 251}, "Expected `str` of length <= 250"),
        ({"name": "x", "legalValues": [{"value": ""}]}, "Expected `str` of length >= 1"),
        ({"name": "x", "legalValues": [{"description": "d"}]}, "Object missing required field"),
        (
            {"name": "x", "legalValues": [{"value": "a"}, {"value": "b"}, {"value": "a"}]},
            "Legal value a is listed twice - at `$.legalValues[2].value`",
        ),
        ({"name": "x", "sortOrder": 2**31}, "Expected `int` <= 1000000 - at `$.sortOrder`"),
        ({"name": "x", "stickiness": "yes"}, "Expected `bool`, got `str` - at `$.stickiness`"),
    ]
    for body, message in cases:
        resp = await client.post(CONTEXT, json=body, headers=ADMIN)
        assert (await error(resp, 400, "ValidationError")).startswith(message), body
        if "name" in body:  # the same rules on PUT (which takes no name)
            resp = await client.put(f"{CONTEXT}/userId", json=body, headers=ADMIN)
            assert (await error(resp, 400, "ValidationError")).startswith(message), body
    assert await event_count(app) == before


async def test_of_concurrent_creates_of_one_name_exactly_one_succeeds(
    client: Client, app: web.Application
) -> None:
    answers = await asyncio.gather(
        *(client.post(CONTEXT, json={"name": "contested"}, headers=ADMIN) for _ in range(8))
    )
    assert sorted(a.status for a in answers) == [201] + [409] * 7
    # Concurrent updates of a built-in field (no row yet) run one after the other.
    updates = await asyncio.gather(
        *(
            client.put(
                f"{CONTEXT}/appName", json={"legalValues": [{"value": str(i)}]}, headers=ADMIN
            )
            for i in range(6)
        )
    )
    assert {u.status for u in updates} == {200}
    assert await event_count(app, "ContextFieldUpdated") == 6
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_editors_manage_fields_and_viewers_read_them(
    client: Client, app: web.Application
) -> None:
    editor, viewer = await make_account(app, role=2), await make_account(app, role=3)
    assert (await client.post(CONTEXT, json=TIER, headers=editor.headers)).status == 201
    for method, path, body in [
        ("POST", f"{CONTEXT}/validate", {"name": "other"}),
        ("PUT", f"{CONTEXT}/tier", {}),
        ("DELETE", f"{CONTEXT}/tier", None),
    ]:
        resp = await client.request(method, path, json=body, headers=viewer.headers)
        await error(resp, 403, "NoAccessError")
        resp = await client.request(method, path, json=body, headers=editor.headers)
        assert resp.status == 200, await resp.text()
    assert len(await fields(client, viewer.headers)) == 5


async def test_the_list_at_a_past_position(client: Client, app: web.Application) -> None:
    before = await head(app)
    assert await status(client, "POST", CONTEXT, TIER) == 201
    assert await status(client, "PUT", f"{CONTEXT}/appName", {"stickiness": True}) == 200
    resp = await client.get(f"{CONTEXT}?at={before}", headers=ADMIN)
    assert await resp.json() == BUILT_IN
    resp = await client.get(f"{CONTEXT}/tier?at={before}", headers=ADMIN)
    await error(resp, 404, "NotFoundError")


LEGAL_VALUE = st.fixed_dictionaries(
    {"value": st.text(alphabet="ab", min_size=1, max_size=3)},
    optional={"description": st.one_of(st.none(), st.text(max_size=5))},
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(LEGAL_VALUE, max_size=6))
async def test_legal_values_round_trip_unless_one_is_listed_twice(
    client: Client, values: list[dict[str, Any]]
) -> None:
    resp = await client.put(f"{CONTEXT}/environment", json={"legalValues": values}, headers=ADMIN)
    if len({v["value"] for v in values}) < len(values):
        assert (await error(resp, 400, "ValidationError")).startswith("Legal value")
        return
    assert resp.status == 200
    # A value without a description is shown without one (null and left out alike).
    shown = [{k: x for k, x in v.items() if x is not None} for v in values]
    assert (await one(client, "environment"))["legalValues"] == shown


async def test_the_event_log_and_the_diff_show_a_fields_changes(
    client: Client, app: web.Application
) -> None:
    before = await head(app)
    created = await (await client.post(CONTEXT, json=TIER, headers=ADMIN)).json()
    update = {"legalValues": [{"value": "gold"}], "stickiness": True}
    assert await status(client, "PUT", f"{CONTEXT}/tier", update) == 200
    assert await status(client, "PUT", f"{CONTEXT}/userId", {"stickiness": True}) == 200
    resp = await client.get("/api/admin/search/events?type=IS:ContextFieldUpdated", headers=ADMIN)
    shown = [(e["stream"], e["data"], e["preData"]) for e in (await resp.json())["events"]]
    stored = {
        "name": "tier",
        "description": "The customer's plan",
        "legalValues": [{"value": "gold", "description": None}],
        "stickiness": True,
        "sortOrder": 7,
    }
    # preData: what the stream held before (a built-in field's first change: nothing).
    assert shown == [
        (
            "context-field/userId",
            {
                "name": "userId",
                "description": "Allows you to constrain on userId",
                "legalValues": [],
                "stickiness": True,
                "sortOrder": 1,
            },
            None,
        ),
        (
            "context-field/tier",
            stored,
            stored
            | {
                "legalValues": [
                    {"value": "gold", "description": "Paid yearly"},
                    {"value": "silver", "description": None},
                ],
                "createdAt": created["createdAt"],
            },
        ),
    ]
    resp = await client.get(
        f"/api/admin/audit/diff?from={before}&stream=context-field/userId", headers=ADMIN
    )
    assert (await resp.json())["changes"] == [
        {
            "entity": "context-field",
            "id": "userId",
            "change": "created",
            "fields": [
                {
                    "field": "description",
                    "before": None,
                    "after": "Allows you to constrain on userId",
                },
                {"field": "legalValues", "before": None, "after": []},
                {"field": "sortOrder", "before": None, "after": 1},
                {"field": "stickiness", "before": None, "after": True},
            ],
        }
    ]
