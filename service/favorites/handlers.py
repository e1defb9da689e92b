"""HTTP handlers of a person's favourites: `POST` and `DELETE` of
/api/admin/projects/:projectId/features/:featureName/favorites and
/api/admin/projects/:projectId/favorites (Unleash's paths; 200 with no body)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service import auth
from service.favorites import domain, queries
from service.features.domain import stream as flag_stream
from service.http.answers import empty
from service.http.requests import actor, principal, unit_of_work
from service.http.routes import Route
from service.projects.domain import project_stream

if TYPE_CHECKING:
    from aiohttp import web


def person(request: web.Request) -> int:
    """The caller's account id: favourites are a person's (OWN_ACCOUNT)."""
    account_id = principal(request).account_id
    assert account_id is not None  # OWN_ACCOUNT is held by people only
    return account_id


async def _flag(request: web.Request, *, favorite: bool) -> web.Response:
    name, project_id = request.match_info["featureName"], request.match_info["projectId"]
    user_id = person(request)
    decide = domain.favorite_feature if favorite else domain.unfavorite_feature
    async with unit_of_work(request) as uow:
        flag_project = await uow.conn.fetchval(queries.LOCK_FLAG, name)
        await uow.conn.execute(queries.LOCK_PERSON, user_id)
        events = decide(
            name,
            project_id,
            user_id,
            flag_project=flag_project,
            favorite=await uow.conn.fetchval(queries.IS_FAVORITE_FEATURE, user_id, name),
        )
        if events:
            await uow.append(flag_stream(name), events, actor(request))
    return empty()


async def _project(request: web.Request, *, favorite: bool) -> web.Response:
    project_id = request.match_info["projectId"]
    user_id = person(request)
    decide = domain.favorite_project if favorite else domain.unfavorite_project
    async with unit_of_work(request) as uow:
        active = await uow.conn.fetchval(queries.LOCK_PROJECT, project_id)
        await uow.conn.execute(queries.LOCK_PERSON, user_id)
        events = decide(
            project_id,
            user_id,
            active=active,
            favorite=await uow.conn.fetchval(queries.IS_FAVORITE_PROJECT, user_id, project_id),
        )
        if events:
            await uow.append(project_stream(project_id), events, actor(request))
    return empty()


async def favorite_feature(request: web.Request) -> web.Response:
    return await _flag(request, favorite=True)


async def unfavorite_feature(request: web.Request) -> web.Response:
    return await _flag(request, favorite=False)


async def favorite_project(request: web.Request) -> web.Response:
    return await _project(request, favorite=True)


async def unfavorite_project(request: web.Request) -> web.Response:
    return await _project(request, favorite=False)


FEATURE_FAVORITES = "/api/admin/projects/{projectId}/features/{featureName}/favorites"
PROJECT_FAVORITES = "/api/admin/projects/{projectId}/favorites"
ROUTES = [
    Route("POST", FEATURE_FAVORITES, favorite_feature, auth.OWN_ACCOUNT),
    Route("DELETE", FEATURE_FAVORITES, unfavorite_feature, auth.OWN_ACCOUNT),
    Route("POST", PROJECT_FAVORITES, favorite_project, auth.OWN_ACCOUNT),
    Route("DELETE", PROJECT_FAVORITES, unfavorite_project, auth.OWN_ACCOUNT),
]
