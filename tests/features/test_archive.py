"""The archive through HTTP (docs/behavior.md, "The archive"): archiving one flag or several,
the archived lists, reviving, deleting for good, and creating a deleted flag's name again."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.events.features import DependencyAdded
from projections.verify import verify
from service.appkeys import POOL
from tests.factories import (
    ADMIN,
    FEATURES,
    ISO,
    append,
    error,
    event_count,
    flag,
    head,
    ok,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

PROJECT = "/api/admin/projects/default"
ARCHIVE = "/api/admin/archive"


def env(feature: str) -> str:
    return f"{FEATURES}/{feature}/environments/development"


async def post(client: Client, path: str, body: Any, *statuses: int) -> Any:
    return await ok(await client.post(path, json=body, headers=ADMIN), *statuses)


async def archive(client: Client, *names: str) -> None:
    await post(client, f"{PROJECT}/archive", {"features": list(names)}, 202)


async def get_flag(client: Client, name: str, at: int | None = None) -> Any:
    query = "" if at is None else f"?at={at}"
    return await client.get(f"{FEATURES}/{name}{query}", headers=ADMIN)


async def verified(app: web.Application) -> None:
    async with app[POOL].acquire() as conn:
        report = await verify(conn)
    assert report.ok, report


async def events_of(client: Client, name: str) -> list[dict[str, Any]]:
    """The flag's events oldest first, as the event log shows them."""
    body = await ok(await client.get(f"/api/admin/events/{name}", headers=ADMIN), 200)
    return list(reversed(body["events"]))


async def test_the_archived_lists_show_archived_flags_newest_archive_first(
    client: Client,
) -> None:
    await post(client, "/api/admin/projects", {"id": "other", "name": "Other"}, 201)
    await flag(client, "first", description="the first")
    await flag(client, "second")
    await flag(client, "active")
    await flag(client, "elsewhere", "other", type="kill-switch")
    await archive(client, "first")
    await archive(client, "second")
    assert (
        await client.delete("/api/admin/projects/other/features/elsewhere", headers=ADMIN)
    ).status == 202

    everything = await ok(await client.get(f"{ARCHIVE}/features", headers=ADMIN), 200)
    found = {f["name"]: f for f in everything["features"]}
    for feature in found.values():
        assert ISO.match(feature["createdAt"])
        assert ISO.match(feature["archivedAt"])
    assert everything == {
        "version": 2,
        "features": [
            {
                "name": "elsewhere",
                "description": None,
                "type": "kill-switch",
                "project": "other",
                "stale": False,
                "createdAt": found["elsewhere"]["createdAt"],
                "impressionData": False,
                "lastSeenAt": None,
                "archivedAt": found["elsewhere"]["archivedAt"],
                "environments": [],
            },
            {
                "name": "second",
                "description": None,
                "type": "release",
                "project": "default",
                "stale": False,
                "createdAt": found["second"]["createdAt"],
                "impressionData": False,
                "lastSeenAt": None,
                "archivedAt": found["second"]["archivedAt"],
                "environments": [],
            },
            {
                "name": "first",
                "description": "the first",
                "type": "release",
                "project": "default",
                "stale": False,
                "createdAt": found["first"]["createdAt"],
                "impressionData": False,
                "lastSeenAt": None,
                "archivedAt": found["first"]["archivedAt"],
                "environments": [],
            },
        ],
    }
    in_default = await ok(await client.get(f"{ARCHIVE}/features/default", headers=ADMIN), 200)
    assert in_default == {"version": 2, "features": everything["features"][1:]}
    # An archived project's archived flags are listed; a project that never existed is a 404.
    assert (await client.delete("/api/admin/projects/other", headers=ADMIN)).status == 200
    in_other = await ok(await client.get(f"{ARCHIVE}/features/other", headers=ADMIN), 200)
    assert in_other == {"version": 2, "features": everything["features"][:1]}
    resp = await client.get(f"{ARCHIVE}/features/never", headers=ADMIN)
    assert await error(resp, 404, "NotFoundError") == "Project never does not exist"


async def test_an_archived_flag_shows_where_sdks_last_saw_it(client: Client) -> None:
    await flag(client, "seen")
    metrics = {
        "appName": "app",
        "bucket": {
            "start": "2026-01-01T00:00:00Z",
            "stop": "2026-01-01T00:01:00Z",
            "toggles": {"seen": {"yes": 1, "no": 0}},
        },
    }
    await post(client, "/api/client/metrics", metrics, 202)
    await archive(client, "seen")
    (feature,) = (await ok(await client.get(f"{ARCHIVE}/features", headers=ADMIN), 200))["features"]
    assert ISO.match(feature["lastSeenAt"])
    # An admin token reports for environment `default`, as in Unleash.
    assert feature["environments"] == [
        {"name": "default", "lastSeenAt": feature["lastSeenAt"], "enabled": False}
    ]


async def test_bulk_archive_is_all_or_nothing(client: Client, app: web.Application) -> None:
    await flag(client, "a")
    await flag(client, "b")
    await flag(client, "gone")
    await archive(client, "gone")
    before = await event_count(app)
    resp = await client.post(
        f"{PROJECT}/archive", json={"features": ["a", "nope", "b", "gone"]}, headers=ADMIN
    )
    message = await error(resp, 404, "NotFoundError")
    assert message == "No active flag named nope, gone in project default"
    assert await event_count(app) == before
    assert (await (await get_flag(client, "a")).json())["archived"] is False

    await archive(client, "b", "a", "b")
    assert await event_count(app, "FeatureArchived") == 3
    for name in ("a", "b"):
        archived = await (await get_flag(client, name)).json()
        assert archived["archived"] is True
        assert archived["lifecycle"] == {
            "stage": "archived",
            "enteredStageAt": archived["archivedAt"],
        }
    await verified(app)


async def test_a_parent_is_archived_only_with_its_children_and_archives_drop_dependencies(
    client: Client, app: web.Application
) -> None:
    for name in ("parent", "child", "other-child"):
        await flag(client, name)
    for child in ("child", "other-child"):
        body = {"feature": "parent"}
        await post(client, f"{FEATURES}/{child}/dependencies", body, 200)

    check = await post(client, f"{PROJECT}/archive/validate", {"features": ["parent"]}, 200)
    assert check == {"parentsWithChildFeatures": ["parent"], "hasDeletedDependencies": True}
    resp = await client.delete(f"{FEATURES}/parent", headers=ADMIN)
    message = await error(resp, 403, "InvalidOperationError")
    assert (
        message == "You can not archive parent since other flags depend on it: child, other-child"
    )
    resp = await client.post(
        f"{PROJECT}/archive", json={"features": ["parent", "child"]}, headers=ADMIN
    )
    message = await error(resp, 403, "InvalidOperationError")
    assert message == "You can not archive parent since other flags depend on it: other-child"

    # A child alone: its dependency goes with the archive, and stays gone when revived.
    resp = await client.delete(f"{FEATURES}/other-child", headers=ADMIN)
    assert resp.status == 202
    everything = ["parent", "child", "other-child"]
    check = await post(client, f"{PROJECT}/archive/validate", {"features": everything}, 200)
    assert check == {"parentsWithChildFeatures": [], "hasDeletedDependencies": True}
    await archive(client, "parent", "child")
    check = await post(client, f"{PROJECT}/archive/validate", {"features": everything}, 200)
    assert check == {"parentsWithChildFeatures": [], "hasDeletedDependencies": False}
    await post(client, f"{PROJECT}/revive", {"features": everything}, 200)
    for name in everything:
        revived = await (await get_flag(client, name)).json()
        assert (revived["dependencies"], revived["children"]) == ([], [])
    kinds = [e["type"] for e in await events_of(client, "child")]
    assert kinds == [
        "feature-created",
        "feature-dependency-added",
        "feature-dependency-removed",
        "feature-archived",
        "feature-revived",
    ]
    await verified(app)


async def test_revive_switches_the_flag_off_everywhere_and_keeps_its_strategies(
    client: Client, app: web.Application
) -> None:
    await flag(client, "lamp")
    strategy = await post(client, f"{env('lamp')}/strategies", {"name": "default"}, 200)
    await post(client, f"{env('lamp')}/on", None, 200)
    before = await (await get_flag(client, "lamp")).json()
    assert before["enabled"] is True
    await archive(client, "lamp")

    resp = await client.post(f"{ARCHIVE}/revive/lamp", headers=ADMIN)
    assert resp.status == 200
    revived = await (await get_flag(client, "lamp")).json()
    development = revived["environments"][0]
    assert development["enabled"] is False
    assert development["strategies"] == [strategy]
    entered = revived["lifecycle"]["enteredStageAt"]
    expected = before | {
        "enabled": False,
        "environments": [before["environments"][0] | {"enabled": False}, before["environments"][1]],
        "lifecycle": {"stage": "initial", "enteredStageAt": entered},
    }
    assert revived == expected
    kinds = [(e["type"], e["environment"]) for e in await events_of(client, "lamp")]
    assert kinds[-3:] == [
        ("feature-archived", None),
        ("feature-revived", None),
        ("feature-environment-disabled", "development"),
    ]
    await verified(app)


async def test_revive_by_name_refuses_what_it_cannot_revive(client: Client) -> None:
    await post(client, "/api/admin/projects", {"id": "closing", "name": "Closing"}, 201)
    await flag(client, "active")
    await flag(client, "shut", "closing")
    assert (
        await client.delete("/api/admin/projects/closing/features/shut", headers=ADMIN)
    ).status == 202
    assert (await client.delete("/api/admin/projects/closing", headers=ADMIN)).status == 200
    for name, message in (
        ("missing", "No archived flag named missing"),
        ("active", "No archived flag named active"),
        ("shut", "Project closing does not exist"),
    ):
        resp = await client.post(f"{ARCHIVE}/revive/{name}", headers=ADMIN)
        assert await error(resp, 404, "NotFoundError") == message


async def test_deleting_an_archived_flag_forgets_it_and_the_log_keeps_its_history(
    client: Client, app: web.Application
) -> None:
    segment = await post(client, "/api/admin/segments", {"name": "beta", "constraints": []}, 201)
    await flag(client, "doomed", description="going")
    body = {"name": "default", "segments": [segment["id"]]}
    await post(client, f"{env('doomed')}/strategies", body, 200)
    await post(client, "/api/admin/features/doomed/tags", {"value": "team-a"}, 201)
    await post(client, f"{env('doomed')}/on", None, 200)
    await archive(client, "doomed")
    # The archived flag's strategy still uses the segment.
    resp = await client.delete(f"/api/admin/segments/{segment['id']}", headers=ADMIN)
    await error(resp, 409, "ConflictError")
    archived_at = (await (await get_flag(client, "doomed")).json())["archivedAt"]
    before = await head(app)

    resp = await client.delete(f"{ARCHIVE}/doomed", headers=ADMIN)
    assert resp.status == 200
    assert await resp.read() == b""
    await error(await get_flag(client, "doomed"), 404, "NotFoundError")
    assert (await ok(await client.get(f"{ARCHIVE}/features", headers=ADMIN)))["features"] == []
    resp = await client.get("/api/admin/features/doomed/tags", headers=ADMIN)
    await error(resp, 404, "NotFoundError")
    resp = await client.delete(f"/api/admin/segments/{segment['id']}", headers=ADMIN)
    assert resp.status == 204
    # Asked about the moment before, the flag is still there, archived.
    past = await get_flag(client, "doomed", at=before)
    assert (await ok(past, 200))["archivedAt"] == archived_at

    events = await events_of(client, "doomed")
    assert [e["type"] for e in events] == [
        "feature-created",
        "feature-strategy-add",
        "feature-tagged",
        "feature-environment-enabled",
        "feature-archived",
        "feature-deleted",
    ]
    deletion = events[-1]
    assert ISO.match(deletion.pop("createdAt"))
    created_at = events[0]["data"]["createdAt"]
    assert deletion == {
        "id": deletion["id"],
        "type": "feature-deleted",
        "createdBy": "admin",
        "createdByUserId": -42,
        "data": None,
        "preData": {
            "name": "doomed",
            "type": "release",
            "stale": False,
            "project": "default",
            "archived": True,
            "createdAt": created_at,
            "lastSeenAt": None,
            "description": "going",
            "impressionData": False,
            "archivedAt": archived_at,
        },
        "tags": [{"value": "team-a", "type": "simple"}],
        "featureName": "doomed",
        "project": "default",
        "environment": None,
        "position": deletion["id"],
        "stream": "feature/doomed",
        "streamVersion": 6,
        "hash": deletion["hash"],
        "storedType": "FeatureDeleted",
    }
    await verified(app)


async def test_only_archived_flags_are_deleted(client: Client, app: web.Application) -> None:
    await flag(client, "alive")
    before = await event_count(app)
    resp = await client.delete(f"{ARCHIVE}/alive", headers=ADMIN)
    message = await error(resp, 404, "NotFoundError")
    assert message == "Flag alive is not archived: archive it before deleting it"
    resp = await client.delete(f"{ARCHIVE}/never", headers=ADMIN)
    assert await error(resp, 404, "NotFoundError") == "No archived flag named never"
    resp = await client.post(f"{PROJECT}/delete", json={"features": ["alive"]}, headers=ADMIN)
    message = await error(resp, 404, "NotFoundError")
    assert message == "No archived flag named alive in project default"
    assert await event_count(app) == before
    assert (await get_flag(client, "alive")).status == 200


async def test_bulk_delete_is_all_or_nothing_and_takes_children_along(
    client: Client, app: web.Application
) -> None:
    await post(client, "/api/admin/projects", {"id": "other", "name": "Other"}, 201)
    for name in ("a", "b", "kept"):
        await flag(client, name)
    await flag(client, "theirs", "other")
    await archive(client, "a", "b", "kept")
    assert (
        await client.delete("/api/admin/projects/other/features/theirs", headers=ADMIN)
    ).status == 202
    # Flags archived before archives dropped dependencies keep them: made here as events.
    async with app[POOL].acquire() as conn:
        await append(
            conn,
            [DependencyAdded(name="b", project="default", parent="a", enabled=True, variants=[])],
            stream=("feature", "b"),
        )
    before = await event_count(app)
    resp = await client.post(
        f"{PROJECT}/delete", json={"features": ["a", "theirs", "b"]}, headers=ADMIN
    )
    message = await error(resp, 404, "NotFoundError")
    assert message == "No archived flag named theirs in project default"
    resp = await client.post(f"{PROJECT}/delete", json={"features": ["a"]}, headers=ADMIN)
    message = await error(resp, 403, "InvalidOperationError")
    assert message == "You can not delete a since other flags depend on it: b"
    resp = await client.delete(f"{ARCHIVE}/a", headers=ADMIN)
    await error(resp, 403, "InvalidOperationError")
    assert await event_count(app) == before

    await post(client, f"{PROJECT}/delete", {"features": ["a", "b", "a"]}, 200)
    assert await event_count(app, "FeatureDeleted") == 2
    names = [
        f["name"]
        for f in (await ok(await client.get(f"{ARCHIVE}/features", headers=ADMIN)))["features"]
    ]
    assert sorted(names) == ["kept", "theirs"]
    await verified(app)


async def test_a_deleted_flag_s_name_can_be_created_again_afresh(
    client: Client, app: web.Application
) -> None:
    await post(client, "/api/admin/projects", {"id": "other", "name": "Other"}, 201)
    await flag(client, "phoenix", type="experiment")
    await post(client, f"{env('phoenix')}/strategies", {"name": "default"}, 200)
    await post(client, "/api/admin/features/phoenix/tags", {"value": "old-tag"}, 201)
    await archive(client, "phoenix")
    old = await head(app)
    await ok(await client.delete(f"{ARCHIVE}/phoenix", headers=ADMIN), 200)
    gone = await head(app)

    resp = await client.post(
        "/api/admin/projects/other/features", json={"name": "phoenix"}, headers=ADMIN
    )
    created = await ok(resp, 200)
    fresh = await ok(await client.get("/api/admin/projects/other/features/phoenix", headers=ADMIN))
    assert fresh == created
    assert (fresh["project"], fresh["type"], fresh["tags"]) == ("other", "release", [])
    assert all(e["strategies"] == [] for e in fresh["environments"])
    resp = await client.post(
        "/api/admin/projects/other/features", json={"name": "phoenix"}, headers=ADMIN
    )
    assert await error(resp, 409, "NameExistsError") == "A flag with that name already exists"

    # One stream, both flags in order, a deletion between them.
    events = await events_of(client, "phoenix")
    assert [(e["type"], e["project"], e["streamVersion"]) for e in events] == [
        ("feature-created", "default", 1),
        ("feature-strategy-add", "default", 2),
        ("feature-tagged", "default", 3),
        ("feature-archived", "default", 4),
        ("feature-deleted", "default", 5),
        ("feature-created", "other", 6),
    ]
    assert events[-1]["tags"] == []  # the new flag's tags, not the old one's
    # Past states: the old flag, then none, then the new one.
    old_flag = await ok(await get_flag(client, "phoenix", at=old), 200)
    assert (old_flag["type"], old_flag["archived"]) == ("experiment", True)
    await error(await get_flag(client, "phoenix", at=gone), 404, "NotFoundError")
    now = await client.get(
        f"/api/admin/projects/other/features/phoenix?at={gone + 1}", headers=ADMIN
    )
    assert await ok(now, 200) == fresh
    await verified(app)


async def test_a_deleted_flag_s_name_can_be_cloned_into(
    client: Client, app: web.Application
) -> None:
    await flag(client, "source")
    await flag(client, "target")
    await archive(client, "target")
    await ok(await client.delete(f"{ARCHIVE}/target", headers=ADMIN), 200)
    resp = await client.post(f"{FEATURES}/source/clone", json={"name": "target"}, headers=ADMIN)
    copy = await ok(resp, 200)
    assert copy["name"] == "target"
    kinds = [e["storedType"] for e in await events_of(client, "target")]
    assert kinds == ["FeatureCreated", "FeatureArchived", "FeatureDeleted", "FeatureCloned"]
    await verified(app)


async def test_concurrent_creates_of_a_freed_name_make_one_flag(
    client: Client, app: web.Application
) -> None:
    await flag(client, "contested")
    await archive(client, "contested")
    await ok(await client.delete(f"{ARCHIVE}/contested", headers=ADMIN), 200)
    answers = await asyncio.gather(
        *(client.post(FEATURES, json={"name": "contested"}, headers=ADMIN) for _ in range(20))
    )
    assert sorted(r.status for r in answers) == [200] + [409] * 19
    for resp in answers:
        if resp.status == 409:
            message = await error(resp, 409, "NameExistsError")
            assert message == "A flag with that name already exists"
    assert await event_count(app, "FeatureCreated") == 2
    await verified(app)


async def test_concurrent_deletions_of_one_flag_delete_it_once(
    client: Client, app: web.Application
) -> None:
    await flag(client, "once")
    await archive(client, "once")
    answers = await asyncio.gather(
        *(client.delete(f"{ARCHIVE}/once", headers=ADMIN) for _ in range(10))
    )
    assert sorted(r.status for r in answers) == [200] + [404] * 9
    assert await event_count(app, "FeatureDeleted") == 1
    await verified(app)


async def test_the_client_api_forgets_a_deleted_flag_and_serves_its_successor(
    client: Client,
) -> None:
    await flag(client, "served")
    await post(client, f"{env('served')}/strategies", {"name": "default"}, 200)
    await post(client, f"{env('served')}/on", None, 200)
    await archive(client, "served")
    await ok(await client.delete(f"{ARCHIVE}/served", headers=ADMIN), 200)
    await flag(client, "served", description="again")
    body = await ok(await client.get("/api/client/features", headers=ADMIN), 200)
    (served,) = body["features"]
    assert (served["name"], served["description"], served["enabled"]) == (
        "served",
        "again",
        False,
    )
    assert served["strategies"] == []


BULK_ROUTES = ["archive", "revive", "delete", "archive/validate"]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    route=st.sampled_from(BULK_ROUTES),
    body=st.one_of(
        st.fixed_dictionaries(
            {
                "features": st.lists(
                    st.sampled_from(["x", "y", "z", "", "%00", "a" * 200]), max_size=4
                )
            }
        ),
        st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=2),
        st.lists(st.integers(), max_size=2),
        st.none(),
    ),
)
async def test_bulk_routes_answer_bad_or_unknown_names_with_a_4xx_and_change_nothing(
    client: Client, app: web.Application, route: str, body: Any
) -> None:
    """Names that are no flag here, empty lists, wrong shapes: never a 500, never a change."""
    before = await event_count(app)
    resp = await client.post(f"{PROJECT}/{route}", json=body, headers=ADMIN)
    features = body.get("features") if isinstance(body, dict) else None
    if body is None:  # no body, so no JSON content type
        await error(resp, 415, "ContentTypeerror")
    elif isinstance(features, list) and features and route == "archive/validate":
        assert await ok(resp, 200) == {
            "parentsWithChildFeatures": [],
            "hasDeletedDependencies": False,
        }
    elif isinstance(features, list) and features:
        await error(resp, 404, "NotFoundError")
    else:
        await error(resp, 400, "ValidationError")
    assert await event_count(app) == before


async def test_the_archived_list_s_path_takes_only_get(client: Client) -> None:
    """`/api/admin/archive/features` is the list's: no flag's deletion route takes it, so the
    methods it answers are the ones the document gives it."""
    await flag(client, "features")
    await archive(client, "features")
    for method in ("DELETE", "OPTIONS", "POST"):
        resp = await client.request(method, f"{ARCHIVE}/features", headers=ADMIN)
        await error(resp, 405, "MethodNotAllowedError")
        assert resp.headers["Allow"] == "GET,HEAD"
    # The flag named so leaves the archive through its project's delete route.
    await post(client, f"{PROJECT}/delete", {"features": ["features"]}, 200)
    await error(await get_flag(client, "features"), 404, "NotFoundError")
