"""HTTP handlers of the archive (docs/behavior.md, "The archive"): archiving a project's flags,
one or several; the archived flags; reviving them; and deleting them for good."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.appkeys import POOL
from service.errors import InvalidOperation
from service.features import domain, queries
from service.features.commands import BatchFeatures
from service.features.responses import ArchiveCheck, ArchivedFeature, ArchivedFeatureList
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from aiohttp import web

    from service.work import UnitOfWork


async def _append_each(
    uow: UnitOfWork, request: web.Request, events: Sequence[domain.FlagEvent]
) -> None:
    """Each flag's events to its stream, in the order decided (one transaction: all or none)."""
    by_flag: dict[str, list[domain.FlagEvent]] = {}
    for event in events:
        by_flag.setdefault(event.name, []).append(event)
    for name, appended in by_flag.items():
        await uow.append(domain.stream(name), appended, actor(request))


async def archive_feature(request: web.Request) -> web.Response:
    """DELETE /api/admin/projects/:projectId/features/:featureName: 202."""
    name, project_id = request.match_info["featureName"], request.match_info["projectId"]
    async with unit_of_work(request) as uow:
        flags, links = await queries.lock_archive_flags(uow.conn, [name], project_id)
        events = domain.archive_feature(
            name, project_id, flags.get(name), links=links, now=datetime.now(UTC)
        )
        await _append_each(uow, request, events)
    return empty(202)


async def archive_features(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    cmd = await read_json(request, BatchFeatures)
    async with unit_of_work(request) as uow:
        flags, links = await queries.lock_archive_flags(uow.conn, cmd.features, project_id)
        events = domain.archive_features(
            cmd.features, project_id, flags=flags, links=links, now=datetime.now(UTC)
        )
        await _append_each(uow, request, events)
    return empty(202)


async def validate_archive_features(request: web.Request) -> web.Response:
    """What the UI's archive dialog asks before it offers to archive: a read, nothing locked."""
    cmd = await read_json(request, BatchFeatures)
    async with request.app[POOL].acquire() as conn:
        rows = await conn.fetch(queries.LINKS, sorted(set(cmd.features)))
    links = [domain.Link(r["child"], r["parent"]) for r in rows]
    return json_response(
        ArchiveCheck(
            parents_with_child_features=domain.parents_with_children(cmd.features, links),
            has_deleted_dependencies=bool(links),
        )
    )


async def revive_features(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    cmd = await read_json(request, BatchFeatures)
    async with unit_of_work(request) as uow:
        project_active = await uow.conn.fetchval(queries.LOCK_PROJECT_SHARED, project_id)
        flags, _ = await queries.lock_archive_flags(uow.conn, cmd.features, project_id)
        events = domain.revive_features(
            cmd.features,
            project_id,
            project_active=bool(project_active),
            flags=flags,
            now=datetime.now(UTC),
        )
        await _append_each(uow, request, events)
    return empty()


async def revive_feature(request: web.Request) -> web.Response:
    """POST /api/admin/archive/revive/:featureName: into the flag's own project."""
    name = request.match_info["featureName"]
    async with unit_of_work(request) as uow:
        flag, _ = await queries.lock_archive_flag(uow.conn, name)
        project_active = flag is not None and bool(
            await uow.conn.fetchval(queries.LOCK_PROJECT_SHARED, flag.project)
        )
        events = domain.revive_feature(
            name, flag, project_active=project_active, now=datetime.now(UTC)
        )
        await _append_each(uow, request, events)
    return empty()


async def delete_feature(request: web.Request) -> web.Response:
    name = request.match_info["featureName"]
    async with unit_of_work(request) as uow:
        flag, links = await queries.lock_archive_flag(uow.conn, name)
        event = domain.delete_feature(name, flag, links=links, now=datetime.now(UTC))
        await _append_each(uow, request, [event])
    return empty()


async def delete_features(request: web.Request) -> web.Response:
    project_id = request.match_info["projectId"]
    cmd = await read_json(request, BatchFeatures)
    async with unit_of_work(request) as uow:
        flags, links = await queries.lock_archive_flags(uow.conn, cmd.features, project_id)
        events = domain.delete_features(
            cmd.features, project_id, flags=flags, links=links, now=datetime.now(UTC)
        )
        await _append_each(uow, request, events)
    return empty()


async def get_archived_features(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.ARCHIVED_FEATURES, None)
    return json_response(ArchivedFeatureList(features=[ArchivedFeature.from_row(r) for r in rows]))


async def get_archived_features_by_project_id(request: web.Request) -> web.Response:
    """An archived project's archived flags too; a project that never existed is a 404 (unlike
    Unleash, which answers an empty list)."""
    project_id = request.match_info["projectId"]
    async with reading(request) as conn:
        if not await conn.fetchval(queries.PROJECT_EXISTS, project_id):
            raise domain.project_missing(project_id)
        rows = await conn.fetch(queries.ARCHIVED_FEATURES, project_id)
    return json_response(ArchivedFeatureList(features=[ArchivedFeature.from_row(r) for r in rows]))


ROUTES = [
    Route(
        "DELETE",
        "/api/admin/projects/{projectId}/features/{featureName}",
        archive_feature,
        auth.DELETE_FEATURE,
        ok={202: None},
        errors=(InvalidOperation,),
    ),
    Route(
        "POST",
        "/api/admin/projects/{projectId}/archive",
        archive_features,
        auth.DELETE_FEATURE,
        body=BatchFeatures,
        ok={202: None},
        errors=(InvalidOperation,),
    ),
    Route(
        "POST",
        "/api/admin/projects/{projectId}/archive/validate",
        validate_archive_features,
        auth.DELETE_FEATURE,
        body=BatchFeatures,
        ok={200: ArchiveCheck},
    ),
    Route(
        "POST",
        "/api/admin/projects/{projectId}/revive",
        revive_features,
        auth.UPDATE_FEATURE,
        body=BatchFeatures,
    ),
    Route(
        "POST",
        "/api/admin/projects/{projectId}/delete",
        delete_features,
        auth.DELETE_FEATURE,
        body=BatchFeatures,
        errors=(InvalidOperation,),
    ),
    Route(
        "GET",
        "/api/admin/archive/features",
        get_archived_features,
        auth.READ,
        ok={200: ArchivedFeatureList},
        past=True,
    ),
    Route(
        "GET",
        "/api/admin/archive/features/{projectId}",
        get_archived_features_by_project_id,
        auth.READ,
        ok={200: ArchivedFeatureList},
        past=True,
    ),
    Route(
        "POST",
        "/api/admin/archive/revive/{featureName}",
        revive_feature,
        auth.UPDATE_FEATURE,
    ),
    Route(
        "DELETE",
        # Not `features`: that path is the archived list's, which only GET reads (a flag named
        # `features` leaves the archive through the project's delete route instead).
        "/api/admin/archive/{featureName:(?!features$)[^/]+}",
        delete_feature,
        auth.DELETE_FEATURE,
        errors=(InvalidOperation,),
    ),
]
