"""Operation 5 of spec.md (behavior.md section 5): search users by name, username and e-mail.

Results come in three tiers (exact, prefix, other substring), each in name-then-id order, and
only the first `offset + limit` are wanted. Sorting every match is what makes a broad search slow
at a million users, and PostgreSQL cannot tell a broad search from a narrow one (its estimates for
`LIKE '%x%'` are guesses), so the order of work is chosen here:

1. One statement answers the common case: exact matches (equality indexes); prefix matches from
   indexes grouped by the field's first three characters and ordered by name inside a group, so
   the first page is read in order and nothing is sorted; and third-tier matches among the
   first HEAD people in name order.
2. If those fill the page, or HEAD was everyone, that is the answer. Otherwise the share of
   matches among the first HEAD people estimates both how far a walk in name order must go to
   fill the page and how many matches the trigram indexes would return to be sorted; the
   cheaper is taken. A walk is bounded (WALK_SLACK times the estimate; when that is about
   everyone it runs to the end); if it falls short, the trigram indexes answer.

A wrong estimate costs time, never a wrong page: every way ends in the same order.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Final

from service import auth
from service.audit.past import reading
from service.http import Count, Param, Positive, Route, int_param, json_response, query_param
from service.users import queries
from service.users.responses import User, UserList, root_roles

if TYPE_CHECKING:
    from aiohttp import web

    from service.connections import Conn

MIN_QUERY: Final = 2
DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 1000
HEAD: Final = 1000  # people walked in name order by the first statement
# What fetching, checking and sorting one trigram match costs, in people walked in name order
# (measured at 1,000,000 users: a walk checks about four people a microsecond; a trigram match
# costs 1.4 to 7 microseconds).
MATCH_COST: Final = 10
WALK_SLACK: Final = 6  # a walk goes this many times as far as estimated before giving up
# A query made of one- and two-character pieces around spaces or dots ("a Be", "n.fa") gives
# the trigram index little to go on: about a quarter of everyone comes back to be checked.
WEAK_SHARE: Final = 0.25
GROUP_KEY: Final = 3  # characters: the prefix indexes group people by this much of a field
LAST_CHARACTER: Final = "\U0010ffff"
WORD_BREAK: Final = re.compile(r"[\W_]+")


async def search_users(request: web.Request) -> web.Response:
    limit = min(int_param(request, "limit", DEFAULT_LIMIT, 1), MAX_LIMIT)
    offset = int_param(request, "offset", 0, 0)
    q = (query_param(request, "q") or "").strip()
    async with reading(request) as conn:  # first: a bad `?at=` is a 400 whatever q is
        if len(q) < MIN_QUERY:  # behavior.md: no users, and the root roles there are
            return json_response(UserList(users=[], root_roles=root_roles()))
        if "\x00" in q:  # no stored text holds NUL (and PostgreSQL text cannot)
            return json_response(UserList(users=[], root_roles=[]))
        ids = (await find(conn, q, offset + limit))[offset:]
        rows = await conn.fetch(queries.SEARCH_ROWS, ids) if ids else []
    by_id = {row["id"]: row for row in rows}
    found = [by_id[i] for i in ids if i in by_id]
    return json_response(
        UserList(
            users=[User.from_row(row) for row in found],
            root_roles=root_roles(row["root_role"] for row in found),
        )
    )


def weak(q: str) -> bool:
    """No piece of three letters or digits, and some piece of one (the trigram index keys on
    whole words: `a` next to a space stands for every word that starts or ends with it)."""
    pieces = [len(piece) for piece in WORD_BREAK.split(q) if piece]
    return len(pieces) > 1 and max(pieces) < GROUP_KEY and min(pieces) == 1


async def find(conn: Conn, q: str, wanted: int) -> list[int]:
    """The ids of the first `wanted` users matching q (trimmed), in result order. PostgreSQL
    lower-cases q, one character for one (so its length is known here)."""
    if len(q) < GROUP_KEY:  # two characters: a range of groups
        sql, last = queries.SEARCH_FIRST_SHORT, q + LAST_CHARACTER
    elif len(q) == GROUP_KEY and q.isascii():  # one group (ASCII: surely three when lowered)
        sql, last = queries.SEARCH_FIRST_THREE, q
    else:
        sql, last = queries.SEARCH_FIRST_LONG, q
    first = await conn.fetchrow(sql, q, q, wanted, HEAD, q, last)
    assert first is not None  # one row, always
    ids: list[int] = [*first["exact"], *first["prefix"]][:wanted]
    missing = wanted - len(ids)
    rest: list[int] = first["rest"]
    if missing <= 0 or len(rest) >= missing or first["walked"] < HEAD:
        return ids + rest[:missing]
    pattern: str = first["pattern"]  # lower-cased by PostgreSQL, \\ % _ escaped for LIKE
    share = max(len(rest), 0.5) / HEAD
    walk = missing / share  # people to walk, expected
    everyone = max(first["users"], first["walked"])
    indexed = MATCH_COST * everyone * max(share, WEAK_SHARE if weak(q) else 0)
    if walk < indexed:
        # Near everyone anyway: walk to the end (LIMIT NULL), and the result is complete.
        bound = None if WALK_SLACK * walk >= everyone else math.ceil(WALK_SLACK * walk)
        found = await conn.fetch(queries.SEARCH_REST_WALK, pattern, missing, bound)
        if len(found) == missing or bound is None:
            return ids + [row["id"] for row in found]
    emails = not any(c.isspace() for c in q)  # an e-mail holds no space (domain.py)
    found = await conn.fetch(queries.SEARCH_REST_INDEXED, pattern, missing, emails)
    return ids + [row["id"] for row in found]


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
