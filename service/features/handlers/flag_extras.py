"""HTTP handlers of the rest of a flag's routes (issue 43): `PUT` of the flag, one
environment of it, its flag-level variants (Unleash's deprecated ones: every environment's),
its links, and its lifecycle with the counts per stage."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

from service import auth
from service.errors import InvalidOperation, NotFound
from service.features import domain, queries
from service.features.commands import (
    CompleteFeature,
    LinkBody,
    UpdateFeature,
    Variants,
    VariantsBatch,
)
from service.features.patches import Patch
from service.features.responses import (
    Feature,
    FeatureEnvironmentDetail,
    Lifecycle,
    LifecycleCount,
    VariantList,
    stages,
)
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, read_json, unit_of_work
from service.http.routes import Route

if TYPE_CHECKING:
    from aiohttp import web

    from eventlog.connections import Conn
    from eventlog.events.features import FeatureStaleSet, FeatureUpdated
    from service.features.domain import FlagEvent

    Event = FlagEvent | FeatureUpdated | FeatureStaleSet
    from service.work import UnitOfWork

FLAG = "/api/admin/projects/{projectId}/features/{featureName}"


def _flag(request: web.Request) -> tuple[str, str]:
    return request.match_info["featureName"], request.match_info["projectId"]


async def update_feature(request: web.Request) -> web.Response:
    """The flag's fields as a whole (`archived: true` archives it too, as in Unleash)."""
    name, project_id = _flag(request)
    body = await read_json(request, UpdateFeature)
    async with unit_of_work(request) as uow:
        flags, links = await queries.lock_archive_flags(uow.conn, [name], project_id)
        row = await uow.conn.fetchrow(queries.LOCK_FLAG_FIELDS, name, project_id)
        state = None if row is None else domain.FlagFields(**dict(row))
        events: list[Event] = list(domain.update_feature(name, project_id, body, state))
        if body.archived:
            now = datetime.now(UTC)
            events += domain.archive_feature(
                name, project_id, flags.get(name), links=links, now=now
            )
        if events:
            await _append(uow, request, events)
        found = await queries.feature_in_project(uow.conn, name, project_id)
    assert found is not None  # locked above, changed in this transaction
    return json_response(Feature.from_rows(*found))


async def _append(uow: UnitOfWork, request: web.Request, events: list[Event]) -> None:
    """Each flag's events to its stream, in the order decided (archiving a flag may change
    the flags depending on it)."""
    by_flag: dict[str, list[Event]] = {}
    for event in events:
        by_flag.setdefault(event.name, []).append(event)
    for flag, appended in by_flag.items():
        await uow.append(domain.stream(flag), appended, actor(request))


async def get_feature_environment(request: web.Request) -> web.Response:
    name, project_id = _flag(request)
    environment = request.match_info["environment"]
    async with reading(request) as conn:
        found = await queries.feature_in_project(conn, name, project_id)
    shown = None if found is None else Feature.from_rows(*found)
    if shown is None or shown.archived:
        raise NotFound(f"There is no active flag named {name} in project {project_id}")
    for entry in shown.environments:
        if entry.name == environment:
            return json_response(FeatureEnvironmentDetail.of(entry))
    raise NotFound(f"Could not find {name} in {environment}")


# --- flag-level variants: Unleash's deprecated ones --------------------------------------------


async def _environments(conn: Conn, name: str, project_id: str, *, lock: bool) -> list[str]:
    """The active flag's project's environments in display order (its row locked first when
    `lock`); NotFound for no such flag."""
    query = queries.LOCK_ACTIVE_FEATURE if lock else queries.ACTIVE_FEATURE
    if await conn.fetchval(query, name, project_id) is None:
        raise NotFound(f"There is no active flag named {name} in project {project_id}")
    found = await conn.fetchrow(queries.CREATE_CONTEXT, project_id, name)
    assert found is not None  # a SELECT from an aggregate has its one row
    return list(found["names"])


async def _flag_variants(conn: Conn, name: str, environments: list[str]) -> VariantList:
    """The flag-level variants Unleash shows: those of the project's first environment."""
    if not environments:
        return VariantList(variants=[])
    return VariantList.from_column(await conn.fetchval(queries.VARIANTS, name, environments[0]))


async def get_flag_variants(request: web.Request) -> web.Response:
    name, project_id = _flag(request)
    async with reading(request) as conn:
        environments = await _environments(conn, name, project_id, lock=False)
        return json_response(await _flag_variants(conn, name, environments))


async def _set_everywhere(
    uow: UnitOfWork, request: web.Request, name: str, project_id: str, variants: Variants
) -> web.Response:
    environments = await _environments(uow.conn, name, project_id, lock=True)
    if not environments:
        raise InvalidOperation(f"Project {project_id} has no environment to set variants in")
    states = {
        environment: await queries.environment_state(
            uow.conn, domain.Target(name, project_id, environment)
        )
        for environment in environments
    }
    batch = VariantsBatch(variants=variants, environments=environments)
    events = domain.set_variants_batch(name, project_id, batch, states)
    await uow.append(domain.stream(name), events, actor(request))
    return json_response(await _flag_variants(uow.conn, name, environments))


async def set_flag_variants(request: web.Request) -> web.Response:
    """The same variants in every environment of the flag's project, as Unleash does."""
    name, project_id = _flag(request)
    variants = await read_json(request, Variants)
    async with unit_of_work(request) as uow:
        return await _set_everywhere(uow, request, name, project_id, variants)


async def patch_flag_variants(request: web.Request) -> web.Response:
    """JSON Patch over the variants GET shows; the result set everywhere as a PUT sets it."""
    name, project_id = _flag(request)
    operations = await read_json(request, Patch)
    async with unit_of_work(request) as uow:
        environments = await _environments(uow.conn, name, project_id, lock=True)
        current = msgspec.to_builtins((await _flag_variants(uow.conn, name, environments)).variants)
        variants = domain.patched_variants(current, operations)
        return await _set_everywhere(uow, request, name, project_id, variants)


# --- links ------------------------------------------------------------------------------------


async def add_link(request: web.Request) -> web.Response:
    name, project_id = _flag(request)
    body = await read_json(request, LinkBody)
    async with unit_of_work(request) as uow:
        active = await uow.conn.fetchval(queries.LOCK_ACTIVE_FEATURE, name, project_id)
        count = await uow.conn.fetchval(queries.LINK_COUNT, name)
        event = domain.add_link(
            name,
            project_id,
            body,
            active=active is not None,
            links=count,
            link_id=str(uuid.uuid4()),
            now=datetime.now(UTC),
        )
        await uow.append(domain.stream(name), [event], actor(request))
    return empty(204)


async def update_link(request: web.Request) -> web.Response:
    name, project_id = _flag(request)
    link_id = request.match_info["linkId"]
    body = await read_json(request, LinkBody)
    async with unit_of_work(request) as uow:
        active = await uow.conn.fetchval(queries.LOCK_ACTIVE_FEATURE, name, project_id)
        owner = await uow.conn.fetchval(queries.LINK_OWNER, link_id)
        event = domain.update_link(
            name, project_id, link_id, body, active=active is not None, owner=owner
        )
        await uow.append(domain.stream(name), [event], actor(request))
    return empty(204)


async def remove_link(request: web.Request) -> web.Response:
    name, project_id = _flag(request)
    link_id = request.match_info["linkId"]
    async with unit_of_work(request) as uow:
        active = await uow.conn.fetchval(queries.LOCK_ACTIVE_FEATURE, name, project_id)
        owner = await uow.conn.fetchval(queries.LINK_OWNER, link_id)
        event = domain.remove_link(
            name, project_id, link_id, active=active is not None, owner=owner
        )
        await uow.append(domain.stream(name), [event], actor(request))
    return empty(204)


# --- the lifecycle ----------------------------------------------------------------------------


async def get_lifecycle(request: web.Request) -> web.Response:
    name, project_id = _flag(request)
    async with reading(request) as conn:
        row = await conn.fetchrow(queries.LIFECYCLE, name, project_id)
        if row is None:
            raise NotFound(f"There is no flag named {name} in project {project_id}")
        times = await queries.lifecycle_times(conn, [row])
    return json_response(stages(row, times))


async def _completion(uow: UnitOfWork, name: str, project_id: str) -> domain.Completion | None:
    row = await uow.conn.fetchrow(queries.LOCK_COMPLETION, name, project_id)
    return None if row is None else domain.Completion(row["status"], row["status_value"])


async def complete(request: web.Request) -> web.Response:
    name, project_id = _flag(request)
    body = await read_json(request, CompleteFeature)
    async with unit_of_work(request) as uow:
        state = await _completion(uow, name, project_id)
        event = domain.complete_feature(name, project_id, body, state, datetime.now(UTC))
        if event is not None:
            await uow.append(domain.stream(name), [event], actor(request))
    return empty()


async def uncomplete(request: web.Request) -> web.Response:
    name, project_id = _flag(request)
    async with unit_of_work(request) as uow:
        state = await _completion(uow, name, project_id)
        event = domain.uncomplete_feature(name, project_id, state)
        if event is not None:
            await uow.append(domain.stream(name), [event], actor(request))
    return empty()


async def lifecycle_count(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        row = await conn.fetchrow(queries.LIFECYCLE_COUNTS)
    assert row is not None  # an aggregate has its one row
    return json_response(LifecycleCount.from_row(row))


ROUTES = [
    Route(
        "PUT",
        FLAG,
        update_feature,
        auth.UPDATE_FEATURE,
        body=UpdateFeature,
        ok={200: Feature},
        errors=(InvalidOperation,),
    ),
    Route(
        "GET",
        FLAG + "/environments/{environment}",
        get_feature_environment,
        auth.READ,
        ok={200: FeatureEnvironmentDetail},
        past=True,
    ),
    Route(
        "GET", FLAG + "/variants", get_flag_variants, auth.READ, ok={200: VariantList}, past=True
    ),
    Route(
        "PUT",
        FLAG + "/variants",
        set_flag_variants,
        auth.UPDATE_FEATURE,
        body=Variants,
        ok={200: VariantList},
        errors=(InvalidOperation,),
    ),
    Route(
        "PATCH",
        FLAG + "/variants",
        patch_flag_variants,
        auth.UPDATE_FEATURE,
        body=Patch,
        ok={200: VariantList},
        errors=(InvalidOperation,),
    ),
    Route(
        "POST",
        FLAG + "/link",
        add_link,
        auth.UPDATE_FEATURE,
        body=LinkBody,
        ok={204: None},
        errors=(InvalidOperation,),
    ),
    Route(
        "PUT",
        FLAG + "/link/{linkId}",
        update_link,
        auth.UPDATE_FEATURE,
        body=LinkBody,
        ok={204: None},
    ),
    Route("DELETE", FLAG + "/link/{linkId}", remove_link, auth.UPDATE_FEATURE, ok={204: None}),
    Route(
        "GET", FLAG + "/lifecycle", get_lifecycle, auth.READ, ok={200: list[Lifecycle]}, past=True
    ),
    Route(
        "POST",
        FLAG + "/lifecycle/complete",
        complete,
        auth.UPDATE_FEATURE,
        body=CompleteFeature,
    ),
    Route("POST", FLAG + "/lifecycle/uncomplete", uncomplete, auth.UPDATE_FEATURE),
    Route(
        "GET",
        "/api/admin/lifecycle/count",
        lifecycle_count,
        auth.READ,
        ok={200: LifecycleCount},
        past=True,
    ),
]
