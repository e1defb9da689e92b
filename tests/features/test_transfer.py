"""Export and import in Unleash's features-batch format (docs/behavior.md, "Export and
import"), through HTTP: a round trip into a fresh service, a file Unleash 6.10.1 exported, the
checks of validate, refusals that write nothing, the replacement of what a flag had."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.verify import verify
from service import auth
from service.app import create_app
from service.appkeys import POOL
from service.features.domain import collation_key
from service.transfer import domain
from service.transfer.commands import read_file
from tests import conformance
from tests.conftest import ServiceTestServer, as_principal, resolve_with_test_principals
from tests.factories import ADMIN, FEATURES, ok, seed_database, settings_for

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aiohttp import web

    from tests.pg import PgServer


Client = TestClient[Any, Any]
BATCH = "/api/admin/features-batch"
EXPORT, VALIDATE, IMPORT = BATCH + "/export", BATCH + "/validate", BATCH + "/import"
# An export Unleash 6.10.1 wrote (the reference, 2026-12): three flags of project default in
# development, with a segment, a custom strategy type, a context field with legal values, tag
# types, environment variants and a dependency. Its `enabled: true` for all three is Unleash's
# (its query reads the environment's own switch): only batch-ia was on.
REFERENCE_FILE = Path(__file__).with_name("data") / "unleash-6.10.1-export.json"
VIEWER = as_principal(auth.READ)

RULE = {"contextName": "tier", "operator": "IN", "values": ["gold"]}
ROLLOUT = {
    "name": "flexibleRollout",
    "title": "Half",
    "parameters": {"rollout": "50", "stickiness": "tier", "groupId": "a"},
    "constraints": [
        RULE,
        {
            "contextName": "appName",
            "operator": "STR_STARTS_WITH",
            "values": ["web"],
            "inverted": True,
        },
        {"contextName": "currentTime", "operator": "DATE_AFTER", "value": "2024-01-01T00:00:00Z"},
    ],
    "variants": [
        {
            "name": "v1",
            "weight": 1000,
            "weightType": "variable",
            "stickiness": "default",
            "payload": {"type": "json", "value": '{"a": 1}'},
        }
    ],
}
VARIANTS = [
    {
        "name": "blue",
        "weight": 0,
        "weightType": "variable",
        "stickiness": "default",
        "overrides": [{"contextName": "tier", "values": ["gold"]}],
        "payload": {"type": "string", "value": "b"},
    },
    {"name": "green", "weight": 200, "weightType": "fix", "stickiness": "default"},
]


# --- helpers ----------------------------------------------------------------------------------


async def post(client: Client, path: str, body: Any, headers: dict[str, str] = ADMIN) -> Any:
    return await client.post(path, json=body, headers=headers)


async def exported(client: Client, **query: Any) -> dict[str, Any]:
    body = {"environment": "development", **query}
    found: dict[str, Any] = await ok(await post(client, EXPORT, body), 200)
    return found


def document(
    data: dict[str, Any], project: str = "default", environment: str = "development"
) -> dict[str, Any]:
    """An import's body: the file and where it goes."""
    return {"project": project, "environment": environment, "data": data}


async def segment(client: Client, name: str) -> int:
    body = {
        "name": name,
        "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1"]}],
    }
    found = await ok(await post(client, "/api/admin/segments", body), 201)
    return int(found["id"])


async def prerequisites(client: Client, *, segment_name: str = "beta") -> int:
    """What an import needs to exist already: a segment (by name), a custom strategy type."""
    body = {"name": "my-strat", "parameters": [{"name": "p1", "type": "string"}]}
    await ok(await post(client, "/api/admin/strategies", body), 201)
    return await segment(client, segment_name)


async def rich(client: Client) -> None:
    """Flags with something of everything: strategies (constraints, a segment, strategy
    variants, a title, a disabled one, a custom type), switches, environment variants, tags of
    two types, a dependency, a context field with legal values."""
    body = {
        "name": "tier",
        "legalValues": [{"value": "gold", "description": "Paid"}, {"value": "silver"}],
        "stickiness": True,
    }
    await ok(await post(client, "/api/admin/context", body), 201)
    beta = await prerequisites(client)
    await ok(
        await post(client, "/api/admin/tag-types", {"name": "team", "description": "owner"}), 201
    )
    flags = [
        {"name": "a", "description": "first", "impressionData": True},
        {"name": "b", "type": "experiment"},
        {"name": "c", "type": "kill-switch"},
    ]
    for flag in flags:
        await ok(await post(client, FEATURES, flag), 200)
    base = f"{FEATURES}/a/environments/development"
    await ok(await post(client, f"{base}/strategies", ROLLOUT | {"segments": [beta]}), 200)
    disabled = {"name": "default", "disabled": True, "constraints": [RULE]}
    await ok(await post(client, f"{base}/strategies", disabled), 200)
    await ok(await post(client, f"{base}/on", None), 200)
    put = await client.put(
        f"{FEATURES}/b/environments/development/variants", json=VARIANTS, headers=ADMIN
    )
    await ok(put, 200)
    await ok(
        await post(client, f"{FEATURES}/b/dependencies", {"feature": "a", "variants": ["v1"]}), 200
    )
    for tag in ({"type": "team", "value": "checkout"}, {"type": "simple", "value": "web"}):
        await ok(await post(client, "/api/admin/features/b/tags", tag), 201)
    custom = {"name": "my-strat", "parameters": {"p1": "x"}}
    await ok(await post(client, f"{FEATURES}/c/environments/development/strategies", custom), 200)
    patch = [{"op": "replace", "path": "/stale", "value": True}]
    await ok(await client.patch(f"{FEATURES}/c", json=patch, headers=ADMIN), 200)


def without_ids(found: dict[str, Any]) -> dict[str, Any]:
    """An export without what differs between two services holding the same flags: the
    strategies' ids, and the segments' ids (the same names)."""
    found = copy.deepcopy(found)
    ids = {s["id"]: s["name"] for s in found["segments"]}
    for strategy in found["featureStrategies"]:
        del strategy["id"]
        strategy["segments"] = [ids[i] for i in strategy["segments"]]
    for item in found["segments"]:
        del item["id"]
    return found


async def events_of(app: web.Application, after: int) -> list[tuple[str, str]]:
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT stream_key, type FROM events WHERE position > $1 ORDER BY position", after
        )
    return [(r["stream_key"], r["type"]) for r in rows]


async def last_position(app: web.Application) -> int:
    async with app[POOL].acquire() as conn:
        return int(await conn.fetchval("SELECT coalesce(max(position), 0) FROM events"))


async def verified(app: web.Application) -> bool:
    async with app[POOL].acquire() as conn:
        return (await verify(conn)).ok


# A second service with a database of its own: where a file goes.


@pytest.fixture
async def other_dsn(pg18: PgServer) -> AsyncIterator[str]:
    url = await pg18.new_database()
    yield url
    await pg18.drop_database(url)


@pytest.fixture
async def other_app(other_dsn: str) -> AsyncIterator[web.Application]:
    settings = settings_for(other_dsn)
    await seed_database(other_dsn, settings.init_admin_api_tokens)
    app = create_app(settings, other_dsn, resolver=resolve_with_test_principals)
    conformance.install(app)
    yield app
    assert not app[conformance.VIOLATIONS], app[conformance.VIOLATIONS]


@pytest.fixture
async def other(other_app: web.Application) -> AsyncIterator[Client]:
    """Its client, closed (the service stopped) before its database goes."""
    client: Client = TestClient(ServiceTestServer(other_app))
    await client.start_server()
    yield client
    await client.close()


# --- the round trip -----------------------------------------------------------------------------


async def test_an_export_imported_into_a_fresh_service_exports_the_same(
    client: Client, other: Client, other_app: web.Application
) -> None:
    await rich(client)
    found = await exported(client, features=["a", "b", "c"])
    assert [f["name"] for f in found["features"]] == ["a", "b", "c"]
    assert found["features"][2] == {
        "name": "c",
        "description": None,
        "type": "kill-switch",
        "project": "default",
        "stale": True,
        "impressionData": False,
        "archived": False,
    }
    assert [(e["featureName"], e["enabled"]) for e in found["featureEnvironments"]] == [
        ("a", True),
        ("b", False),  # the flag's own switch (Unleash's export says true: the environment's)
        ("c", False),
    ]
    assert [c["name"] for c in found["contextFields"]] == ["appName", "currentTime", "tier"]
    assert [t["name"] for t in found["tagTypes"]] == ["simple", "team"]
    assert found["dependencies"] == [
        {"feature": "b", "dependencies": [{"feature": "a", "enabled": True, "variants": ["v1"]}]}
    ]
    await prerequisites(other, segment_name="other-first")  # ids differ between the two
    await segment(other, "beta")
    checked = await ok(await post(other, VALIDATE, document(found)), 200)
    assert checked == {
        "errors": [],
        "warnings": [{"message": domain.CUSTOM_STRATEGIES, "affectedItems": ["my-strat"]}],
        "permissions": [],
    }
    before = await last_position(other_app)
    assert await ok(await post(other, IMPORT, document(found)), 200) is None
    assert without_ids(await exported(other, features=["a", "b", "c"])) == without_ids(found)
    kinds = sorted({t for _, t in await events_of(other_app, before)})
    assert kinds == [
        "ContextFieldCreated",
        "DependencyAdded",
        "EnvironmentVariantsSet",
        "FeatureCreated",
        "FeatureEnvironmentEnabled",
        "FeatureStaleSet",
        "FeatureTagged",
        "StrategyAdded",
        "TagTypeCreated",
    ]
    # Importing the same file again changes nothing, and appends nothing.
    after = await last_position(other_app)
    again = await ok(await post(other, VALIDATE, document(found)), 200)
    assert again["warnings"][-1] == {"message": domain.EXISTING, "affectedItems": ["a", "b", "c"]}
    await ok(await post(other, IMPORT, document(found)), 200)
    assert await last_position(other_app) == after
    # Its own export imported back: the same strategies (by id) and still nothing appended.
    await ok(await post(other, IMPORT, document(await exported(other, features=[]))), 200)
    assert await last_position(other_app) == after
    assert await verified(other_app)


async def test_a_file_unleash_exported_imports_as_it_says(
    client: Client, app: web.Application
) -> None:
    source = json.loads(REFERENCE_FILE.read_bytes())
    await segment(client, "batch-seg")
    strategy = {"name": "batch-strat", "parameters": [{"name": "p1", "type": "string"}]}
    await ok(await post(client, "/api/admin/strategies", strategy), 201)
    before = await last_position(app)
    await ok(await post(client, IMPORT, document(source)), 200)
    ours = await exported(client, features=["batch-ia", "batch-ib", "batch-ic"])
    assert ours["features"] == source["features"]
    assert ours["featureEnvironments"] == source["featureEnvironments"]
    assert ours["featureTags"] == source["featureTags"]
    assert ours["dependencies"] == source["dependencies"]
    assert ours["contextFields"] == source["contextFields"]
    assert ours["tagTypes"] == [
        {k: v for k, v in t.items() if v is not None} for t in source["tagTypes"]
    ]
    assert ours["segments"] == [{"id": 1, "name": "batch-seg"}]
    # The strategies, in the file's order: what Unleash's constraints leave out is the default.
    defaults = {"caseInsensitive": False, "inverted": False, "values": []}
    for mine, theirs in zip(ours["featureStrategies"], source["featureStrategies"], strict=True):
        assert mine.pop("sortOrder") >= 0
        assert mine.pop("id") != theirs.pop("id")
        theirs["constraints"] = [defaults | c for c in theirs["constraints"]]
        assert mine == theirs
    events = await events_of(app, before)
    assert sorted(t for _, t in events) == sorted(
        ["TagTypeCreated", "ContextFieldCreated"]
        + ["FeatureCreated"] * 3
        + ["StrategyAdded"] * 3
        + ["EnvironmentVariantsSet"]
        + ["FeatureEnvironmentEnabled"] * 3
        + ["FeatureTagged"] * 2
        + ["DependencyAdded"]
    )
    field = await ok(await client.get("/api/admin/context/batch-tier", headers=ADMIN), 200)
    assert field["legalValues"] == [{"value": "gold", "description": "Paid"}, {"value": "silver"}]
    # The file read outside HTTP is the same document.
    assert msgspec.to_builtins(read_file(REFERENCE_FILE.read_bytes()))["features"][0]["name"] == (
        "batch-ia"
    )
    assert await verified(app)


# --- validate -----------------------------------------------------------------------------------


def flawed() -> dict[str, Any]:
    """A file with one of each error Unleash's validate reports, and ours."""
    return {
        "features": [
            {"name": "new", "type": "release"},
            {"name": "new", "type": "release"},
            {"name": "there", "type": "release"},
            {"name": "gone", "type": "release"},
            {"name": "elsewhere", "type": "release"},
        ],
        "featureStrategies": [
            {"name": "nope", "featureName": "new"},
            {"name": "nope", "featureName": "there"},
            {"name": "my-strat", "featureName": "new", "segments": [7, 8]},
            {"name": "default", "featureName": "unlisted"},
        ],
        "featureEnvironments": [{"name": "new", "enabled": True}],
        "contextFields": [
            {"name": "tier", "legalValues": [{"value": "gold"}, {"value": "platinum"}]},
            {"name": "brand-new", "legalValues": [{"value": "x"}]},
        ],
        "featureTags": [
            {"featureName": "new", "tagType": "unknown-type", "tagValue": "v1"},
            {"featureName": "new", "tagType": "fresh", "tagValue": "v2"},
        ],
        "segments": [{"id": 7, "name": "no-such-segment"}],
        "tagTypes": [{"name": "fresh", "description": "from the file"}],
        "dependencies": [{"feature": "there", "dependencies": [{"feature": "missing-parent"}]}],
    }


async def flawed_setup(client: Client) -> None:
    await prerequisites(client)
    body = {"name": "tier", "legalValues": [{"value": "gold"}]}
    await ok(await post(client, "/api/admin/context", body), 201)
    await ok(await post(client, "/api/admin/projects", {"id": "web", "name": "Web"}), 201)
    for name, project in (("there", "default"), ("gone", "default"), ("elsewhere", "web")):
        await ok(await post(client, f"/api/admin/projects/{project}/features", {"name": name}), 200)
    await ok(await client.delete(f"{FEATURES}/gone", headers=ADMIN), 202)


async def test_validate_reports_what_unleash_reports(client: Client, app: web.Application) -> None:
    await flawed_setup(client)
    before = await last_position(app)
    checked = await ok(await post(client, VALIDATE, document(flawed())), 200)
    assert checked["errors"] == [
        {"message": domain.UNSUPPORTED_STRATEGIES, "affectedItems": ["nope"]},
        {"message": domain.UNSUPPORTED_CONTEXT_FIELDS, "affectedItems": ["tier"]},
        {
            "message": domain.other_projects("default"),
            "affectedItems": ["elsewhere (in project web)"],
        },
        {"message": domain.DUPLICATES, "affectedItems": ["new"]},
        {
            "message": domain.MISSING_SEGMENTS,
            "affectedItems": ["no-such-segment", "id 8 (not among the file's segments)"],
        },
        {"message": domain.MISSING_PARENTS, "affectedItems": ["missing-parent"]},
        {"message": domain.MISSING_TAG_TYPES, "affectedItems": ["unknown-type"]},
        {"message": domain.UNLISTED, "affectedItems": ["unlisted"]},
    ]
    assert checked["warnings"] == [
        {"message": domain.CUSTOM_STRATEGIES, "affectedItems": ["my-strat"]},
        {"message": domain.ARCHIVED, "affectedItems": ["gone"]},
        {"message": domain.EXISTING, "affectedItems": ["there"]},
    ]
    assert checked["permissions"] == []
    viewer = await ok(await post(client, VALIDATE, document(flawed()), VIEWER), 200)
    assert viewer["permissions"] == [
        {
            "message": domain.MISSING_PERMISSIONS,
            "affectedItems": [
                "Update feature flags",
                "Create tag types",
                "Create context fields",
                "Create activation strategies",
                "Create feature flags",
            ],
        }
    ]
    assert await last_position(app) == before  # a check writes nothing


async def test_validate_of_a_file_that_fits_has_nothing_to_say(client: Client) -> None:
    data = {"features": [{"name": "plain"}], "featureStrategies": [], "tagTypes": []}
    checked = await ok(await post(client, VALIDATE, document(data)), 200)
    assert checked == {"errors": [], "warnings": [], "permissions": []}


# --- refusals -----------------------------------------------------------------------------------


async def test_an_import_with_errors_is_refused_and_writes_nothing(
    client: Client, app: web.Application
) -> None:
    await flawed_setup(client)
    before = await last_position(app)
    resp = await post(client, IMPORT, document(flawed()))
    assert resp.status == 400, await resp.text()
    body = await resp.json()
    assert body["name"] == "ValidationError"
    assert body["message"] == f"The file cannot be imported: {domain.UNSUPPORTED_STRATEGIES} nope"
    checked = await ok(await post(client, VALIDATE, document(flawed())), 200)
    assert body["details"] == [
        {
            "message": f"{e['message']} {', '.join(e['affectedItems'])}",
            "affectedItems": e["affectedItems"],
        }
        for e in checked["errors"]
    ]
    assert await last_position(app) == before


BROKEN = [
    # A rule of this service that a file may break, and what the refusal names.
    (
        {
            "featureStrategies": [
                {
                    "name": "default",
                    "featureName": "x",
                    "constraints": [{"contextName": "n", "operator": "NUM_GT", "value": "many"}],
                }
            ]
        },
        "flag x: strategy 0 (default): NUM_GT needs a number - at `$.constraints[0].value`",
    ),
    (
        {
            "featureEnvironments": [
                {
                    "name": "x",
                    "enabled": False,
                    "variants": [
                        {"name": "a", "weight": 900, "weightType": "fix"},
                        {"name": "b", "weight": 200, "weightType": "fix"},
                    ],
                }
            ]
        },
        "flag x: Fixed variant weights total 1100, more than 1000 - at `$`",
    ),
    (
        {"features": [{"name": "bad name!?"}]},
        "flag bad name!?: Name may only contain letters, digits and - _ . ! ~ * ' ( )",
    ),
    (
        {"features": [{"name": "x", "type": "no-such-type"}]},
        "flag x: Invalid enum value 'no-such-type' - at `$.type`",
    ),
    (
        {"featureTags": [{"featureName": "x", "tagType": "simple", "tagValue": "a"}]},
        "flag x: Tag value must be 2 to 50 characters - at `$.value`",
    ),
    (
        {
            "tagTypes": [{"name": "bad", "color": "red"}],
            "featureTags": [{"featureName": "x", "tagType": "bad", "tagValue": "ab"}],
        },
        "tag type bad: Expected `str` matching regex",
    ),
    (
        {
            "features": [{"name": "x"}, {"name": "y"}],
            "dependencies": [
                {
                    "feature": "x",
                    "dependencies": [{"feature": "y", "enabled": False, "variants": ["v"]}],
                }
            ],
        },
        "flag x: variants apply only when enabled is true - at `$.variants`",
    ),
    (
        {
            "features": [{"name": "x"}, {"name": "y"}, {"name": "z"}],
            "dependencies": [
                {"feature": "x", "dependencies": [{"feature": "y"}]},
                {"feature": "y", "dependencies": [{"feature": "z"}]},
            ],
        },
        "y depends on another flag itself; chains are not allowed - at `$.feature`",
    ),
]


@pytest.mark.parametrize(("change", "reason"), BROKEN)
async def test_a_file_our_rules_refuse_writes_nothing(
    client: Client, app: web.Application, change: dict[str, Any], reason: str
) -> None:
    data = {"features": [{"name": "x"}], "featureStrategies": [], "tagTypes": []} | change
    before = await last_position(app)
    checked = await ok(await post(client, VALIDATE, document(data)), 200)
    (error,) = checked["errors"]
    assert error["message"] == domain.REFUSED
    assert any(reason in item for item in error["affectedItems"]), error
    resp = await post(client, IMPORT, document(data))
    assert resp.status == 400, await resp.text()
    assert (await resp.json())["details"][0]["affectedItems"] == error["affectedItems"]
    assert await last_position(app) == before


async def test_where_the_file_goes_must_exist(client: Client, app: web.Application) -> None:
    data = {"features": [{"name": "x"}], "featureStrategies": [], "tagTypes": []}
    await ok(await post(client, "/api/admin/projects", {"id": "web", "name": "Web"}), 201)
    await ok(
        await client.delete("/api/admin/projects/web/environments/production", headers=ADMIN), 200
    )
    before = await last_position(app)
    for path in (VALIDATE, IMPORT):
        cases = [
            (document(data, project="nope"), "Project nope does not exist"),
            (document(data, environment="nope"), "Environment nope does not exist"),
            (
                document(data, project="web", environment="production"),
                "Environment production is not enabled in project web",
            ),
        ]
        for body, message in cases:
            resp = await post(client, path, body)
            assert resp.status == 404, await resp.text()
            assert (await resp.json())["message"] == message
    assert await last_position(app) == before


async def test_permissions(client: Client, app: web.Application) -> None:
    data = {
        "features": [{"name": "x"}],
        "featureStrategies": [],
        "featureTags": [{"featureName": "x", "tagType": "fresh", "tagValue": "ab"}],
        "tagTypes": [{"name": "fresh"}],
    }
    before = await last_position(app)
    # A Viewer may check a file (Unleash answers it the permissions it lacks), not import one.
    resp = await post(client, IMPORT, document(data), VIEWER)
    assert resp.status == 403
    assert (await resp.json())["name"] == "NoAccessError"
    # A caller who may update and create flags but not create tag types: 403, nothing written.
    headers = as_principal(auth.READ, auth.UPDATE_FEATURE, auth.CREATE_FEATURE)
    resp = await post(client, IMPORT, document(data), headers)
    assert resp.status == 403, await resp.text()
    body = await resp.json()
    assert body["name"] == "NoAccessError"
    assert body["permissions"] == ["Create tag types"]
    assert body["message"] == (
        "You don't have the required permissions to perform this operation. To perform this"
        ' action, you need one of the following permissions: "Create tag types".'
    )
    assert await last_position(app) == before
    # With them it imports (an admin token too, which Unleash refuses for an import).
    headers = as_principal(
        auth.READ, auth.UPDATE_FEATURE, auth.CREATE_FEATURE, auth.CREATE_TAG_TYPE
    )
    await ok(await post(client, IMPORT, document(data), headers), 200)
    resp = await post(client, EXPORT, {"environment": "development", "features": ["x"]}, VIEWER)
    assert (await ok(resp, 200))["featureTags"] == [
        {"featureName": "x", "tagType": "fresh", "tagValue": "ab"}
    ]


# --- what an import changes ---------------------------------------------------------------------


async def test_an_import_makes_a_flag_what_the_file_says(
    client: Client, app: web.Application
) -> None:
    """Strategies replaced (kept by id, updated, removed, added, in the file's order), variants
    and switch set, tags and parents made the file's: each as the event a person's change
    would be."""
    await ok(await post(client, "/api/admin/tag-types", {"name": "team"}), 201)
    for name in ("x", "p", "q"):
        await ok(await post(client, FEATURES, {"name": name}), 200)
    base = f"{FEATURES}/x/environments/development"
    kept = await ok(await post(client, f"{base}/strategies", {"name": "default"}), 200)
    await ok(
        await post(
            client, f"{base}/strategies", {"name": "userWithId", "parameters": {"userIds": "1"}}
        ),
        200,
    )
    await ok(await post(client, f"{base}/on", None), 200)
    await ok(await client.put(f"{base}/variants", json=VARIANTS, headers=ADMIN), 200)
    for tag in ({"type": "team", "value": "old"}, {"type": "simple", "value": "stays"}):
        await ok(await post(client, "/api/admin/features/x/tags", tag), 201)
    await ok(await post(client, f"{FEATURES}/x/dependencies", {"feature": "p"}), 200)
    data = {
        "features": [{"name": "x", "type": "operational", "description": "now"}],
        "featureStrategies": [
            {
                "name": "flexibleRollout",
                "featureName": "x",
                "parameters": {"rollout": "10", "stickiness": "default", "groupId": "x"},
            },
            {"name": "default", "featureName": "x", "id": kept["id"], "title": "renamed"},
        ],
        "featureEnvironments": [{"name": "x", "enabled": False, "variants": []}],
        "featureTags": [
            {"featureName": "x", "tagType": "simple", "tagValue": "stays"},
            {"featureName": "x", "tagType": "team", "tagValue": "new"},
        ],
        "tagTypes": [],
        "dependencies": [{"feature": "x", "dependencies": [{"feature": "q", "enabled": False}]}],
    }
    before = await last_position(app)
    await ok(await post(client, IMPORT, document(data)), 200)
    assert await events_of(app, before) == [
        ("x", "FeatureUpdated"),
        ("x", "StrategyRemoved"),
        ("x", "StrategyAdded"),
        ("x", "StrategyUpdated"),
        ("x", "EnvironmentVariantsSet"),
        ("x", "FeatureEnvironmentDisabled"),
        ("x", "FeatureUntagged"),
        ("x", "FeatureTagged"),
        ("x", "DependencyRemoved"),
        ("x", "DependencyAdded"),
    ]
    flag = await ok(await client.get(f"{FEATURES}/x", headers=ADMIN), 200)
    (development,) = [e for e in flag["environments"] if e["name"] == "development"]
    assert [(s["name"], s["sortOrder"], s["title"]) for s in development["strategies"]] == [
        ("flexibleRollout", 0, None),
        ("default", 1, "renamed"),
    ]
    assert development["strategies"][1]["id"] == kept["id"]
    assert (development["enabled"], development["variants"]) == (False, [])
    assert flag["tags"] == [{"value": "stays", "type": "simple"}, {"value": "new", "type": "team"}]
    assert flag["dependencies"] == [{"feature": "q", "enabled": False, "variants": []}]
    assert (flag["type"], flag["description"]) == ("operational", "now")
    assert await verified(app)


async def test_archived_flags_are_left_alone_and_deleted_names_taken_again(
    client: Client, app: web.Application
) -> None:
    for name in ("kept", "freed"):
        await ok(await post(client, FEATURES, {"name": name}), 200)
        await ok(await client.delete(f"{FEATURES}/{name}", headers=ADMIN), 202)
    await ok(await client.delete("/api/admin/archive/freed", headers=ADMIN), 200)
    data = {
        "features": [{"name": "kept"}, {"name": "freed", "description": "back"}],
        "featureStrategies": [{"name": "default", "featureName": "kept"}],
        "featureTags": [{"featureName": "kept", "tagType": "simple", "tagValue": "ab"}],
        "tagTypes": [],
    }
    checked = await ok(await post(client, VALIDATE, document(data)), 200)
    assert checked["errors"] == []
    assert checked["warnings"] == [{"message": domain.ARCHIVED, "affectedItems": ["kept"]}]
    before = await last_position(app)
    await ok(await post(client, IMPORT, document(data)), 200)
    assert await events_of(app, before) == [("freed", "FeatureCreated")]
    found = await exported(client, features=["kept", "freed"])
    assert [(f["name"], f["archived"], f["description"]) for f in found["features"]] == [
        ("freed", False, "back"),
        ("kept", True, None),
    ]
    assert found["featureStrategies"] == found["featureTags"] == []
    assert await verified(app)


# --- the export -------------------------------------------------------------------------------


async def test_what_an_export_takes(client: Client) -> None:
    await ok(await post(client, "/api/admin/projects", {"id": "web", "name": "Web"}), 201)
    for name, project in (("a", "default"), ("b", "default"), ("w", "web"), ("old", "default")):
        await ok(await post(client, f"/api/admin/projects/{project}/features", {"name": name}), 200)
    await ok(await client.delete(f"{FEATURES}/old", headers=ADMIN), 202)
    for name in ("b", "w", "old"):
        tag = {"type": "simple", "value": "shared"}
        resp = await post(client, f"/api/admin/features/{name}/tags", tag)
        assert resp.status in (201, 404)  # an archived flag takes no new tag

    async def names(**query: Any) -> list[str]:
        return [f["name"] for f in (await exported(client, **query))["features"]]

    assert await names(features=[]) == ["a", "b", "w"]  # every active flag
    assert await names(features=["old", "a", "a", "nope"]) == ["a", "old"]  # named: archived too
    assert await names(project="web") == ["w"]
    assert await names(tag="shared") == ["b", "w"]  # a tag's value, of any type
    assert await names(tag="shared", features=["a"], project="web") == ["b", "w"]  # tag first
    assert await names(features=["a"], project="web") == ["a"]
    resp = await post(
        client, EXPORT, {"environment": "development", "features": [], "downloadFile": True}
    )
    assert resp.headers["Content-Disposition"] == 'attachment; filename="export.json"'
    await ok(resp, 200)
    for query, status in (
        ({"environment": "nope", "features": []}, 404),
        ({"environment": "development", "project": "nope"}, 404),
        ({"environment": "development"}, 400),
    ):
        resp = await post(client, EXPORT, query)
        assert resp.status == status, await resp.text()
    # The project's flags only where the project has the environment.
    await ok(
        await client.delete("/api/admin/projects/web/environments/production", headers=ADMIN), 200
    )
    found = await exported(client, environment="production", features=["a", "w"])
    assert [e["featureName"] for e in found["featureEnvironments"]] == ["a"]


# --- any constraints and variants ---------------------------------------------------------------

WORDS = st.text("abcxyz-._", min_size=1, max_size=8)
LISTED = ["IN", "NOT_IN", "STR_ENDS_WITH", "STR_STARTS_WITH", "STR_CONTAINS"]
SINGLE = {
    "NUM_EQ": st.integers(-1000, 1000).map(str),
    "NUM_GT": st.floats(-1e6, 1e6, allow_nan=False).map(lambda f: f"{f:.3f}"),
    "NUM_LTE": st.integers(0, 9).map(str),
    "DATE_AFTER": st.dates().map(lambda d: f"{d.isoformat()}T00:00:00Z"),
    "DATE_BEFORE": st.dates().map(lambda d: f"{d.isoformat()}T12:30:00.000Z"),
    "SEMVER_EQ": st.tuples(*[st.integers(0, 20)] * 3).map(lambda v: ".".join(map(str, v))),
    "SEMVER_LT": st.just("1.0.0-beta.1"),
}
constraints = st.one_of(
    st.builds(
        lambda op, values, inverted, case: {
            "contextName": "userId",
            "operator": op,
            "values": values,
            "inverted": inverted,
            "caseInsensitive": case,
        },
        st.sampled_from(LISTED),
        st.lists(WORDS, min_size=1, max_size=3),
        st.booleans(),
        st.booleans(),
    ),
    st.sampled_from(sorted(SINGLE)).flatmap(
        lambda op: SINGLE[op].map(lambda v: {"contextName": "appName", "operator": op, "value": v})
    ),
)
payloads = st.one_of(
    st.none(),
    st.builds(lambda v: {"type": "string", "value": v}, WORDS),
    st.builds(lambda v: {"type": "number", "value": str(v)}, st.integers(-99, 99)),
    st.builds(lambda v: {"type": "json", "value": json.dumps({"k": v})}, WORDS),
)


@st.composite
def variant_lists(draw: st.DrawFn, *, overrides: bool) -> list[dict[str, Any]]:
    """Variants whose weights this service takes: fixed ones within 1000, a variable one to
    take the rest (or fixed ones totalling exactly 1000)."""
    names = draw(st.lists(WORDS, max_size=4, unique=True))
    fixed = draw(st.lists(st.booleans(), min_size=len(names), max_size=len(names)))
    if names and all(fixed):
        fixed[0] = False
    budget = 1000
    variants = []
    for name, is_fixed in zip(names, fixed, strict=True):
        weight = draw(st.integers(0, budget // 4)) if is_fixed else draw(st.integers(0, 1000))
        budget -= weight if is_fixed else 0
        variant: dict[str, Any] = {
            "name": name,
            "weight": weight,
            "weightType": "fix" if is_fixed else "variable",
            "stickiness": draw(st.sampled_from(["default", "userId"])),
        }
        payload = draw(payloads)
        if payload is not None:
            variant["payload"] = payload
        if overrides:
            variant["overrides"] = draw(
                st.lists(
                    st.builds(
                        lambda v: {"contextName": "userId", "values": v},
                        st.lists(WORDS, min_size=1, max_size=2),
                    ),
                    max_size=2,
                )
            )
        variants.append(variant)
    return variants


flag_names = itertools.count()


def by_name(variants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Variants in the order they are stored (as Unleash stores them)."""
    return sorted(variants, key=lambda v: collation_key(v["name"]))


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    strategies=st.lists(
        st.fixed_dictionaries(
            {
                "constraints": st.lists(constraints, max_size=3),
                "variants": variant_lists(overrides=False),
                "disabled": st.booleans(),
            }
        ),
        max_size=3,
    ),
    variants=variant_lists(overrides=True),
    enabled=st.booleans(),
)
async def test_any_constraints_and_variants_go_both_ways(
    client: Client,
    app: web.Application,
    strategies: list[dict[str, Any]],
    variants: list[dict[str, Any]],
    enabled: bool,
) -> None:
    name = f"h{next(flag_names)}"
    data = {
        "features": [{"name": name}],
        "featureStrategies": [
            {
                "name": "flexibleRollout",
                "featureName": name,
                "parameters": {"rollout": "5", "stickiness": "default", "groupId": name},
            }
            | s
            for s in strategies
        ],
        "featureEnvironments": [{"name": name, "enabled": enabled, "variants": variants}],
        "tagTypes": [],
    }
    await ok(await post(client, IMPORT, document(data)), 200)
    found = await exported(client, features=[name])
    defaults = {"caseInsensitive": False, "inverted": False, "values": []}
    for mine, theirs in zip(found["featureStrategies"], strategies, strict=True):
        assert mine["constraints"] == [defaults | c for c in theirs["constraints"]]
        assert [v["name"] for v in mine["variants"]] == [
            v["name"] for v in by_name(theirs["variants"])
        ]
        assert mine["disabled"] == theirs["disabled"]
    (environment,) = found["featureEnvironments"]
    assert environment["enabled"] == enabled
    shown = environment["variants"]
    assert [(v["name"], v.get("payload"), v["overrides"]) for v in shown] == [
        (v["name"], v.get("payload"), v["overrides"]) for v in by_name(variants)
    ]
    assert sum(v["weight"] for v in shown) == (1000 if variants else 0)
    assert [v["weight"] for v in shown if v["weightType"] == "fix"] == [
        v["weight"] for v in by_name(variants) if v["weightType"] == "fix"
    ]
    # What it exported goes back in: variable variants share their weight again, in the order
    # stored (by name), as Unleash's import does, so a remainder may move to another variant
    # once; then the export goes back in as it is: no event, the same export.
    await ok(await post(client, IMPORT, document(found)), 200)
    again = await exported(client, features=[name])
    (environment,) = again["featureEnvironments"]
    assert [v["name"] for v in environment["variants"]] == [v["name"] for v in shown]
    after = await last_position(app)
    await ok(await post(client, IMPORT, document(again)), 200)
    assert await last_position(app) == after
    assert await exported(client, features=[name]) == again
