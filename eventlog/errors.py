"""The log's own failures. The service maps them to the domain errors a client sees
(service/work.py for appends, the error middleware for an unavailable key store)."""

from __future__ import annotations


class LogError(Exception):
    """A failure of the event log's layer."""


class WrongExpectedVersion(LogError):
    """The stream moved on (or exists) since the caller read it."""


class PartialDuplicate(LogError):
    """Some event ids of an append are already stored (or being stored) with other events."""


class Unavailable(LogError):
    """The log cannot be read or written right now, though it may be soon (another replica,
    or this one once configured, can answer)."""


class ConfigError(Exception):
    """A setting or environment problem found at start-up; the CLI prints it and exits 2."""
