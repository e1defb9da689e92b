"""POST /api/admin/projects/:projectId/features/:featureName/clone (docs/behavior.md,
"Cloning a flag")."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.errors import NameExists
from service.features import domain, queries
from service.features.commands import CloneFeature
from service.features.responses import Feature
from service.http.answers import json_response
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Route

if TYPE_CHECKING:
    from aiohttp import web


def _new_id() -> str:
    return str(uuid.uuid4())


async def clone_feature(request: web.Request) -> web.Response:
    source_name, project_id = request.match_info["featureName"], request.match_info["projectId"]
    cmd = await read_json(request, CloneFeature)
    async with unit_of_work(request) as uow:
        # The target project first: the copy reads which environments it has.
        project_active = bool(await uow.conn.fetchval(queries.LOCK_PROJECT_SHARED, project_id))
        version = await queries.freed_stream(uow.conn, cmd.name)  # before the name's holder
        context = await queries.lock_clone_source(uow.conn, source_name, project_id, cmd.name)
        event = domain.clone_feature(
            cmd,
            source_name,
            project_id,
            context.source,
            project_active=project_active,
            holder_archived=context.holder_archived,
            new_id=_new_id,
            now=datetime.now(UTC),
        )
        await uow.append(
            domain.stream(cmd.name),
            [event],
            actor(request),
            new=version is None,
            at_version=version,
        )
        people = (await queries.collaborators(uow.conn, [cmd.name]))[cmd.name]
    assert context.environments is not None  # the decision needs the source
    return json_response(Feature.created(event, context.environments, people))


ROUTES = [
    Route(
        "POST",
        "/api/admin/projects/{projectId}/features/{featureName}/clone",
        clone_feature,
        auth.CREATE_FEATURE,
        body=CloneFeature,
        ok={200: Feature},
        errors=(NameExists,),
    ),
]
