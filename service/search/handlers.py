"""HTTP handler of the flag table: `GET /api/admin/search/features` (docs/behavior.md,
"The flag table"), as Unleash's UI calls it on its project page and its flags overview."""

from __future__ import annotations

from typing import Final

from aiohttp import web

from service import auth
from service.features.queries import lifecycle_times
from service.http.answers import json_response
from service.http.past import in_past, reading
from service.http.requests import int_param, principal, query_param, query_values
from service.http.routes import Count, Param, Positive, Route
from service.search import filters, queries
from service.search.filters import Search
from service.search.responses import SearchedFeature, SearchResult

# The totals this replica counted (queries.Totals); a past state's are never among them.
TOTALS: Final = web.AppKey("search_totals", queries.Totals)


def read_search(request: web.Request) -> Search:
    """The request's parameters as a Search; 400 for any that does not parse."""
    created = filters.date_bound("createdAt", query_param(request, "createdAt") or "")
    seen = filters.date_bound("lastSeenAt", query_param(request, "lastSeenAt") or "")
    sort_by, environment, descending = filters.sort(
        query_param(request, "sortBy"), query_param(request, "sortOrder")
    )
    return Search(
        terms=filters.terms(query_param(request, "query")),
        conditions=filters.conditions(
            {name: query_param(request, name) for name in filters.FILTER_NAMES}
        ),
        status=tuple(filters.status_pair(s) for s in query_values(request, "status") if s),
        archived=filters.archived(query_param(request, "archived")),
        created_before=created[1] if created and created[0] == "IS_BEFORE" else None,
        created_from=created[1] if created and created[0] == "IS_ON_OR_AFTER" else None,
        seen_before=seen[1] if seen and seen[0] == "IS_BEFORE" else None,
        seen_from=seen[1] if seen and seen[0] == "IS_ON_OR_AFTER" else None,
        favorites_first=filters.flag("favoritesFirst", query_param(request, "favoritesFirst")),
        sort_by=sort_by,
        sort_environment=environment,
        descending=descending,
        offset=int_param(request, "offset", 0, 0),
        limit=min(int_param(request, "limit", filters.DEFAULT_LIMIT, 1), filters.MAX_LIMIT),
    )


async def search_features(request: web.Request) -> web.Response:
    search = read_search(request)
    user_id = principal(request).account_id
    async with reading(request) as conn:
        totals = None if in_past(request) else request.app[TOTALS]
        total, rows, environments = await queries.page(conn, search, user_id, totals)
        times = await lifecycle_times(conn, rows)
    return json_response(
        SearchResult(
            features=[SearchedFeature.from_rows(r, environments[r["name"]], times) for r in rows],
            total=total,
        )
    )


def _operators(name: str, operators: tuple[str, ...], what: str) -> Param:
    return Param(
        name,
        str,
        f"{what}: OPERATOR:value[,value...], the operator one of {', '.join(operators)}",
    )


QUERY = (
    Param(
        "query",
        str,
        "Comma-separated texts, each a case-insensitive part of the name or "
        "description (`%`, `_` and `\\` are plain characters)",
    ),
    _operators("project", filters.IS_OPERATORS, "Projects by id"),
    _operators("type", filters.IS_OPERATORS, "Flag types"),
    _operators("createdBy", filters.IS_OPERATORS, "Creators by user id (-42: an API token)"),
    _operators("state", filters.IS_OPERATORS, "active, stale or potentially-stale"),
    _operators("lifecycle", filters.IS_OPERATORS, "Lifecycle stages"),
    _operators("tag", filters.INCLUDE_OPERATORS, "Tags, each type:value"),
    _operators("segment", filters.INCLUDE_OPERATORS, "Segments used by the flag's strategies"),
    Param("status", list[str], "environment:enabled or environment:disabled (repeatable; any)"),
    Param("createdAt", str, "IS_BEFORE:yyyy-mm-dd or IS_ON_OR_AFTER:yyyy-mm-dd (UTC)"),
    Param("lastSeenAt", str, "IS_BEFORE:yyyy-mm-dd or IS_ON_OR_AFTER:yyyy-mm-dd (UTC)"),
    Param("archived", str, "IS:true: archived flags only; IS:false (the default): active ones"),
    Param("favoritesFirst", str, "true: the caller's favourites first"),
    Param(
        "sortBy",
        str,
        "name, type, stale, project, createdAt (the default), lastSeenAt or environment:<name>",
    ),
    Param("sortOrder", str, "asc (the default) or desc"),
    Param("offset", Count, "Flags to skip (default 0)"),
    Param(
        "limit",
        Positive,
        f"Flags in the page (default {filters.DEFAULT_LIMIT}, at most {filters.MAX_LIMIT})",
    ),
)

ROUTES = [
    Route(
        "GET",
        "/api/admin/search/features",
        search_features,
        auth.READ,
        ok={200: SearchResult},
        query=QUERY,
        past=True,
    ),
]
