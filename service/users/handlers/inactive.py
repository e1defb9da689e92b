"""Operation 3 of spec.md (behavior.md section 3): list and delete inactive users."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from service import auth, store
from service.appkeys import POOL, SETTINGS
from service.http import Route, actor, empty, json_response, principal, read_json, transaction
from service.privacy import erasure
from service.users import domain, queries
from service.users.commands import DeleteUsers
from service.users.events import UserRecord
from service.users.responses import InactiveUser, InactiveUserList

if TYPE_CHECKING:
    from aiohttp import web

    from service.settings import Settings


def _threshold(settings: Settings, now: datetime) -> datetime:
    return now - timedelta(days=settings.user_inactivity_threshold_in_days)


async def list_inactive(request: web.Request) -> web.Response:
    since = _threshold(request.app[SETTINGS], datetime.now(UTC))
    rows = await request.app[POOL].fetch(queries.INACTIVE_USERS, since)
    return json_response(InactiveUserList(inactive_users=[InactiveUser.from_row(r) for r in rows]))


async def delete_inactive(request: web.Request) -> web.Response:
    """In one transaction, deletes exactly the listed ids that are inactive now; anything else
    listed (active users, service accounts, unknown ids, the caller) is left alone."""
    cmd = await read_json(request, DeleteUsers)
    settings = request.app[SETTINGS]
    now = datetime.now(UTC)
    caller = principal(request).account_id or -1
    async with transaction(request) as conn:
        rows = await conn.fetch(
            queries.LOCK_INACTIVE, _threshold(settings, now), sorted(set(cmd.ids)), caller
        )
        event = domain.delete_inactive(
            [
                UserRecord(
                    user_id=r["id"],
                    name=r["name"],
                    username=r["username"],
                    email=r["email"],
                    root_role=r["root_role"],
                    created_at=r["created_at"],
                    seen_at=r["seen_at"],
                )
                for r in rows
            ],
            inactive_days=settings.user_inactivity_threshold_in_days,
            now=now,
        )
        if event is not None:
            erased = await erasure.on_deletion(
                conn,
                [u.user_id for u in event.users],
                delay_days=settings.erasure_delay_days,
                now=now,
            )
            stream = ("user-batch", str(uuid.uuid4()))
            await store.append(
                conn,
                stream,
                [event, *erased],
                actor(request),
                new=True,
                erased=[e.person_id for e in erased],
            )
    return empty()


ROUTES = [
    Route(
        "GET",
        "/api/admin/user-admin/inactive",
        list_inactive,
        auth.ADMIN,
        ok={200: InactiveUserList},
    ),
    Route(
        "POST",
        "/api/admin/user-admin/inactive/delete",
        delete_inactive,
        auth.ADMIN,
        body=DeleteUsers,
    ),
]
