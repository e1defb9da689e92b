"""Strategy types (/api/admin/strategies): the built-in ones as Unleash 6.10.1 lists them,
custom ones created, updated, deprecated, reactivated and deleted, and their use by flags'
strategies (docs/behavior.md, "Strategy types")."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.events.context_fields import (
    ContextFieldCreated,
    ContextFieldDeleted,
    ContextFieldUpdated,
    LegalValue,
)
from eventlog.events.strategy_definitions import (
    StrategyDefinitionCreated,
    StrategyDefinitionDeleted,
    StrategyDefinitionDeprecated,
    StrategyDefinitionReactivated,
    StrategyDefinitionUpdated,
    StrategyParameter,
)
from projections.replay import replay
from projections.verify import verify
from service.appkeys import POOL
from tests.eventlog.test_rebuild import T0, _recorded, _through_both
from tests.factories import ADMIN, FEATURES, create, error, event_count, head, make_account

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from eventlog.codec import DomainEvent
    from eventlog.connections import Conn

    Client = TestClient[Any, Any]

TYPES = "/api/admin/strategies"
DEV = f"{FEATURES}/f/environments/development/strategies"
# `GET /api/admin/strategies` of Unleash 6.10.1 on a new install, as it answered.
BUILT_IN: list[dict[str, Any]] = [
    {
        "displayName": "Gradual rollout",
        "name": "flexibleRollout",
        "editable": False,
        "description": "Roll out to a percentage of your userbase, and ensure that the experience "
        "is the same for the user on each visit.",
        "parameters": [
            {"name": "rollout", "type": "percentage", "description": "", "required": False},
            {
                "name": "stickiness",
                "type": "string",
                "description": "Used define stickiness. Possible values: default, userId, "
                "sessionId, random",
                "required": True,
            },
            {
                "name": "groupId",
                "type": "string",
                "description": "Used to define a activation groups, which allows you to "
                "correlate across feature toggles.",
                "required": True,
            },
        ],
        "deprecated": False,
        "title": None,
    },
    {
        "displayName": "Standard",
        "name": "default",
        "editable": False,
        "description": 'This strategy turns on / off for your entire userbase. Prefer using "'
        'Gradual rollout" strategy (100%=on, 0%=off).',
        "parameters": [],
        "deprecated": False,
        "title": None,
    },
    {
        "displayName": "UserIDs",
        "name": "userWithId",
        "editable": False,
        "description": 'Enable the feature for a specific set of userIds. Prefer using "Gradual '
        'rollout" strategy with user id constraints.',
        "parameters": [{"name": "userIds", "type": "list", "description": "", "required": False}],
        "deprecated": True,
        "title": None,
    },
    {
        "displayName": "IPs",
        "name": "remoteAddress",
        "editable": False,
        "description": "Enable the feature for a specific set of IP addresses.",
        "parameters": [
            {
                "name": "IPs",
                "type": "list",
                "description": "List of IPs to enable the feature toggle for.",
                "required": True,
            }
        ],
        "deprecated": False,
        "title": None,
    },
    {
        "displayName": "Hosts",
        "name": "applicationHostname",
        "editable": False,
        "description": "Enable the feature for a specific set of hostnames.",
        "parameters": [
            {
                "name": "hostNames",
                "type": "list",
                "description": "List of hostnames to enable the feature toggle for.",
                "required": False,
            }
        ],
        "deprecated": False,
        "title": None,
    },
]
REGIONS: dict[str, Any] = {
    "name": "by-region",
    "title": "By region",
    "description": "On in the regions listed",
    "parameters": [{"name": "regions", "type": "list", "description": "Where", "required": True}],
}
REGIONS_SHOWN = {
    "displayName": None,
    "name": "by-region",
    "editable": True,
    "description": "On in the regions listed",
    "parameters": [{"name": "regions", "type": "list", "description": "Where", "required": True}],
    "deprecated": False,
    "title": "By region",
}


async def listed(client: Client) -> list[dict[str, Any]]:
    resp = await client.get(TYPES, headers=ADMIN)
    assert resp.status == 200
    body = await resp.json()
    assert body["version"] == 1
    strategies: list[dict[str, Any]] = body["strategies"]
    return strategies


async def one(client: Client, name: str) -> dict[str, Any]:
    resp = await client.get(f"{TYPES}/{name}", headers=ADMIN)
    assert resp.status == 200, await resp.text()
    found: dict[str, Any] = await resp.json()
    return found


async def status(client: Client, method: str, path: str, body: Any = None) -> int:
    resp = await client.request(method, path, json=body, headers=ADMIN)
    return resp.status


async def test_the_built_in_types_are_unleashs(client: Client) -> None:
    assert await (await client.get(TYPES, headers=ADMIN)).json() == {
        "version": 1,
        "strategies": BUILT_IN,
    }
    assert await one(client, "userWithId") == BUILT_IN[2]
    message = await error(await client.get(f"{TYPES}/nope", headers=ADMIN), 404, "NotFoundError")
    assert message == "Could not find strategy with name nope"


async def test_a_custom_type_from_creation_to_deletion(
    client: Client, app: web.Application
) -> None:
    resp = await client.post(TYPES, json=REGIONS, headers=ADMIN)
    assert resp.status == 201
    assert await resp.json() == REGIONS_SHOWN
    assert await one(client, "by-region") == REGIONS_SHOWN
    second = {"name": "a-second", "parameters": [{"name": "n", "type": "number"}]}
    assert await status(client, "POST", TYPES, second) == 201
    # Built-in types first, in Unleash's order; custom ones after them, by name.
    assert await listed(client) == [
        *BUILT_IN,
        {
            "displayName": None,
            "name": "a-second",
            "editable": True,
            "description": None,
            "parameters": [{"name": "n", "type": "number", "description": "", "required": False}],
            "deprecated": False,
            "title": None,
        },
        REGIONS_SHOWN,
    ]
    for taken in ("by-region", "default"):
        resp = await client.post(TYPES, json=REGIONS | {"name": taken}, headers=ADMIN)
        message = await error(resp, 409, "NameExistsError")
        assert message == f"Strategy with name {taken} already exists"

    # PUT replaces the parameters and keeps a title and description left out; `name` in the
    # body is ignored (the path names the type).
    update = {"name": "other", "parameters": [{"name": "countries", "type": "string"}]}
    resp = await client.put(f"{TYPES}/by-region", json=update, headers=ADMIN)
    assert (resp.status, await resp.read()) == (200, b"")
    countries = [{"name": "countries", "type": "string", "description": "", "required": False}]
    assert await one(client, "by-region") == REGIONS_SHOWN | {"parameters": countries}
    update = {"title": "T", "description": "", "parameters": []}
    assert await status(client, "PUT", f"{TYPES}/by-region", update) == 200
    changed = REGIONS_SHOWN | {"title": "T", "description": "", "parameters": []}
    assert await one(client, "by-region") == changed

    # Deprecated and reactivated; a second deprecation changes nothing and records nothing.
    for _ in range(2):
        assert await status(client, "POST", f"{TYPES}/by-region/deprecate") == 200
    assert await one(client, "by-region") == changed | {"deprecated": True}
    for _ in range(2):
        assert await status(client, "POST", f"{TYPES}/by-region/reactivate") == 200
    assert await one(client, "by-region") == changed

    resp = await client.delete(f"{TYPES}/by-region", headers=ADMIN)
    assert (resp.status, await resp.read()) == (200, b"")
    await error(await client.get(f"{TYPES}/by-region", headers=ADMIN), 404, "NotFoundError")
    for method, path in [
        ("DELETE", f"{TYPES}/by-region"),
        ("PUT", f"{TYPES}/by-region"),
        ("POST", f"{TYPES}/by-region/deprecate"),
        ("POST", f"{TYPES}/by-region/reactivate"),
    ]:
        resp = await client.request(method, path, json={"parameters": []}, headers=ADMIN)
        await error(resp, 404, "NotFoundError")
    # The name is free again; the new type starts afresh (active, its own texts).
    assert await status(client, "POST", TYPES, {"name": "by-region", "parameters": []}) == 201
    assert (await one(client, "by-region"))["deprecated"] is False
    counted = [
        await event_count(app, f"StrategyDefinition{kind}")
        for kind in ("Created", "Updated", "Deprecated", "Reactivated", "Deleted")
    ]
    assert counted == [3, 2, 1, 1, 1]
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_built_in_types_are_deprecated_and_reactivated_but_never_edited(
    client: Client, app: web.Application
) -> None:
    body: dict[str, Any] | None
    for method, path, body in [
        ("PUT", f"{TYPES}/default", {"parameters": []}),
        ("DELETE", f"{TYPES}/default", None),
        ("DELETE", f"{TYPES}/flexibleRollout", None),
    ]:
        resp = await client.request(method, path, json=body, headers=ADMIN)
        message = await error(resp, 403, "InvalidOperationError")
        name = path.rsplit("/", 1)[1]
        assert message == f"Cannot edit strategy {name}: it is built in"
    assert await status(client, "POST", f"{TYPES}/default/deprecate") == 200
    assert await status(client, "POST", f"{TYPES}/userWithId/reactivate") == 200
    expected = [
        BUILT_IN[0],
        BUILT_IN[1] | {"deprecated": True},
        BUILT_IN[2] | {"deprecated": False},
        *BUILT_IN[3:],
    ]
    assert await listed(client) == expected
    assert await one(client, "default") == expected[1]
    assert await status(client, "POST", f"{TYPES}/default/reactivate") == 200
    assert await status(client, "POST", f"{TYPES}/userWithId/deprecate") == 200
    assert await listed(client) == BUILT_IN
    # Each change a stream of the type's name; the rows rebuild as they are.
    async with app[POOL].acquire() as conn:
        streams = await conn.fetch(
            "SELECT stream_key, type FROM events WHERE stream_type = 'strategy' ORDER BY position"
        )
        assert [tuple(r) for r in streams] == [
            ("default", "StrategyDefinitionDeprecated"),
            ("userWithId", "StrategyDefinitionReactivated"),
            ("default", "StrategyDefinitionReactivated"),
            ("userWithId", "StrategyDefinitionDeprecated"),
        ]
        assert (await verify(conn)).ok


async def test_bodies_are_validated_and_unknown_fields_ignored(
    client: Client, app: web.Application
) -> None:
    before = await event_count(app)
    for body, message in [
        ({"name": "x"}, "Object missing required field `parameters`"),
        ({"parameters": []}, "Object missing required field `name`"),
        ({"name": "a b", "parameters": []}, "Name may only contain"),
        ({"name": "", "parameters": []}, "Name must not be empty - at `$.name`"),
        ({"name": "x", "parameters": [{"name": "p"}]}, "Object missing required field `type`"),
        (
            {"name": "x", "parameters": [{"name": "p", "type": "weird"}]},
            "Invalid enum value 'weird' - at `$.parameters[0].type`",
        ),
        (
            {"name": "x", "parameters": [{"name": "p", "type": "list"}] * 2},
            "Parameter p is listed twice - at `$.parameters[1].name`",
        ),
        ({"name": "x", "description": "d" * 10_001, "parameters": []}, "Expected `str` of length"),
    ]:
        resp = await client.post(TYPES, json=body, headers=ADMIN)
        assert (await error(resp, 400, "ValidationError")).startswith(message), body
    assert await event_count(app) == before
    # `editable` and `deprecated` are not the client's to set.
    body = {"name": "x", "editable": False, "deprecated": True, "parameters": []}
    assert (await (await client.post(TYPES, json=body, headers=ADMIN)).json())["editable"] is True
    assert (await one(client, "x"))["deprecated"] is False
    resp = await client.put(f"{TYPES}/x", json={"parameters": "no"}, headers=ADMIN)
    assert (await error(resp, 400, "ValidationError")).endswith("at `$.parameters`")


async def test_a_flags_strategy_names_a_known_type_and_keeps_it_from_deletion(
    client: Client, app: web.Application
) -> None:
    await create(client, {"name": "f"})
    resp = await client.post(DEV, json={"name": "by-region"}, headers=ADMIN)
    message = await error(resp, 400, "ValidationError")
    assert message == "Could not find strategy type with name by-region - at `$.name`"
    assert await status(client, "POST", TYPES, REGIONS) == 201
    added = await (await client.post(DEV, json={"name": "by-region"}, headers=ADMIN)).json()
    resp = await client.delete(f"{TYPES}/by-region", headers=ADMIN)
    message = await error(resp, 409, "ConflictError")
    assert message == "Strategy by-region is used by 1 strategy(ies) of flags; remove them first"
    # Deprecation is no deletion: allowed while in use, and a deprecated type still takes new
    # strategies (the UI no longer offers it), as in Unleash.
    assert await status(client, "POST", f"{TYPES}/by-region/deprecate") == 200
    assert await status(client, "POST", DEV, {"name": "by-region"}) == 200
    # An update that names an unknown type is refused the same way.
    resp = await client.put(f"{DEV}/{added['id']}", json={"name": "gone"}, headers=ADMIN)
    assert (await error(resp, 400, "ValidationError")).startswith("Could not find strategy type")
    # An archived flag's strategies still count.
    for strategy in await (await client.get(DEV, headers=ADMIN)).json():
        if strategy["id"] != added["id"]:
            assert await status(client, "DELETE", f"{DEV}/{strategy['id']}") == 200
    assert await status(client, "DELETE", f"{FEATURES}/f") == 202
    resp = await client.delete(f"{TYPES}/by-region", headers=ADMIN)
    assert "used by 1 strategy" in await error(resp, 409, "ConflictError")
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


async def test_a_type_cannot_vanish_under_a_strategy_being_saved(client: Client) -> None:
    await create(client, {"name": "f"})
    for _ in range(5):
        assert await status(client, "POST", TYPES, REGIONS) == 201
        add, delete = await asyncio.gather(
            client.post(DEV, json={"name": "by-region"}, headers=ADMIN),
            client.delete(f"{TYPES}/by-region", headers=ADMIN),
        )
        # Either the strategy landed first (deletion refused) or the deletion did (the strategy
        # is refused): never a strategy of a type that is gone.
        assert sorted((add.status, delete.status)) in ([200, 409], [200, 400])
        if delete.status == 409:
            strategy = await add.json()
            assert await status(client, "DELETE", f"{DEV}/{strategy['id']}") == 200
            assert await status(client, "DELETE", f"{TYPES}/by-region") == 200
        assert await (await client.get(DEV, headers=ADMIN)).json() == []


async def test_of_concurrent_creates_of_one_name_exactly_one_succeeds(
    client: Client, app: web.Application
) -> None:
    answers = await asyncio.gather(
        *(client.post(TYPES, json=REGIONS, headers=ADMIN) for _ in range(8))
    )
    assert sorted(a.status for a in answers) == [201] + [409] * 7
    assert await event_count(app, "StrategyDefinitionCreated") == 1


async def test_editors_manage_types_and_viewers_read_them(
    client: Client, app: web.Application
) -> None:
    editor, viewer = await make_account(app, role=2), await make_account(app, role=3)
    resp = await client.post(TYPES, json=REGIONS, headers=editor.headers)
    assert resp.status == 201
    for method, path in [
        ("PUT", f"{TYPES}/by-region"),
        ("POST", f"{TYPES}/by-region/deprecate"),
        ("DELETE", f"{TYPES}/by-region"),
    ]:
        resp = await client.request(method, path, json={"parameters": []}, headers=viewer.headers)
        await error(resp, 403, "NoAccessError")
        resp = await client.request(method, path, json={"parameters": []}, headers=editor.headers)
        assert resp.status == 200, await resp.text()
    assert len(await (await client.get(TYPES, headers=viewer.headers)).json()) == 2


async def test_the_list_at_a_past_position_and_after_a_replay(
    client: Client, app: web.Application
) -> None:
    before = await head(app)
    assert await status(client, "POST", TYPES, REGIONS) == 201
    assert await status(client, "POST", f"{TYPES}/default/deprecate") == 200
    now = await listed(client)
    resp = await client.get(f"{TYPES}?at={before}", headers=ADMIN)
    assert (await resp.json())["strategies"] == BUILT_IN
    async with app[POOL].acquire() as conn:
        await conn.execute("DELETE FROM readmodel.strategy_deprecations")
        await conn.execute("UPDATE readmodel.strategy_definitions SET title = 'hand-made'")
        assert await replay(conn) > 0
        assert (await verify(conn)).ok
    assert await listed(client) == now


NAME_CHARACTERS = "ABCabc019-_.!~*'() /:%é"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.text(alphabet=NAME_CHARACTERS, max_size=110))
async def test_a_name_is_taken_exactly_when_it_follows_the_name_rule(
    client: Client, app: web.Application, name: str
) -> None:
    valid = re.fullmatch(r"[A-Za-z0-9\-_.!~*'()]{1,100}", name) is not None and name not in {
        ".",
        "..",
    }
    before = await event_count(app)
    resp = await client.post(TYPES, json={"name": name, "parameters": []}, headers=ADMIN)
    if not valid:
        await error(resp, 400, "ValidationError")
        assert await event_count(app) == before
    elif resp.status == 409:  # drawn twice, or a built-in type's name
        assert name in {s["name"] for s in await listed(client)}
    else:
        assert resp.status == 201
        assert (await resp.json())["name"] == name


async def test_the_event_log_and_the_diff_show_a_types_changes(
    client: Client, app: web.Application
) -> None:
    before = await head(app)
    assert await status(client, "POST", TYPES, REGIONS) == 201
    update: dict[str, Any] = {"parameters": []}
    assert await status(client, "PUT", f"{TYPES}/by-region", update) == 200
    assert await status(client, "POST", f"{TYPES}/userWithId/reactivate") == 200
    resp = await client.get("/api/admin/search/events?limit=3", headers=ADMIN)
    shown = [(e["type"], e["data"], e["preData"]) for e in (await resp.json())["events"]]
    created = {
        "name": "by-region",
        "title": "By region",
        "description": "On in the regions listed",
        "parameters": REGIONS["parameters"],
    }
    assert shown[0] == ("StrategyDefinitionReactivated", {"name": "userWithId"}, None)
    assert shown[1] == (
        "StrategyDefinitionUpdated",
        created | {"parameters": []},
        created | {"createdAt": shown[2][1]["createdAt"]},
    )
    assert shown[2][:2] == (
        "StrategyDefinitionCreated",
        created | {"createdAt": shown[2][1]["createdAt"]},
    )
    resp = await client.get(f"/api/admin/audit/diff?from={before}", headers=ADMIN)
    changes = (await resp.json())["changes"]
    assert [(c["entity"], c["id"], c["change"]) for c in changes] == [
        ("strategy-type", "by-region", "created"),
        ("strategy-type", "userWithId", "changed"),
    ]
    assert changes[1]["fields"] == [
        {"field": "deprecation.deprecated", "before": None, "after": False}
    ]


async def test_a_log_of_reference_data_gives_the_same_rows_through_both_interpreters(
    conn: Conn,
) -> None:
    """Names deleted and taken again, a built-in field's first change and later ones, a
    deprecation that outlives nothing: SQL writes and a rebuild in memory agree."""
    param = StrategyParameter(name="p", type="list", description="", required=True)
    value = LegalValue(value="v", description=None)
    events: list[DomainEvent] = [
        StrategyDefinitionCreated(
            name="t", title=None, description=None, parameters=[param], created_at=T0
        ),
        StrategyDefinitionDeprecated(name="t"),
        StrategyDefinitionDeprecated(name="default"),
        StrategyDefinitionUpdated(name="t", title="T", description="d", parameters=[]),
        StrategyDefinitionDeleted(name="t"),
        StrategyDefinitionCreated(
            name="t", title=None, description="again", parameters=[], created_at=T0
        ),
        StrategyDefinitionReactivated(name="userWithId"),
        StrategyDefinitionReactivated(name="default"),
        ContextFieldUpdated(
            name="userId", description=None, legal_values=[value], stickiness=True, sort_order=1
        ),
        ContextFieldUpdated(
            name="userId", description="u", legal_values=[], stickiness=False, sort_order=2
        ),
        ContextFieldCreated(
            name="c",
            description=None,
            legal_values=[],
            stickiness=False,
            sort_order=0,
            created_at=T0,
        ),
        ContextFieldDeleted(name="c"),
        ContextFieldCreated(
            name="c",
            description="x",
            legal_values=[value],
            stickiness=True,
            sort_order=3,
            created_at=T0,
        ),
        ContextFieldUpdated(
            name="c", description="y", legal_values=[], stickiness=True, sort_order=3
        ),
    ]
    by_sql, by_memory = await _through_both(conn, _recorded(events))
    assert by_sql == by_memory
    assert by_sql["strategy_definitions"] == [("t", None, "again", "[]", T0)]
    assert sorted(by_sql["strategy_deprecations"]) == [("default", False), ("userWithId", False)]
    assert sorted(by_sql["context_fields"]) == [
        ("c", "y", "[]", True, 3, T0),
        ("userId", "u", "[]", False, 2, None),
    ]
