"""HTTP handlers of /api/admin/addons: integrations and their deliveries."""

from __future__ import annotations

import asyncio
import functools
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

import msgspec

from service import auth
from service.addons import domain, network, providers, queries, secrets
from service.addons.commands import SaveAddon
from service.addons.responses import AddonAnswer, AddonList, Delivery, DeliveryList
from service.appkeys import POOL, SETTINGS
from service.audit import logsearch
from service.audit import queries as audit_queries
from service.audit.responses import log_event
from service.errors import ValidationError
from service.http.answers import empty, json_response
from service.http.past import reading
from service.http.requests import actor, int_param, read_json, unit_of_work
from service.http.routes import Param, Route

if TYPE_CHECKING:
    from collections.abc import Mapping

    import asyncpg
    from aiohttp import web

    from eventlog.events.addons import ParameterValue
    from service.addons.network import Network

ONE = "/api/admin/addons/{id}"
LOOKUP_SECONDS = 5.0  # a receiver's name must resolve within this long when saved
DELIVERIES_SHOWN = 50  # a page of deliveries, as Unleash's
MAX_DELIVERIES_SHOWN = 100


@functools.cache
def _allowed_of(text: str | None) -> tuple[Network, ...]:
    return network.parse_allowed(text)


def allowed(request: web.Request) -> tuple[Network, ...]:
    return _allowed_of(request.app[SETTINGS].integration_allowed_networks)


# What JavaScript's Number() reads as a number, written in decimal.
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def addon_id_or_404(value: str) -> int:
    # Ids start at 1, as the document says; a bigint has at most 18 digits here.
    if not (value.isascii() and value.isdigit()) or len(value) > 18 or int(value) < 1:
        raise domain.addon_missing()
    return int(value)


def _addon(row: asyncpg.Record | None) -> domain.Addon | None:
    return None if row is None else domain.Addon.from_row(row)


async def check_receivers(
    provider: str, parameters: Mapping[str, ParameterValue], allowed: tuple[Network, ...]
) -> None:
    """Every URL parameter of the provider: its syntax, and where its name resolves to now
    (checked again at each delivery)."""
    definition = providers.provider(provider)
    if definition is None:
        return  # the decision names the unknown provider
    for parameter in definition.parameters:
        value = parameters.get(parameter.name)
        if parameter.type != "url" or value is None:
            continue
        if not isinstance(value, str):
            raise ValidationError(
                f"The {parameter.name} parameter is a URL: give it as a string "
                f"- at `$.parameters.{parameter.name}`"
            )
        if not value.strip():
            continue
        url = value.strip()
        network.check_url(url, allowed)
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        assert parts.hostname is not None  # check_url refuses a URL without a host
        try:
            async with asyncio.timeout(LOOKUP_SECONDS):
                await network.check_host(parts.hostname, port, allowed)
        except (OSError, TimeoutError):
            # Where a name leads cannot be judged before it resolves: saved, it would fail at
            # every delivery.
            raise ValidationError(
                f"The host {parts.hostname} of the {parameter.name} parameter does not resolve "
                f"to an address - at `$.parameters.{parameter.name}`"
            ) from None


async def list_addons(request: web.Request) -> web.Response:
    async with reading(request) as conn:
        rows = await conn.fetch(queries.LIST_ADDONS)
    return json_response(
        AddonList(
            addons=[AddonAnswer.from_row(r) for r in rows], providers=list(providers.PROVIDERS)
        )
    )


async def get_addon(request: web.Request) -> web.Response:
    addon_id = addon_id_or_404(request.match_info["id"])
    async with reading(request) as conn:
        row = await conn.fetchrow(queries.GET_ADDON, addon_id)
    if row is None:
        raise domain.addon_missing()
    return json_response(AddonAnswer.from_row(row))


async def create_addon(request: web.Request) -> web.Response:
    cmd = await read_json(request, SaveAddon)
    parameters = domain.given_parameters(cmd)
    await check_receivers(cmd.provider, parameters, allowed(request))
    new_secret = auth.new_secret()
    async with unit_of_work(request) as uow:
        addon_id = await uow.conn.fetchval(queries.NEXT_ADDON_ID)
        key = await secrets.new_key(uow.conn, addon_id)
        event = domain.create_addon(
            cmd,
            parameters,
            addon_id=addon_id,
            new_secret=new_secret,
            seal=secrets.sealer(key, addon_id),
            now=datetime.now(UTC),
        )
        await uow.append(domain.stream(addon_id), [event], actor(request), new=True)
        row = await uow.conn.fetchrow(queries.GET_ADDON, addon_id)
    assert row is not None  # written in this transaction
    shown = secrets.opened(key, addon_id, event.sealed)[domain.SIGNING_SECRET]
    return json_response(AddonAnswer.from_row(row, signing_secret=shown), status=201)


async def update_addon(request: web.Request) -> web.Response:
    addon_id = addon_id_or_404(request.match_info["id"])
    cmd = await read_json(request, SaveAddon)
    async with unit_of_work(request) as uow:
        addon = _addon(await uow.conn.fetchrow(queries.LOCK_ADDON, addon_id))
        if addon is None:
            raise domain.addon_missing()
        key = await secrets.key_of(uow.conn, addon_id)
        if key is None:
            raise domain.addon_missing()  # its key goes with it: deleted meanwhile
        stored = secrets.opened(key, addon_id, addon.sealed)
        parameters = domain.given_parameters(cmd, stored)
        # A URL kept as it was is judged at each delivery; judged here as well, an integration
        # whose receiver the rules refuse since could not even be switched off.
        kept = {**addon.parameters, **stored}
        changed = {k: v for k, v in parameters.items() if kept.get(k) != v}
        await check_receivers(addon.provider, changed, allowed(request))
        event = domain.update_addon(
            addon,
            cmd,
            parameters,
            signing_secret=stored[domain.SIGNING_SECRET],
            seal=secrets.sealer(key, addon_id),
        )
        if event is not None:
            await uow.append(domain.stream(addon_id), [event], actor(request))
        row = await uow.conn.fetchrow(queries.GET_ADDON, addon_id)
    assert row is not None  # locked in this transaction
    return json_response(AddonAnswer.from_row(row))


async def delete_addon(request: web.Request) -> web.Response:
    addon_id = addon_id_or_404(request.match_info["id"])
    async with unit_of_work(request) as uow:
        addon = _addon(await uow.conn.fetchrow(queries.LOCK_ADDON, addon_id))
        event = domain.delete_addon(addon)
        if event is not None:
            await uow.append(domain.stream(addon_id), [event], actor(request))
            await secrets.destroy(uow.conn, addon_id)
            await uow.conn.execute(queries.FORGET_DELIVERIES, addon_id)
    return empty()


async def list_deliveries(request: web.Request) -> web.Response:
    text = request.match_info["id"]
    if not NUMBER.fullmatch(text):
        # As Unleash: an id that is no number is bad input here; any number has a list.
        raise ValidationError("Invalid integration configuration id")
    limit = int_param(request, "limit", DELIVERIES_SHOWN, 0)
    if not 0 < limit <= MAX_DELIVERIES_SHOWN:
        limit = DELIVERIES_SHOWN  # as Unleash: a limit out of range is its default
    offset = int_param(request, "offset", 0, 0)
    if not text.isdigit() or len(text) > 18 or int(text) < 1:
        return json_response(DeliveryList(integration_events=[]))  # no such integration
    addon_id = int(text)
    # Deliveries are not a read model of the log: no past state (`?at=`) to read them in.
    async with request.app[POOL].acquire() as conn:
        if await conn.fetchrow(queries.GET_ADDON, addon_id) is None:
            # As Unleash: none, not a 404. Its UI asks for the last delivery of each card it
            # still shows, so right after a deletion it asks for the deleted one's.
            return json_response(DeliveryList(integration_events=[]))
        rows = await conn.fetch(queries.DELIVERIES, addon_id, limit, offset)
        entries = await logsearch.at_positions(conn, [r["position"] for r in rows])
        contexts = await audit_queries.contexts(conn, entries)
    events = {
        e.recorded.position: msgspec.to_builtins(log_event(e, contexts[e.recorded.position]))
        for e in entries
        if e.recorded.position is not None
    }
    shown = [Delivery.from_row(r, events.get(r["position"], {})) for r in rows]
    return json_response(DeliveryList(integration_events=shown))


_ID = {"id": Annotated[int, msgspec.Meta(ge=1)]}
# As Unleash: any number names a list (empty when no integration has it); only text is refused.
_ANY_NUMBER = {"id": Annotated[float, msgspec.Meta(description="an integration's id")]}
ROUTES = [
    Route("GET", "/api/admin/addons", list_addons, auth.READ, ok={200: AddonList}, past=True),
    Route(
        "POST",
        "/api/admin/addons",
        create_addon,
        auth.CREATE_ADDON,
        body=SaveAddon,
        ok={201: AddonAnswer},
    ),
    Route("GET", ONE, get_addon, auth.READ, ok={200: AddonAnswer}, params=_ID, past=True),
    Route(
        "PUT",
        ONE,
        update_addon,
        auth.UPDATE_ADDON,
        body=SaveAddon,
        ok={200: AddonAnswer},
        params=_ID,
    ),
    Route("DELETE", ONE, delete_addon, auth.DELETE_ADDON, params=_ID),
    Route(
        "GET",
        ONE + "/events",
        list_deliveries,
        auth.ADMIN,
        ok={200: DeliveryList},
        params=_ANY_NUMBER,
        query=(
            Param("limit", Annotated[int, msgspec.Meta(ge=0)], "deliveries shown (1-100; 50)"),
            Param("offset", Annotated[int, msgspec.Meta(ge=0)], "deliveries skipped, newest first"),
        ),
    ),
]
