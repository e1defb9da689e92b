"""The checks `verify` makes of the log itself (positions, stream versions, the hash chain, the
derived columns), and the count of a person's data that erase-user reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import msgspec

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from eventlog.connections import Conn

POSITIONS = """
SELECT count(*) AS count, coalesce(min(position), 0) AS low, coalesce(max(position), 0) AS high,
       (SELECT position FROM log_head WHERE id = 1) AS head
FROM events
"""
INCONSISTENT_STREAMS = """
SELECT coalesce(e.stream_type, s.stream_type) AS stream_type,
       coalesce(e.stream_key, s.stream_key) AS stream_key, e.n AS events, e.hi AS last_version,
       s.version AS recorded_version
FROM (SELECT stream_type, stream_key, count(*) AS n, max(stream_version) AS hi,
             min(stream_version) AS lo
      FROM events GROUP BY stream_type, stream_key) e
FULL JOIN streams s ON s.stream_type = e.stream_type AND s.stream_key = e.stream_key
WHERE e.n IS NULL OR e.lo <> 1 OR e.n <> e.hi OR s.version IS DISTINCT FROM e.hi::integer
LIMIT $1
"""
STREAM_COUNT = "SELECT count(*) FROM streams"
CHAIN = """
SELECT position, type, schema_version, data::text AS data, prev_hash, hash,
       event_canonical(position, stream_type, stream_key, stream_version, event_id, type,
                       schema_version, data, metadata, recorded_at) AS canonical
FROM events ORDER BY position
"""


class Positions(msgspec.Struct, frozen=True, kw_only=True):
    count: int
    low: int
    high: int
    head: int


class StreamMismatch(msgspec.Struct, frozen=True, kw_only=True):
    stream_type: str
    stream_key: str
    events: int | None
    last_version: int | None
    recorded_version: int | None


class ChainLink(msgspec.Struct, frozen=True, kw_only=True):
    """One event as the hash chain covers it: `canonical` is the text its hash is over."""

    position: int
    type: str
    schema_version: int
    data: str
    prev_hash: bytes
    hash: bytes
    canonical: str


async def positions(conn: Conn) -> Positions:
    row = await conn.fetchrow(POSITIONS)
    assert row is not None  # an aggregate always has its row
    return Positions(count=row["count"], low=row["low"], high=row["high"], head=row["head"])


async def stream_count(conn: Conn) -> int:
    return int(await conn.fetchval(STREAM_COUNT))


async def inconsistent_streams(conn: Conn, limit: int = 20) -> list[StreamMismatch]:
    """Streams whose versions are not 1..k, or whose `streams` row disagrees with the events."""
    return [
        StreamMismatch(
            stream_type=r["stream_type"],
            stream_key=r["stream_key"],
            events=r["events"],
            last_version=r["last_version"],
            recorded_version=r["recorded_version"],
        )
        for r in await conn.fetch(INCONSISTENT_STREAMS, limit)
    ]


# Events whose derived columns (filled by the append functions: docs/events.md) differ from
# what their functions give: none, in a log that only the append functions wrote.
UNDERIVED = """
SELECT position FROM events
WHERE kind IS DISTINCT FROM event_kind(type, data)
   OR project IS DISTINCT FROM event_project(stream_type, stream_key, data)
   OR actor_user_id IS DISTINCT FROM event_actor_user_id(metadata)
ORDER BY position LIMIT $1
"""


async def underived(conn: Conn, limit: int) -> list[int]:
    """The first positions (at most `limit`) whose kind, project or actor_user_id is not what
    the event gives."""
    return [r["position"] for r in await conn.fetch(UNDERIVED, limit)]


async def chain(conn: Conn, prefetch: int = 2000) -> AsyncIterator[ChainLink]:
    """Every event in position order (inside the caller's transaction: a cursor needs one)."""
    async for row in conn.cursor(CHAIN, prefetch=prefetch):
        yield ChainLink(
            position=row["position"],
            type=row["type"],
            schema_version=row["schema_version"],
            data=row["data"],
            prev_hash=bytes(row["prev_hash"]),
            hash=bytes(row["hash"]),
            canonical=row["canonical"],
        )


# --- a person's data in the log (erase-user's report) ------------------------------------------

# Events that hold a person's data: sealed (in data or metadata), or plain (written before
# encryption: an actor's name, a user stream's event, a batch's record of them). A full scan.
PERSONAL_DATA_OF = """
SELECT count(*) FILTER (WHERE data::text LIKE $2 OR metadata::text LIKE $2) AS sealed,
       count(*) FILTER (WHERE
           (actor_user_id = $1 AND metadata ->> 'actor_kind' = 'user'
            AND jsonb_typeof(metadata -> 'actor_name') = 'string'
            AND metadata ->> 'actor_name' <> '[erased]')
        OR (stream_type = 'user' AND stream_key = $1::text
            AND type IN ('UserCreated', 'UserUpdated', 'UserDeleted')
            AND jsonb_path_exists(data,
                '$ ? (@.name.type() == "string" && @.name != "[erased]"
                   || @.username.type() == "string" && @.username != "[erased]"
                   || @.email.type() == "string" && @.email != "[erased]")'))
        OR (type IN ('UsersDeleted', 'UsersImported')
            AND jsonb_path_exists(data,
                '$.users[*] ? (@.user_id == $id && (
                     @.name.type() == "string" && @.name != "[erased]"
                  || @.username.type() == "string" && @.username != "[erased]"
                  || @.email.type() == "string" && @.email != "[erased]"))',
                jsonb_build_object('id', $1::bigint)))
       ) AS plain
FROM events
"""


class PersonalData(NamedTuple):
    sealed: int
    plain: int


async def personal_data_of(conn: Conn, person: int) -> PersonalData:
    """How many events hold a person's data sealed, and how many in plain text."""
    row = await conn.fetchrow(PERSONAL_DATA_OF, person, f'%{{"person": {person:d}, "sealed"%')
    assert row is not None  # an aggregate always has its row
    return PersonalData(sealed=row["sealed"], plain=row["plain"])
