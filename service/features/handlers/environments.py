"""HTTP handlers of what concerns many flags of a project's environment: its default strategy
(what switching a flag on there adds when it has no strategy that runs), and switching many
flags on or off there at once."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.errors import NotFound, ValidationError
from service.features import domain, queries
from service.features.commands import BulkToggle, StrategyBody
from service.features.handlers.strategies import ACTIVATE, _flag_param
from service.features.responses import DefaultStrategy
from service.http.answers import empty, json_response
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Route

if TYPE_CHECKING:
    from aiohttp import web

DEFAULT_STRATEGY = "/api/admin/projects/{projectId}/environments/{environment}/default-strategy"
BULK = "/api/admin/projects/{projectId}/bulk_features/environments/{environment}"


async def add_default_strategy_to_project_environment(request: web.Request) -> web.Response:
    project, environment = request.match_info["projectId"], request.match_info["environment"]
    body = await read_json(request, StrategyBody)
    async with unit_of_work(request) as uow:
        enabled = await uow.conn.fetchval(queries.LOCK_PROJECT_ENVIRONMENT, project, environment)
        event = domain.set_default_strategy(
            project,
            environment,
            body,
            environment_enabled=enabled,
            missing_segments=await queries.missing_segments(uow.conn, body.segments),
        )
        await uow.append(("project", project), [event], actor(request))
    return json_response(DefaultStrategy.of(event.strategy))


async def _bulk(request: web.Request, *, on: bool) -> web.Response:
    """Each listed flag switched on (or off) in the environment as its own route does it, its
    events on its stream; all in one transaction: one flag refused refuses them all."""
    project, environment = request.match_info["projectId"], request.match_info["environment"]
    activate = _flag_param(request, ACTIVATE)
    body = await read_json(request, BulkToggle)
    async with unit_of_work(request) as uow:
        default = await queries.default_strategy(uow.conn, project, environment) if on else None
        # In name order: two bulk requests over the same flags lock them in the same order.
        for name in sorted(set(body.features)):
            target = domain.Target(name, project, environment)
            state = await queries.environment_state(uow.conn, target, lock=True)
            if state is None:
                raise NotFound(f'There\'s no feature named "{name}" in project "{project}".')
            events: list[domain.SwitchEvent]
            if on:
                events = domain.switch_on(
                    target,
                    state,
                    strategies=await queries.strategies_in(uow.conn, target),
                    activate=activate,
                    new_id=lambda: str(uuid.uuid4()),
                    now=datetime.now(UTC),
                    default=default,
                )
            else:
                off = domain.switch_environment(target, state, on=False)
                events = [] if off is None else [off]
            if events:
                await uow.append(domain.stream(name), events, actor(request))
    return empty()


async def bulk_toggle_features_environment_on(request: web.Request) -> web.Response:
    return await _bulk(request, on=True)


async def bulk_toggle_features_environment_off(request: web.Request) -> web.Response:
    return await _bulk(request, on=False)


ROUTES = [
    Route(
        "POST",
        DEFAULT_STRATEGY,
        add_default_strategy_to_project_environment,
        auth.UPDATE_PROJECT,
        body=StrategyBody,
        ok={200: DefaultStrategy},
        errors=(ValidationError,),
    ),
    Route(
        "POST",
        f"{BULK}/on",
        bulk_toggle_features_environment_on,
        auth.UPDATE_FEATURE,
        body=BulkToggle,
        query=(ACTIVATE,),
    ),
    Route(
        "POST",
        f"{BULK}/off",
        bulk_toggle_features_environment_off,
        auth.UPDATE_FEATURE,
        body=BulkToggle,
        query=(ACTIVATE,),
    ),
]
