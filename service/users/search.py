"""Operation 5 of spec.md (behavior.md section 5): search users by name, username and e-mail."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from service import auth
from service.appkeys import POOL
from service.errors import ValidationError
from service.http import Route, json_response
from service.users import queries

if TYPE_CHECKING:
    from aiohttp import web

MIN_QUERY: Final = 2
DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 1000


def like_escape(text: str) -> str:
    """`\\`, `%` and `_` match themselves (Unleash treats them as wildcards)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _int_param(request: web.Request, name: str, default: int, low: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:
        raise ValidationError(f"{name} must be a whole number >= {low} - at `{name}`")
    value = int(raw)
    if value < low:
        raise ValidationError(f"{name} must be a whole number >= {low} - at `{name}`")
    return value


async def search_users(request: web.Request) -> web.Response:
    limit = min(_int_param(request, "limit", DEFAULT_LIMIT, 1), MAX_LIMIT)
    offset = _int_param(request, "offset", 0, 0)
    q = request.query.get("q", "").strip()
    if len(q) < MIN_QUERY:  # behavior.md: no users, and the root roles there are
        return json_response({"users": [], "rootRoles": queries.root_roles_json()})
    if "\x00" in q:  # no stored text holds NUL (and PostgreSQL text cannot)
        return json_response({"users": [], "rootRoles": []})
    needle = q.lower()
    rows = await request.app[POOL].fetch(
        queries.SEARCH_USERS, needle, like_escape(needle), offset + limit, offset, limit
    )
    users = [queries.user_json(row) for row in rows]
    roles = {row["root_role"] for row in rows}
    return json_response({"users": users, "rootRoles": queries.root_roles_json(roles)})


ROUTES = [Route("GET", "/api/admin/user-admin/search", search_users, auth.READ)]
