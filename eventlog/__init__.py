"""The event log: the bottom layer. It keeps the stored events (their shapes in `events/`, one
codec for all of them), appends them with their streams' versions and the hash chain, reads
them back, seals and opens the personal values in them, checks itself for `verify`, exports
itself and notifies followers. It knows nothing of the read models or of HTTP: the inline
projections are handed to `append` by its caller.

This module is the log's API for reading, for the layers above. Appending is
`eventlog.appends`, which only the service's unit of work uses (`make lint`); `checks`,
`exports` and `notify` are used by their one reader each.
"""

from eventlog.errors import PartialDuplicate, WrongExpectedVersion
from eventlog.exports import ExportedEvent, export
from eventlog.mapper import Reading, keys_for
from eventlog.reads import (
    Change,
    NextBatch,
    changed_streams,
    first_at_or_after,
    head,
    last_at_or_before,
    last_position,
    last_position_of,
    lock_head,
    read_all,
    read_log,
    read_next,
    read_stream,
    stream_version,
    stream_versions,
    time_of,
    times_of_versions,
)

__all__ = [
    "Change",
    "ExportedEvent",
    "NextBatch",
    "PartialDuplicate",
    "Reading",
    "WrongExpectedVersion",
    "changed_streams",
    "export",
    "first_at_or_after",
    "head",
    "keys_for",
    "last_at_or_before",
    "last_position",
    "last_position_of",
    "lock_head",
    "read_all",
    "read_log",
    "read_next",
    "read_stream",
    "stream_version",
    "stream_versions",
    "time_of",
    "times_of_versions",
]
