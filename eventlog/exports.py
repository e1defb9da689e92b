"""The log as a file: every stored event with both hashes, each sealed value with its opened
value beside it (docs/privacy.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from eventlog import mapper
from eventlog.privacy import seal

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from eventlog.connections import Conn

EXPORT = """
SELECT position, stream_type, stream_key, stream_version, event_id::text AS event_id, type,
       schema_version, data::text AS data, metadata::text AS metadata, recorded_at,
       encode(prev_hash, 'hex') AS prev_hash, encode(hash, 'hex') AS hash
FROM events WHERE position > $1 ORDER BY position
"""


class ExportedEvent(msgspec.Struct, frozen=True):
    """An event as `export` writes it: the stored columns, `data` and `metadata` as stored."""

    position: int
    stream_type: str
    stream_key: str
    stream_version: int
    event_id: str
    type: str
    schema_version: int
    data: msgspec.Raw
    metadata: msgspec.Raw
    recorded_at: str
    prev_hash: str
    hash: str


async def export(conn: Conn, after: int = 0, prefetch: int = 2000) -> AsyncIterator[ExportedEvent]:
    """Events after a position, in order, with both hashes (inside the caller's transaction).
    Each sealed value also carries its `value`: the text, or `"[erased]"` (docs/privacy.md)."""
    keys = await mapper.all_keys(conn)
    async for row in conn.cursor(EXPORT, after, prefetch=prefetch):
        yield ExportedEvent(
            position=row["position"],
            stream_type=row["stream_type"],
            stream_key=row["stream_key"],
            stream_version=row["stream_version"],
            event_id=row["event_id"],
            type=row["type"],
            schema_version=row["schema_version"],
            data=_with_values(row["data"], keys),
            metadata=_with_values(row["metadata"], keys),
            recorded_at=row["recorded_at"].isoformat(),
            prev_hash=row["prev_hash"],
            hash=row["hash"],
        )


def _with_values(stored: str, keys: seal.Opener) -> msgspec.Raw:
    """PostgreSQL's text of the stored JSON, each sealed value given its opened `value`."""
    return msgspec.Raw(seal.with_values(stored, keys).encode())
