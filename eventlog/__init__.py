"""The event log: the bottom layer. It keeps the stored events (their shapes in `events/`, one
codec for all of them), appends them with their streams' versions and the hash chain, reads
them back, seals and opens the personal values in them, checks itself for `verify`, exports
itself and notifies followers. It knows nothing of the read models or of HTTP: the inline
projections are handed to `append` by its caller.

This module is the log's API for the layers above; `checks`, `exports` and `notify` are used by
their one reader each.
"""

from eventlog.appends import (
    ANY,
    NO_STREAM,
    Expected,
    InlineApply,
    NewStream,
    Pending,
    append,
    append_new,
    append_streams_call,
    commit,
    literal,
)
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
    time_of,
)

__all__ = [
    "ANY",
    "NO_STREAM",
    "Change",
    "Expected",
    "ExportedEvent",
    "InlineApply",
    "NewStream",
    "NextBatch",
    "PartialDuplicate",
    "Pending",
    "Reading",
    "WrongExpectedVersion",
    "append",
    "append_new",
    "append_streams_call",
    "changed_streams",
    "commit",
    "export",
    "first_at_or_after",
    "head",
    "keys_for",
    "last_at_or_before",
    "last_position",
    "last_position_of",
    "literal",
    "lock_head",
    "read_all",
    "read_log",
    "read_next",
    "read_stream",
    "stream_version",
    "time_of",
]
