"""What an earlier import from the same source wrote, read from the log itself (no read model:
the events' metadata holds it, `Metadata.origin`). A stream is the source's when an import
from it appended to the stream; it was changed here when a later event of the stream came from
anywhere else (a person, a token, another source). A stream whose every event is the first
start's (`source` bootstrap) is as a new install has it: pristine, the source may set it."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from eventlog import reads

if TYPE_CHECKING:
    from collections.abc import Collection
    from datetime import datetime

    from eventlog.connections import Conn


class Provenance(NamedTuple):
    imported: bool  # an import from this source appended to the stream
    changed_here: bool  # an event from elsewhere followed the last one from this source
    pristine: bool = False  # every event of the stream is the first start's (bootstrap)
    first_imported: datetime | None = None  # when an import from this source first wrote it


async def provenance(
    conn: Conn,
    stream_type: str,
    origin: str,
    keys: Collection[str] | None = None,
    *,
    changes: Collection[str] | None = None,
) -> dict[str, Provenance]:
    """Each stream of the type (or of these keys) that exists: whether this source wrote it and
    whether it was changed here since. A stream the answer lacks does not exist. `changes`:
    the event types that count as a change made here (None: every type), for streams that
    also hold what changes none of what an import writes (a person's sign-ins)."""
    found = await reads.stream_origins(
        conn,
        stream_type,
        origin,
        None if keys is None else sorted(keys),
        None if changes is None else sorted(changes),
    )
    return {
        key: Provenance(
            imported=o.marked_at is not None,
            changed_here=o.marked_at is not None
            and o.other_at is not None
            and o.other_at > o.marked_at,
            pristine=o.bootstrap_only,
            first_imported=o.first_marked,
        )
        for key, o in found.items()
    }


def may_overwrite(found: Provenance | None, *, prefer_source: bool) -> bool:
    """Whether the import may change an entity that exists here: one an earlier run brought
    from this source and nobody changed here since, one as the first start made it (pristine),
    or any with `--prefer-source`."""
    if prefer_source:
        return True
    return found is not None and (found.pristine or (found.imported and not found.changed_here))


# A built-in entity that has no stream yet (a constant of the service, as a new install has
# it): the source may set it, as one the first start made.
AS_INSTALLED = Provenance(imported=False, changed_here=False, pristine=True)
