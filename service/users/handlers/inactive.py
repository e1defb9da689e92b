"""List and delete inactive users (docs/behavior.md, "Deleting inactive users")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from service import auth
from service.appkeys import POOL, SETTINGS
from service.http.answers import empty, json_response
from service.http.requests import actor, principal, read_json
from service.http.routes import Route
from service.users import deletions, queries
from service.users.commands import DeleteUsers
from service.users.responses import InactiveUser, InactiveUserList

if TYPE_CHECKING:
    from aiohttp import web


async def list_inactive(request: web.Request) -> web.Response:
    since = deletions.threshold(request.app[SETTINGS], datetime.now(UTC))
    rows = await request.app[POOL].fetch(queries.INACTIVE_USERS, since)
    return json_response(InactiveUserList(inactive_users=[InactiveUser.from_row(r) for r in rows]))


async def delete_inactive(request: web.Request) -> web.Response:
    """Deletes exactly the listed ids that are inactive when its transaction runs; anything
    else listed (active users, service accounts, unknown ids, the caller) is left alone. The
    transaction may hold other requests' deletions too (group commit), each with its own
    event as if they had run one after another; the answer waits for its COMMIT."""
    cmd = await read_json(request, DeleteUsers)
    deletion = deletions.Deletion(
        sorted(set(cmd.ids)), principal(request).account_id or -1, actor(request)
    )
    await request.app[deletions.DELETIONS].submit(deletion)
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
