"""Search users by name, username and e-mail (docs/behavior.md, "Searching users").

Results come in three tiers (exact, prefix, other substring), each in name-then-id order, and
only the first `offset + limit` are wanted. Sorting every match is what makes a broad search slow
at a million users, and PostgreSQL cannot tell a broad search from a narrow one (its estimates for
`LIKE '%x%'` are guesses), so the order of work is chosen by the search itself, in one call of
public.search_user_ids (sql/0020; one round trip, plans made once per connection):

1. Exact matches from the equality indexes. Prefix matches are counted in the same indexes (the
   range from the query to just past it); up to PROBE of them are sorted. More (a broad prefix)
   are read in name order from the indexes grouped by the first three characters, or, for two
   characters, by a walk in name order when that is short (WALK_MOST).
2. The third tier among the first HEAD people in name order; if that fills the page, or HEAD was
   everyone, that is the answer.
3. Otherwise the share of matches (among HEAD people, or, past SMALL people, in random pages)
   estimates how far a walk in name order must go past the HEAD people to fill the page, and
   the share of people whose joined fields hold the joined query how many the trigram index
   returns to be checked and sorted (sql/0017: search_people and search_mail join each field's
   words with one letter, so that pg_trgm keys on the query's own breaks); the cheaper is
   taken. A walk is bounded (WALK_SLACK times the estimate, and never beyond what the trigram
   index would cost); if it falls short, the trigram index answers (one on both columns,
   sql/0020).

A wrong estimate costs time, never a wrong page: every way ends in the same order.

The page's people are then answered from the records the replica remembers at their row versions
(service/users/records.py), fetching only the others; a past state (`?at=`) is read whole.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

import msgspec
from aiohttp import web

from service import auth
from service.http.answers import json_response
from service.http.past import in_past, reading
from service.http.requests import int_param, query_param
from service.http.routes import Count, Param, Positive, Route
from service.users import queries, records
from service.users.responses import User, UserList, UserPage, root_roles

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventlog.connections import Conn

MIN_QUERY: Final = 2
DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 1000
# People walked in name order first, for the third tier: enough for a query that many match
# to fill its page, few enough that the walk costs little when the trigram index answers
# (a name, a word of one; a walk of 1,000 is most of such a search: docs/benchmarks.md, "User
# search").
HEAD: Final = 200
# What fetching, checking and sorting one person the trigram index returns costs, in people
# walked in name order (a walk checks people several times faster than the trigram index
# returns them; the figures at a million users are in docs/benchmarks.md).
MATCH_COST: Final = 10
WALK_SLACK: Final = 6  # a walk goes this many times as far as estimated before giving up
# A broad two-character prefix is looked for by a walk in name order when that is at most this
# many people (a walk that stays short); else its groups are sorted.
WALK_MOST: Final = 25_000
# Prefix matches are first probed for as a range of the equality indexes; up to this many are
# sorted, more are read in name order from the grouped indexes.
PROBE: Final = 1000
# Up to this many people the first HEAD people tell the shares of step 3; in a larger table
# about SAMPLED people in random pages do (the first by name are not like everyone).
SMALL: Final = 20_000
SAMPLED: Final = 2_000

RECORDS: Final = web.AppKey("user_records", records.Records)
_encoder = msgspec.json.Encoder()


async def search_users(request: web.Request) -> web.Response:
    limit = min(int_param(request, "limit", DEFAULT_LIMIT, 1), MAX_LIMIT)
    offset = int_param(request, "offset", 0, 0)
    q = (query_param(request, "q") or "").strip()
    async with reading(request) as conn:  # first: a bad `?at=` is a 400 whatever q is
        if len(q) < MIN_QUERY:  # no users, every root role: docs/behavior.md, "Searching users"
            return json_response(UserList(users=[], root_roles=root_roles()))
        if "\x00" in q:  # no stored text holds NUL (and PostgreSQL text cannot)
            return json_response(UserList(users=[], root_roles=[]))
        if not in_past(request):
            page = await remembered(conn, request.app[RECORDS], q, offset + limit, offset)
            if page is not None:
                return json_response(page)
        found = await conn.fetch(queries.SEARCH, *arguments(q, offset + limit), offset)
    return json_response(
        UserList(
            users=[User.from_row(row) for row in found],
            root_roles=root_roles(row["root_role"] for row in found),
        )
    )


async def remembered(
    conn: Conn, held_records: records.Records, q: str, wanted: int, offset: int
) -> UserPage | None:
    """The page from the ids and versions it holds, with the records remembered at those
    versions and the others fetched; None when one of those changed in between (the caller
    then reads the page in one statement)."""
    page = await conn.fetchrow(queries.SEARCH_VERSIONS, *arguments(q, wanted), offset)
    assert page is not None  # an aggregate without GROUP BY: always one row
    return await page_of(conn, held_records, page["ids"], page["versions"], page["root_roles"])


async def page_of(
    conn: Conn,
    held_records: records.Records,
    ids: Sequence[int],
    versions: Sequence[int],
    role_ids: Sequence[int] | None,
) -> UserPage | None:
    """The people of these ids at these versions, from the records held and the rows of the
    others; None when one of those changed in between. role_ids: the root roles the page
    names (None: every one)."""
    now = time.monotonic()
    held = held_records.held(ids, versions, now)
    missing = records.wanted(ids, versions, held)
    encoded: dict[int, bytes] = {}
    if missing:
        fetched = await conn.fetch(queries.USERS_BY_ID, list(missing))
        if not records.unchanged(missing, fetched):
            return None
        for row in fetched:
            encoded[row["id"]] = record = _encoder.encode(User.from_row(row))
            held_records.put(row["id"], row["version"], record, now)
    users = [
        encoded[account_id] if record is None else record
        for account_id, record in zip(ids, held, strict=True)
    ]
    return UserPage(
        users=msgspec.Raw(b"[" + b",".join(users) + b"]"), root_roles=root_roles(role_ids)
    )


def arguments(q: str, wanted: int) -> tuple[object, ...]:
    """What public.search_user_ids takes: the query (trimmed), how many ids, and the constants
    above."""
    return (q, wanted, HEAD, PROBE, float(MATCH_COST), float(WALK_SLACK), WALK_MOST, SMALL, SAMPLED)


Q: Final = Param(
    "q",
    str,
    "Text found in the name, username or e-mail address (trimmed; under 2 characters: nobody)",
)
LIMIT: Final = Param(
    "limit", Positive, f"At most this many users (default {DEFAULT_LIMIT}, at most {MAX_LIMIT})"
)
OFFSET: Final = Param("offset", Count, "Skip this many users of the result (default 0)")

ROUTES = [
    Route(
        "GET",
        "/api/admin/user-admin/search",
        search_users,
        auth.READ,
        ok={200: UserList},
        query=(Q, LIMIT, OFFSET),
        past=True,
    )
]
